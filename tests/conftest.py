"""Shared fixtures: Alice owns the office, Bob is a member, Charlie is an outsider.

With DATABASE_URL / REDIS_URL set, tests that need those services must fail
rather than skip: `requires_redis` only skips when REDIS_URL is unset.
"""

import os

import pytest
import pytest_asyncio
from django.contrib.auth.models import User

from coworkers.models import Coworker
from office.models import Channel, Membership, Office

requires_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="REDIS_URL is not set")
requires_postgres = pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL is not set")


@pytest.fixture
def office(db) -> Office:
    return Office.objects.create(name="Acme", slug="acme")


@pytest.fixture
def other_office(db) -> Office:
    return Office.objects.create(name="Globex", slug="globex")


@pytest.fixture
def alice(office) -> User:
    user = User.objects.create_user("alice", password="alice-password")
    Membership.objects.create(office=office, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def bob(office) -> User:
    user = User.objects.create_user("bob", password="bob-password")
    Membership.objects.create(office=office, user=user, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def charlie(other_office) -> User:
    """An outsider: a member of another office only."""
    user = User.objects.create_user("charlie", password="charlie-password")
    Membership.objects.create(office=other_office, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def mina(office) -> Coworker:
    return Coworker.objects.create(
        office=office,
        name="Mina",
        slug="mina",
        role="Marketing lead",
        persona="You are Mina, the marketing lead.",
        skills=["copywriting", "campaigns"],
    )


@pytest.fixture
def theo(office) -> Coworker:
    return Coworker.objects.create(
        office=office,
        name="Theo",
        slug="theo",
        role="Engineer",
        persona="You are Theo, the engineer.",
        skills=["python", "infrastructure"],
    )


@pytest.fixture
def direct_channel(office, mina) -> Channel:
    return Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name="Mina", coworker=mina)


@pytest.fixture
def main_channel(office) -> Channel:
    return Channel.objects.create(office=office, kind=Channel.Kind.MAIN, name="main")


@pytest.fixture
def outsider_channel(other_office) -> Channel:
    return Channel.objects.create(office=other_office, kind=Channel.Kind.MAIN, name="globex-main")


@pytest.fixture(autouse=True)
def no_job_outlives_its_test():
    """In-process jobs a test started finish before the next test begins (they write to the database)."""
    yield
    from office import background

    assert background.drain(timeout=60), "a background job was still running a minute after its test"


@pytest.fixture(autouse=True)
def full_handshake_bursts():
    """Each process counts a person's websocket handshakes (office.socket_limit), frames and
    resyncs (office.consumers); SQLite gives the next test's people the ids of the last one's."""
    from office import consumers, socket_limit

    socket_limit.forget_handshakes()
    consumers.person_frames.clear()
    consumers.person_resyncs.clear()
    yield


@pytest.fixture(autouse=True)
def no_vectors_from_another_test():
    """Each process keeps the vectors of the channels it searched (sessions.vectors); a test's
    database is new, and SQLite gives a rolled-back test's ids to the next one."""
    from sessions import vectors

    vectors.forget_cached_vectors()
    yield


@pytest.fixture
def frames(monkeypatch) -> list[dict]:
    """Every frame sent to channel watchers, in order; sent at once (a test has no commit to wait for)."""
    from office import events

    sent: list[dict] = []
    monkeypatch.setattr(events, "send_now", lambda channel_id, frame: sent.append(frame))
    monkeypatch.setattr(events, "send_event", lambda channel_id, event_type, **payload: sent.append({"type": event_type, **payload}))
    return sent


@pytest.fixture
def no_background(monkeypatch) -> list[int]:
    """Background jobs are recorded, not run: each test runs the work it means to test."""
    queued: list[int] = []
    monkeypatch.setattr("sessions.tasks.run_task.enqueue", queued.append)
    monkeypatch.setattr("sessions.tasks.extract_task_memory.enqueue", lambda task_id: None)
    monkeypatch.setattr("sessions.tasks.fold_session.enqueue", lambda *args: None)
    return queued


# Websockets on the full ASGI app ------------------------------------------------------------------
# Opt in per module: pytestmark = pytest.mark.usefixtures("offline", "fresh_channel_layer").

# A browser sends its page's origin; office/origin.py refuses a socket without one.
ORIGIN = (b"origin", b"http://127.0.0.1:8000")
HOST = (b"host", b"127.0.0.1:8000")


@pytest.fixture
def offline(monkeypatch, settings):
    """The offline responder routes and answers: no test reaches a real model. (And a fast password
    hasher: these tests create their people anew each time, with real commits, and sign them in.)"""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def fresh_channel_layer():
    """A channel layer per test: each test has its own event loop, and channels_redis binds its
    receive lock to the loop that first used it."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def cookie():
    """The session cookie value of a signed-in user."""
    from django.test import Client

    def cookie_for(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    return cookie_for


@pytest_asyncio.fixture
async def open_websocket():
    """Opens communicators on the full ASGI app (with a browser's Origin unless told otherwise) and
    always disconnects every one of them."""
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.db import connections

    from office.asgi import application

    opened = []

    def open_socket(path: str, *, session_key: str | None = None, origin=ORIGIN, headers=()) -> WebsocketCommunicator:
        sent = [origin] if origin else []
        if not any(name == b"host" for name, _ in headers):
            sent.append(HOST)  # the host and port the browser asked for, as a browser sends it
        if session_key:
            sent.append((b"cookie", f"sessionid={session_key}".encode()))
        communicator = WebsocketCommunicator(application, path, headers=[*sent, *headers])
        opened.append(communicator)
        return communicator

    yield open_socket
    for communicator in opened:
        await communicator.disconnect()
    # The consumers' shared database thread outlives the test; its connection must not.
    await database_sync_to_async(connections.close_all)()


# Timing-based failures would make the suite flaky on a busy 2-core machine.
from hypothesis import settings as hypothesis_settings  # noqa: E402

hypothesis_settings.register_profile("default", deadline=None)
hypothesis_settings.load_profile("default")
