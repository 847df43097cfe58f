"""Fixtures for the security tests: Acme's things (Bob's office) and Charlie's channel at Globex, a
snapshot of everything a request could change, sockets on the full ASGI app (with an Origin, as a
browser sends), a fresh rate-limit count per test, and a check that a page holds nothing that runs."""

from __future__ import annotations

import uuid
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from office import documents
from tests.conftest import ORIGIN
from office.models import ChannelEvent, Document
from sessions import nudge, services
from sessions.models import MemoryEvent, MemoryItem, Message, Session, Task

# An id that nothing has.
MISSING = 987_654


@pytest.fixture
def acme(office, bob, mina, direct_channel):
    """Acme's things: an ended conversation, an active one with a task and its report, a memory item, a document."""
    first = services.get_active_session(channel=direct_channel)
    services.start_task(session=first, instruction="Acme's old secret instruction")
    nudge.start_new_conversation(channel=direct_channel)
    ended = Session.objects.get(pk=first.pk)
    active = services.get_active_session(channel=direct_channel)
    task, _ = services.start_task(session=active, instruction="Acme's secret instruction")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, prompt_report={"layers": {}, "total_chars": 10})
    item = MemoryItem.objects.create(office=office, text="Acme's trial is 14 days.", kind="company")
    document = documents.write_document(office_id=office.pk, title="Acme launch plan", content="May 4", author="mina").document
    return {"channel": direct_channel, "ended": ended, "active": active, "task": task, "item": item, "document": document}


@pytest.fixture
def globex_channel(charlie, outsider_channel):
    """Charlie's own channel, with a conversation, so he has real ids of his own to combine with Acme's."""
    services.start_task(session=services.get_active_session(channel=outsider_channel), instruction="Globex work")
    return outsider_channel


def snapshot() -> dict:
    """Everything an outsider's request could have changed."""
    return {
        "items": list(MemoryItem.objects.order_by("pk").values_list("pk", "text", "kind", "pinned", "active")),
        "memory_events": MemoryEvent.objects.count(),
        "sessions": list(Session.objects.order_by("pk").values_list("pk", "status")),
        "tasks": list(Task.objects.order_by("pk").values_list("pk", "status")),
        "messages": Message.objects.count(),
        "events": ChannelEvent.objects.count(),
        "documents": list(Document.objects.order_by("pk").values_list("pk", "title")),
    }


@pytest.fixture(autouse=True)
def fresh_rate_limits(settings):
    """Counts start at zero in every test: the cache outlives a test (Redis outlives the process),
    and a new test database hands out the same user ids again. A key prefix of its own, not a flush:
    Redis also holds the channel layer's and Celery's keys."""
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}}


@pytest.fixture(autouse=True)
def no_real_model(offline):
    """The offline responder (tests/conftest.py): no test here reaches a real model."""


@pytest.fixture
def sockets(open_websocket, fresh_channel_layer):
    """A socket at any path, with a session cookie and an Origin (a browser's, unless told otherwise)."""

    def open_socket(path: str, session_key: str | None = None, origin=ORIGIN) -> WebsocketCommunicator:
        return open_websocket(path, session_key=session_key, origin=origin)

    return open_socket


@pytest.fixture
def enter(sockets, cookie):
    """Connect to a channel as a member and read the session frame."""

    async def enter_as(user, channel) -> WebsocketCommunicator:
        communicator = sockets(f"/ws/channels/{channel.pk}/", await sync_to_async(cookie)(user))
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "session"
        return communicator

    return enter_as


async def receive_until(communicator: WebsocketCommunicator, frame_type: str, timeout: float = 5) -> list[dict]:
    """Frames up to and including the first of `frame_type`."""
    got = []
    while True:
        got.append(await communicator.receive_json_from(timeout=timeout))
        if got[-1]["type"] == frame_type:
            return got


class Live(HTMLParser):
    """Collects markup that could run script: an inline script that is not JSON data, any event handler
    attribute, a script scheme in a link or a source, script code carrying a payload's `alert(`."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "script":
            # JSON data (json_script) is never run; its `<` are escaped, so it cannot end early.
            self.in_script = attrs.get("type") != "application/json"
            if not attrs.get("src") and attrs.get("type") != "application/json":
                self.found.append(f"inline <script {attrs}>")
        for name, value in attrs.items():
            value = (value or "").strip().lower()
            # Any other attribute's value is text (title, aria-label): it cannot run.
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}={value}>")
            if name in {"href", "src", "action", "formaction", "xlink:href"} and value.startswith(("javascript:", "vbscript:", "data:text")):
                self.found.append(f"<{tag} {name}={value}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_script = False

    def handle_data(self, data: str) -> None:
        if self.in_script and "alert(" in data:
            self.found.append(f"script data {data[:80]!r}")


def assert_inert(html: str) -> None:
    """Nothing in the page runs script; checked on the parsed page and on the raw text."""
    parser = Live()
    parser.feed(html)
    assert parser.found == [], parser.found
    lowered = html.lower()
    for tag in ("<script>alert", "<img src=x", "<svg onload"):
        assert tag not in lowered, tag
