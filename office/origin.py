"""Which pages may open the office's websockets: its own.

Channels' AllowedHostsOriginValidator compares only the Origin's host name with ALLOWED_HOSTS,
so a page served from another port of the same host (any other app on that machine) could
open a socket with the person's cookie. Here the Origin must name exactly the host and port
the browser asked for (the Host header, itself one of ALLOWED_HOSTS), or be one of
CSRF_TRUSTED_ORIGINS (a proxy that rewrites Host); a socket without an Origin is refused.
The scheme is not compared: behind a TLS proxy the socket's own scheme may not be the page's,
and one port serves one scheme.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": "80", "https": "443"}


def header(scope: dict, name: bytes) -> str:
    """A handshake header's value ("" when absent); `name` in lower case."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _netloc(scheme: str, netloc: str) -> str:
    """host:port, the port spelled out (a default port may be left out of either header)."""
    host, port = split_domain_port(netloc.lower())
    if not host:
        raise ValueError(f"no host name in {netloc!r}")
    return f"{host}:{port or DEFAULT_PORTS.get(scheme, '')}"


def same_origin(origin: str | None, host: str | None) -> bool:
    """Whether a socket whose handshake says this Origin and Host comes from the office's own pages."""
    if not origin:
        return False
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        return False  # "null" (a sandboxed frame, a file) and anything else that is not a web page
    trusted = {value.rstrip("/").lower() for value in settings.CSRF_TRUSTED_ORIGINS}
    if f"{parts.scheme}://{parts.netloc}".lower() in trusted:
        return True
    if not host or not validate_host(split_domain_port(host.lower())[0], settings.ALLOWED_HOSTS):
        return False
    try:
        return _netloc(parts.scheme, parts.netloc) == _netloc(parts.scheme, host)
    except ValueError:
        return False


class SameOriginValidator:
    """ASGI middleware for websockets: refuses the handshake unless same_origin holds."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        if same_origin(header(scope, b"origin"), header(scope, b"host")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
