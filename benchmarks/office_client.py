"""A client of a running office, as a browser tab is: it signs in over HTTP and talks the
channel websocket protocol (README, "Websockets"). Used by the load tool and the fault tests.

Standard library for HTTP (the sign-in is two requests), `websockets` for the socket.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import websockets

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class SignInFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Credentials:
    """What a signed-in browser holds: the session cookie, plus the origin its pages come from."""

    base_url: str
    session_cookie: str

    @property
    def origin(self) -> str:
        parts = urllib.parse.urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    def websocket_url(self, channel_id: int) -> str:
        parts = urllib.parse.urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return f"{scheme}://{parts.netloc}/ws/channels/{channel_id}/"


def sign_in(base_url: str, username: str, password: str, *, timeout: float = 10.0) -> Credentials:
    """Sign in through the login form, as a person would (CSRF token included)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login_url = urllib.parse.urljoin(base_url, "/accounts/login/")
    page = opener.open(login_url, timeout=timeout).read().decode()
    token = CSRF_INPUT.search(page)
    if token is None:
        raise SignInFailed(f"no sign-in form at {login_url}")
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)})
    request = urllib.request.Request(
        login_url, data=form.encode(), headers={"Referer": login_url, "Origin": base_url.rstrip("/")}
    )
    opener.open(request, timeout=timeout).read()
    cookie = next((c.value for c in jar if c.name == "sessionid"), None)
    if cookie is None:
        raise SignInFailed(f"{username!r} could not sign in at {login_url}")
    return Credentials(base_url=base_url, session_cookie=cookie)


class ChannelSocket:
    """One open channel websocket. `frames` collects everything received, in order."""

    def __init__(self, credentials: Credentials, channel_id: int) -> None:
        self.credentials, self.channel_id = credentials, channel_id
        self.frames: list[dict[str, Any]] = []
        self._connection: Any = None
        self._arrived = asyncio.Condition()
        self._reader: asyncio.Task | None = None

    async def open(self, *, timeout: float = 10.0) -> dict[str, Any]:
        """Connect and return the `session` frame the server sends first."""
        self._connection = await asyncio.wait_for(
            websockets.connect(
                self.credentials.websocket_url(self.channel_id),
                origin=self.credentials.origin,
                additional_headers={"Cookie": f"sessionid={self.credentials.session_cookie}"},
                max_size=None,
            ),
            timeout,
        )
        self._reader = asyncio.create_task(self._read())
        return await self.wait_for(lambda frame: frame["type"] == "session", timeout=timeout)

    async def send(self, frame: dict[str, Any]) -> None:
        await self._connection.send(json.dumps(frame))

    async def wait_for(self, matches, *, timeout: float, start: int = 0) -> dict[str, Any]:
        """The first frame from index `start` on that `matches`; TimeoutError if none comes in time."""

        def found() -> dict[str, Any] | None:
            return next((frame for frame in self.frames[start:] if matches(frame)), None)

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(lambda: found() is not None or self.closed), timeout)
        frame = found()
        if frame is None:
            raise ConnectionError(f"the socket to channel {self.channel_id} closed")
        return frame

    @property
    def closed(self) -> bool:
        return self._reader is not None and self._reader.done()

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        try:
            async for text in self._connection:
                async with self._arrived:
                    self.frames.append(json.loads(text))
                    self._arrived.notify_all()
        except websockets.ConnectionClosed:
            pass
        finally:
            async with self._arrived:
                self._arrived.notify_all()
