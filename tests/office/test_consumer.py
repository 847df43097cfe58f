"""The channel websocket on the full ASGI app: who may connect, every frame of the protocol, every
error (the socket stays open), idempotent resends, resync after a dropped connection, stopping a task,
a new conversation, the long-conversation nudge (once, also under races) and inert HTML."""

from __future__ import annotations

import asyncio
import json
import threading
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connections

from coworkers.providers.scripted import Reply, ScriptedProvider
from office import background, events
from office.asgi import application
from office.models import ChannelEvent
from sessions import nudge, pipeline, posting, services
from sessions.models import ContextPolicy, Message, Session, SummaryVersion, Task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]
XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))")


@pytest.fixture
def nudge_checks(no_background, monkeypatch) -> list[tuple]:
    """Replies are not run; nudge checks are recorded (a test runs the one it means to)."""
    checks: list[tuple] = []
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: checks.append(args))
    return checks


@pytest.fixture
def sockets(open_websocket):
    """A channel's socket, as a signed-in tab in a given language would open it."""

    def open_socket(channel_id: int, session_key: str | None = None, language: str | None = None) -> WebsocketCommunicator:
        headers = [(b"accept-language", language.encode())] if language else []
        return open_websocket(f"/ws/channels/{channel_id}/", session_key=session_key, headers=headers)

    return open_socket


@pytest.fixture
def enter(sockets, cookie):
    """Connect as a member and read the session frame."""

    async def enter_as(user, channel, language: str | None = None) -> tuple[WebsocketCommunicator, dict]:
        communicator = sockets(channel.pk, await sync_to_async(cookie)(user), language)
        connected, _ = await communicator.connect()
        assert connected
        frame = await communicator.receive_json_from(timeout=5)
        assert frame["type"] == "session"
        return communicator, frame

    return enter_as


def page_html(user, url: str) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


async def receive_until(communicator: WebsocketCommunicator, frame_type: str, timeout: float = 5) -> list[dict]:
    """Frames up to and including the first of `frame_type`."""
    got = []
    while True:
        frame = await communicator.receive_json_from(timeout=timeout)
        got.append(frame)
        if frame["type"] == frame_type:
            return got


async def settle(communicator: WebsocketCommunicator) -> list[dict]:
    """Wait until the consumer has handled every frame sent before (the client's frames are handled
    one at a time: the answer to an unknown type comes after them) and no more events come in.
    Returns the frames received meanwhile, without that answer."""
    await communicator.send_json_to({"type": "ping"})
    got = await receive_until(communicator, "error")
    assert got[-1]["code"] == "unknown_type"
    got.pop()
    # Group events already queued are interleaved with the client's frames, not ahead of them.
    while not await communicator.receive_nothing(timeout=0.2):
        got.append(await communicator.receive_json_from(timeout=5))
    return got


def drain_background() -> None:
    """Wait for every job already in the in-process pools (and the jobs they start)."""
    assert background.drain(timeout=30)


def run_in_thread(func, *args, **kwargs):
    """For sync_to_async(thread_sensitive=False): a pool thread must not keep its connection."""
    try:
        return func(*args, **kwargs)
    finally:
        connections.close_all()


def add_tasks(channel, count: int) -> Session:
    session = services.get_active_session(channel=channel)
    for n in range(count):
        services.start_task(session=session, instruction=f"Earlier instruction {n + 1}")
    return session


def nudge_after(channel, tasks: int) -> None:
    ContextPolicy.objects.create(channel=channel, nudge_after_tasks=tasks)


def stored(channel_id: int, **filters) -> list[dict]:
    return [
        {"type": e.type, **e.payload, "seq": e.seq}
        for e in ChannelEvent.objects.filter(channel_id=channel_id, **filters).order_by("seq")
    ]


class Inert(HTMLParser):
    """Collects anything in a piece of HTML that could run script or load something."""

    def __init__(self) -> None:
        super().__init__()
        self.dangers: list[str] = []
        self.links: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in {"script", "img", "iframe", "object", "embed", "svg", "style", "link", "meta"}:
            self.dangers.append(tag)
        for name, value in attrs.items():
            if name.startswith("on") or name in {"src", "style", "srcdoc"}:
                self.dangers.append(f"{tag}[{name}]")
            if name == "href" and not (value or "").startswith(("http://", "https://", "mailto:")):
                self.dangers.append(f"{tag}[href={value}]")
        if tag == "a":
            self.links.append(attrs)


def assert_inert(html: str) -> None:
    parser = Inert()
    parser.feed(html)
    assert parser.dangers == [], html
    for link in parser.links:
        assert link.get("rel") == "noopener noreferrer" and link.get("target") == "_blank", html


# Who may connect ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_member_gets_the_session_frame_on_connect(bob, direct_channel, enter, nudge_checks):
    session = await database_sync_to_async(add_tasks)(direct_channel, 1)
    await database_sync_to_async(lambda: events.send_event(direct_channel.pk, "task", id=1, status="queued"))()

    _, frame = await enter(bob, direct_channel)

    assert set(frame) == {"type", "session", "messages", "seq"}
    assert frame["session"] == {"id": session.pk, "tasks": 1, "started_at": session.started_at.isoformat(), "nudged": False, "carried_note_html": ""}
    assert frame["seq"] == 1
    (shown,) = frame["messages"]
    assert set(shown) == {"message", "html", "seq"}
    assert shown["message"]["content"] == "Earlier instruction 1" and shown["message"]["role"] == "user"
    assert shown["html"] == "<p>Earlier instruction 1</p>" and shown["seq"] is None


@pytest.mark.asyncio
async def test_a_first_visit_opens_the_first_session(alice, direct_channel, enter, nudge_checks):
    _, frame = await enter(alice, direct_channel)

    assert frame["session"]["tasks"] == 0 and frame["messages"] == [] and frame["seq"] == 0
    assert await Session.objects.filter(channel=direct_channel, status="active").acount() == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("who", ["outsider", "anonymous", "no such channel"])
async def test_it_refuses_anyone_but_a_member_the_same_way(who, bob, charlie, direct_channel, sockets, cookie):
    if who == "outsider":
        communicator = sockets(direct_channel.pk, await sync_to_async(cookie)(charlie))
    elif who == "anonymous":
        communicator = sockets(direct_channel.pk)
    else:
        communicator = sockets(direct_channel.pk + 1000, await sync_to_async(cookie)(bob))

    assert await communicator.connect() == (False, 4403)


@pytest.mark.asyncio
async def test_it_refuses_a_socket_without_an_origin(bob, direct_channel, cookie):
    communicator = WebsocketCommunicator(
        application, f"/ws/channels/{direct_channel.pk}/", headers=[(b"cookie", f"sessionid={await sync_to_async(cookie)(bob)}".encode())]
    )
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    assert not connected


@pytest.mark.asyncio
async def test_one_person_holds_at_most_sockets_per_person_and_others_are_not_held_back(
    alice, bob, direct_channel, enter, sockets, cookie, nudge_checks, settings
):
    settings.SOCKETS_PER_PERSON = 3
    held = [(await enter(bob, direct_channel))[0] for _ in range(3)]
    bobs_key = await sync_to_async(cookie)(bob)

    one_more = sockets(direct_channel.pk, bobs_key)
    assert not (await one_more.connect())[0]
    # Another person is not counted with Bob, and Bob's open sockets still work.
    await enter(alice, direct_channel)
    await held[0].send_json_to({"type": "no such frame"})
    assert (await held[0].receive_json_from(timeout=5))["type"] == "error"

    # A closed socket frees its place.
    await held.pop().disconnect()
    again = sockets(direct_channel.pk, bobs_key)
    assert (await again.connect())[0]


@pytest.mark.asyncio
async def test_one_person_connecting_in_a_storm_is_refused_past_a_burst_and_others_are_not(
    alice, bob, direct_channel, enter, sockets, cookie, nudge_checks, monkeypatch
):
    from office import socket_limit
    from office.ratelimit import PeopleBuckets

    monkeypatch.setattr(socket_limit, "_opens", PeopleBuckets(4, 60.0))  # a burst of 4, no refill meanwhile
    for _ in range(4):
        socket, _ = await enter(bob, direct_channel)
        await socket.disconnect()  # connect and close, again and again

    storm = sockets(direct_channel.pk, await sync_to_async(cookie)(bob))
    assert not (await storm.connect())[0], "the fifth handshake of the burst is refused"
    await enter(alice, direct_channel)  # someone else connects as usual


@pytest.mark.asyncio
async def test_frames_carry_chinese_as_utf_8_not_as_six_byte_escapes(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "instruction", "text": "預算是多少？", "client_id": "zh-1"})

    raw = await socket.receive_from(timeout=5)
    assert "預算是多少" in raw and "\\u9810" not in raw, "half the bytes: a long Chinese snapshot stays under 1 MiB"


@pytest.mark.asyncio
async def test_a_member_removed_while_connected_is_cut_off_at_the_next_frame(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    await bob.memberships.all().adelete()

    await socket.send_json_to({"type": "instruction", "text": "Still here?"})

    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert await Task.objects.acount() == 0


# Instructions -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_instruction_comes_back_as_message_then_task_with_increasing_seqs(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "instruction", "text": "Draft the **launch** email", "client_id": "c-1"})
    message, task = await socket.receive_json_from(timeout=5), await socket.receive_json_from(timeout=5)

    assert set(message) == {"type", "message", "html", "seq"}
    assert message["message"]["content"] == "Draft the **launch** email" and message["message"]["role"] == "user"
    assert message["html"] == "<p>Draft the <strong>launch</strong> email</p>"
    assert task == {
        "type": "task", "id": task["id"], "turn": 1, "status": "queued", "error": "", "coworker": "mina", "seq": message["seq"] + 1
    }
    assert message["seq"] == 1
    # The nudge is checked in the background, in the language of the browser.
    session_id = (await Task.objects.aget(pk=task["id"])).session_id
    assert nudge_checks == [(session_id, "instruction", "en")]


@pytest.mark.asyncio
async def test_the_sender_is_acknowledged_from_the_store_without_waiting_for_the_group(bob, direct_channel, enter, nudge_checks):
    sender, _ = await enter(bob, direct_channel)
    other_tab, _ = await enter(bob, direct_channel)
    # The group is slow or lost this once: nothing reaches any tab through it.
    layer = get_channel_layer()
    real_group_send = layer.group_send

    async def lost(group, message):
        return None

    layer.group_send = lost
    try:
        await sender.send_json_to({"type": "instruction", "text": "Draft the launch email", "client_id": "c-1"})
        message, task = await sender.receive_json_from(timeout=5), await sender.receive_json_from(timeout=5)
    finally:
        layer.group_send = real_group_send

    assert message["message"]["content"] == "Draft the launch email" and task["status"] == "queued"
    # The tab confirms its pending bubble by this, not by the words (another member's "yes" is not mine).
    assert message["message"]["client_id"] == "c-1"
    assert await other_tab.receive_nothing(timeout=0.3), "other tabs hear it from the group only"
    # When the group's copies do arrive, the sender does not show them twice.
    for frame in (message, task):
        await layer.group_send(events.channel_group(direct_channel.pk), {"type": events.LAYER_TYPE, "event": frame})
    assert [(await other_tab.receive_json_from(timeout=5))["seq"] for _ in range(2)] == [message["seq"], task["seq"]]
    assert await sender.receive_nothing(timeout=0.3)


@pytest.mark.asyncio
async def test_a_resend_with_the_same_client_id_creates_nothing(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    await socket.send_json_to({"type": "instruction", "text": "Draft the launch email", "client_id": "c-1"})
    await receive_until(socket, "task")

    await socket.send_json_to({"type": "instruction", "text": "Draft the launch email", "client_id": "c-1"})

    assert await settle(socket) == []
    assert await Task.objects.acount() == 1
    assert await Message.objects.acount() == 1
    assert await ChannelEvent.objects.acount() == 2


@pytest.mark.asyncio
async def test_a_resend_from_another_tab_after_a_reconnect_creates_nothing(bob, direct_channel, enter, nudge_checks):
    first, _ = await enter(bob, direct_channel)
    second, _ = await enter(bob, direct_channel)
    frame = {"type": "instruction", "text": "Draft the launch email", "client_id": "same-id"}

    await asyncio.gather(first.send_json_to(frame), second.send_json_to(frame))
    await settle(first)
    await settle(second)

    assert await Task.objects.acount() == 1
    assert [e["type"] for e in await database_sync_to_async(stored)(direct_channel.pk)] == ["message", "task"]


# Errors: a code each, and the socket stays open ---------------------------------------------------------


@pytest.mark.asyncio
async def test_every_bad_frame_gets_an_error_and_the_socket_stays_open(bob, direct_channel, outsider_channel, enter, nudge_checks):
    other_task = await database_sync_to_async(
        lambda: services.start_task(session=services.get_active_session(channel=outsider_channel), instruction="Theirs")[0]
    )()
    socket, _ = await enter(bob, direct_channel)
    cases = [
        ("not json at all", "bad_json"),
        ('{"type": "instruction", "text": ', "bad_json"),
        ("[" * 100_000, "bad_json"),
        ('["instruction"]', "bad_frame"),
        ('"instruction"', "bad_frame"),
        ('{"text": "no type"}', "bad_frame"),
        ('{"type": 5}', "bad_frame"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"type": "instruction"}', "bad_frame"),
        ('{"type": "instruction", "text": 42}', "bad_frame"),
        ('{"type": "instruction", "text": "hi", "client_id": 7}', "invalid"),
        (json.dumps({"type": "instruction", "text": "hi", "client_id": "x" * 65}), "invalid"),
        ('{"type": "instruction", "text": ""}', "empty"),
        ('{"type": "instruction", "text": "   \\n  "}', "empty"),
        (json.dumps({"type": "instruction", "text": "x" * 20_001}), "too_long"),
        (json.dumps({"type": "instruction", "text": "x" * 300_000}), "too_long"),
        ('{"type": "task.stop"}', "bad_frame"),
        ('{"type": "task.stop", "task": "1"}', "bad_frame"),
        ('{"type": "task.stop", "task": true}', "bad_frame"),
        (json.dumps({"type": "task.stop", "task": other_task.pk}), "not_found"),
        ('{"type": "task.stop", "task": 999999}', "not_found"),
        ('{"type": "resync"}', "bad_frame"),
        ('{"type": "resync", "after": -1}', "bad_frame"),
        ('{"type": "resync", "after": 1.5}', "bad_frame"),
    ]
    for text, code in cases:
        await socket.send_to(text_data=text)
        frame = await socket.receive_json_from(timeout=5)
        assert frame["type"] == "error" and frame["code"] == code, (text[:60], frame)
        assert set(frame) == {"type", "code", "detail"} and frame["detail"]

    await socket.send_to(bytes_data=b"\x00\x01")
    assert (await socket.receive_json_from(timeout=5))["code"] == "bad_json"

    # An instruction's refusal names the instruction, so the page gives back the one refused.
    await socket.send_json_to({"type": "instruction", "text": "x" * 20_001, "client_id": "c-long"})
    frame = await socket.receive_json_from(timeout=5)
    assert (frame["code"], frame["client_id"]) == ("too_long", "c-long")

    # Still open, still working: an instruction of exactly the limit is accepted.
    await socket.send_json_to({"type": "instruction", "text": "y" * 20_000})
    assert [f["type"] for f in await receive_until(socket, "task")] == ["message", "task"]
    assert await Task.objects.filter(session__channel=direct_channel).acount() == 1
    assert (await Task.objects.aget(pk=other_task.pk)).status == "queued", "another channel's task is untouched"


# Resync ------------------------------------------------------------------------------------------------


def post(channel, text: str) -> Task:
    return posting.post_instruction(channel=channel, text=text)


@pytest.mark.asyncio
async def test_resync_after_a_dropped_connection_replays_exactly_what_was_missed(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    await socket.send_json_to({"type": "instruction", "text": "First"})
    seen = await receive_until(socket, "task")
    last_seen = seen[-1]["seq"]
    await socket.disconnect()

    # While the tab is away: two more instructions (from another tab) and a task stopped.
    await database_sync_to_async(post)(direct_channel, "Second")
    third = await database_sync_to_async(post)(direct_channel, "Third with <script>alert(1)</script>")
    await database_sync_to_async(pipeline.request_stop)(third)

    again, frame = await enter(bob, direct_channel)
    assert frame["seq"] == 7
    await again.send_json_to({"type": "resync", "after": last_seen})
    replayed = [await again.receive_json_from(timeout=5) for _ in range(5)]

    assert replayed == await database_sync_to_async(stored)(direct_channel.pk, seq__gt=last_seen)
    assert [f["seq"] for f in replayed] == [3, 4, 5, 6, 7]
    assert [f["type"] for f in replayed] == ["message", "task", "message", "task", "task"]
    assert replayed[-1]["status"] == "stopped"
    assert "&lt;script&gt;" in replayed[2]["html"]
    assert await again.receive_nothing(timeout=0.3)

    await again.send_json_to({"type": "resync", "after": 7})
    assert await settle(again) == [], "nothing after the newest"


def send_task_event(channel_id: int, task_id: int) -> int:
    return events.send_event(channel_id, "task", id=task_id, status="queued")


async def send_held_back(monkeypatch, channel_id: int, task_id: int) -> tuple[int, dict]:
    """Store and commit an event whose live copy is held back (as if its thread had not sent it yet)."""
    held: list[tuple[int, dict]] = []
    with monkeypatch.context() as patch:
        patch.setattr(events, "send_now", lambda channel_id, frame: held.append((channel_id, frame)))
        await database_sync_to_async(send_task_event)(channel_id, task_id)
    return held[0]


@pytest.mark.asyncio
async def test_a_replayed_event_is_not_forwarded_again_when_its_live_copy_arrives(bob, direct_channel, enter, nudge_checks, monkeypatch):
    socket, _ = await enter(bob, direct_channel)
    late = await send_held_back(monkeypatch, direct_channel.pk, 1)
    await socket.send_json_to({"type": "resync", "after": 0})
    assert (await socket.receive_json_from(timeout=5))["seq"] == 1

    await database_sync_to_async(events.send_now)(*late)

    assert await settle(socket) == []


@pytest.mark.asyncio
async def test_events_arriving_out_of_order_are_forwarded_in_order_once(bob, direct_channel, enter, nudge_checks, monkeypatch):
    socket, _ = await enter(bob, direct_channel)
    late = await send_held_back(monkeypatch, direct_channel.pk, 1)

    await database_sync_to_async(send_task_event)(direct_channel.pk, 2)
    first, second = await socket.receive_json_from(timeout=5), await socket.receive_json_from(timeout=5)
    await database_sync_to_async(events.send_now)(*late)

    assert [(first["seq"], first["id"]), (second["seq"], second["id"])] == [(1, 1), (2, 2)]
    assert await settle(socket) == [], "the late copy of seq 1 is not sent again"


# Stop, new conversation, dismiss ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_task_stop_stops_a_task_of_this_channel(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    await socket.send_json_to({"type": "instruction", "text": "Write a long essay"})
    task = (await receive_until(socket, "task"))[-1]

    await socket.send_json_to({"type": "task.stop", "task": task["id"]})
    stopped = await socket.receive_json_from(timeout=5)

    assert stopped == {**task, "status": "stopped", "seq": task["seq"] + 1}
    assert (await Task.objects.aget(pk=task["id"])).status == "stopped"


@pytest.mark.asyncio
async def test_in_a_shared_channel_only_the_person_who_asked_can_stop_the_reply(bob, alice, direct_channel, enter, nudge_checks):
    mine, _ = await enter(bob, direct_channel)
    theirs, _ = await enter(alice, direct_channel)
    await mine.send_json_to({"type": "instruction", "text": "Write a long essay"})
    task = (await receive_until(mine, "task"))[-1]
    await receive_until(theirs, "task")

    await theirs.send_json_to({"type": "task.stop", "task": task["id"]})
    refused = await theirs.receive_json_from(timeout=5)

    assert refused["type"] == "error" and refused["code"] == "not_yours"
    assert (await Task.objects.aget(pk=task["id"])).status == "queued", "still coming"


@pytest.mark.asyncio
async def test_session_new_switches_every_tab_to_a_new_session_with_a_carried_note(bob, alice, direct_channel, enter, nudge_checks):
    old = await database_sync_to_async(add_tasks)(direct_channel, 2)
    summary = "Decisions:\n" + "\n".join(f"- Decision {n}: we chose option {n} because it was cheaper." for n in range(40))
    await SummaryVersion.objects.acreate(session=old, text=summary, from_turn=1, through_turn=2, model="offline")
    mine, _ = await enter(bob, direct_channel)
    other_tab, _ = await enter(alice, direct_channel)

    await mine.send_json_to({"type": "session.new"})
    frames = [await mine.receive_json_from(timeout=5), await other_tab.receive_json_from(timeout=5)]

    new = await Session.objects.aget(channel=direct_channel, status="active")
    for frame in frames:
        shown = frame["session"].pop("carried_note_html")
        assert frame == {
            "type": "session",
            "session": {"id": new.pk, "tasks": 0, "started_at": new.started_at.isoformat(), "nudged": False},
            "messages": [],
            "seq": 1,
        }
        # The page shows what was carried over, at the top of the new conversation.
        assert shown.startswith("<p>Decisions:</p>\n<ul>\n<li>Decision 0: we chose option 0")
    assert (await Session.objects.aget(pk=old.pk)).status == "ended"
    assert summary.startswith(new.carried_note.removesuffix(" …"))
    assert 300 < len(new.carried_note) <= nudge.CARRIED_NOTE_CHARS + 2

    # A later connection sees the new, empty session, and so does the page, with its note.
    _, frame = await enter(bob, direct_channel)
    assert frame["session"]["id"] == new.pk and frame["messages"] == []
    page = await sync_to_async(page_html)(bob, f"/c/{direct_channel.pk}/")
    assert '<details class="carried-note" id="carried-note">' in page and "Decision 0: we chose option 0" in page


@pytest.mark.asyncio
async def test_nudge_dismiss_is_acknowledged_silently(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "nudge.dismiss"})

    assert await settle(socket) == []
    assert await ChannelEvent.objects.acount() == 0


# The nudge ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def in_process(settings):
    """Background jobs in this process's pool (the embedded default), so a test can wait for them."""
    settings.BACKGROUND_WORK = "inprocess"


@pytest.mark.asyncio
async def test_the_nudge_shows_once_when_an_instruction_reaches_the_threshold(bob, direct_channel, enter, no_background, in_process):
    """The real in-process job: checked in the background after the instruction is stored."""
    await database_sync_to_async(nudge_after)(direct_channel, 3)
    session = await database_sync_to_async(add_tasks)(direct_channel, 2)
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "instruction", "text": "Third instruction"})
    frames = await receive_until(socket, "nudge")

    assert [f["type"] for f in frames] == ["message", "task", "message", "nudge"]
    notice, shown = frames[2], frames[3]
    assert shown == {"type": "nudge", "session": session.pk, "text": nudge.NUDGE_TEXT["en"], "trigger": "instruction", "seq": 4}
    assert notice["message"]["role"] == "notice" and notice["message"]["turn"] == 3
    assert notice["message"]["content"] == nudge.NUDGE_TEXT["en"] and notice["seq"] == 3
    assert notice["message"]["previous"] == frames[0]["message"]["id"], "right under that instruction"

    await socket.send_json_to({"type": "instruction", "text": "Fourth instruction"})
    await receive_until(socket, "task")
    await sync_to_async(drain_background)()
    assert await settle(socket) == []
    assert await Message.objects.filter(role="notice").acount() == 1
    assert await ChannelEvent.objects.filter(type="nudge").acount() == 1
    assert (await Session.objects.aget(pk=session.pk)).nudged_at is not None


@pytest.mark.asyncio
async def test_no_nudge_below_the_threshold(bob, direct_channel, enter, no_background, in_process):
    await database_sync_to_async(nudge_after)(direct_channel, 3)
    await database_sync_to_async(add_tasks)(direct_channel, 1)
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "instruction", "text": "Second instruction"})
    await receive_until(socket, "task")
    await sync_to_async(drain_background)()

    assert await settle(socket) == []
    assert await Message.objects.filter(role="notice").acount() == 0


@pytest.mark.asyncio
async def test_the_nudge_shows_once_on_entry_in_traditional_chinese(bob, direct_channel, enter, nudge_checks):
    await database_sync_to_async(nudge_after)(direct_channel, 3)
    session = await database_sync_to_async(add_tasks)(direct_channel, 3)

    socket, frame = await enter(bob, direct_channel, language="zh-TW,zh;q=0.9,en;q=0.8")

    assert frame["session"]["nudged"] is False
    notice, shown = await socket.receive_json_from(timeout=5), await socket.receive_json_from(timeout=5)
    assert shown == {"type": "nudge", "session": session.pk, "text": nudge.NUDGE_TEXT["zh-hant"], "trigger": "entry", "seq": 2}
    assert shown["text"].startswith("💡") and "對話" in shown["text"]
    assert notice["message"]["role"] == "notice" and notice["message"]["turn"] == 3
    assert notice["html"] == f"<p>{nudge.NUDGE_TEXT['zh-hant']}</p>"
    await socket.disconnect()

    # Once per session: a reload shows the stored notice, and no second nudge.
    again, frame = await enter(bob, direct_channel, language="en")
    assert frame["session"]["nudged"] is True
    assert frame["messages"][-1]["message"]["content"] == nudge.NUDGE_TEXT["zh-hant"]
    assert frame["messages"][-1]["seq"] == 1
    assert await settle(again) == []

    # A new session can be nudged again, once it is long.
    await again.send_json_to({"type": "session.new"})
    assert (await again.receive_json_from(timeout=5))["type"] == "session"
    new = await Session.objects.aget(channel=direct_channel, status="active")
    assert not await database_sync_to_async(nudge.maybe_nudge)(new.pk, "entry")
    await database_sync_to_async(add_tasks)(direct_channel, 3)
    assert await database_sync_to_async(nudge.maybe_nudge)(new.pk, "entry")
    assert await Message.objects.filter(role="notice").acount() == 2


@pytest.mark.asyncio
async def test_two_tabs_entering_together_see_one_nudge(bob, alice, direct_channel, sockets, cookie, nudge_checks):
    await database_sync_to_async(nudge_after)(direct_channel, 3)
    await database_sync_to_async(add_tasks)(direct_channel, 3)
    tabs = [sockets(direct_channel.pk, await sync_to_async(cookie)(user)) for user in (bob, alice, bob)]

    await asyncio.gather(*(tab.connect() for tab in tabs))

    for tab in tabs:
        session_frame = await tab.receive_json_from(timeout=5)
        live = await settle(tab)
        notices = [m for m in session_frame["messages"] if m["message"]["role"] == "notice"]
        notices += [f for f in live if f["type"] == "message" and f["message"]["role"] == "notice"]
        assert len(notices) == 1, "each tab shows the notice once: in its first frame or live"
        nudges = [f for f in live if f["type"] == "nudge"]
        # A tab that joined after the nudge was shown learns it from the session frame.
        assert len(nudges) == 1 or (nudges == [] and session_frame["session"]["nudged"])
    assert await Message.objects.filter(role="notice").acount() == 1
    assert await ChannelEvent.objects.filter(type="nudge").acount() == 1


@pytest.mark.asyncio
async def test_many_simultaneous_instructions_crossing_the_threshold_nudge_once(
    bob, alice, direct_channel, sockets, cookie, no_background, in_process
):
    await database_sync_to_async(nudge_after)(direct_channel, 3)
    await database_sync_to_async(add_tasks)(direct_channel, 1)
    tabs = [sockets(direct_channel.pk, await sync_to_async(cookie)(user)) for user in (bob, alice, bob, alice, bob)]
    for tab in tabs:
        assert (await tab.connect())[0]
        await tab.receive_json_from(timeout=5)

    await asyncio.gather(*(tab.send_json_to({"type": "instruction", "text": f"Instruction from tab {n}"}) for n, tab in enumerate(tabs)))
    # Each tab's own instruction is handled once it answers a ping; then the nudge checks are queued.
    received = {n: await settle(tab) for n, tab in enumerate(tabs)}
    await sync_to_async(drain_background)()
    for n, tab in enumerate(tabs):
        received[n] += await settle(tab)

    assert await Task.objects.acount() == 6
    assert await Message.objects.filter(role="notice").acount() == 1
    assert await ChannelEvent.objects.filter(type="nudge").acount() == 1
    every = await database_sync_to_async(stored)(direct_channel.pk)
    assert [e["seq"] for e in every] == list(range(1, 5 * 2 + 2 + 1)), "5 × (message, task), the notice and the nudge"
    for frames in received.values():
        # Every tab got every event, live, once: the one nudge included.
        assert [f["trigger"] for f in frames if f["type"] == "nudge"] == ["instruction"]
        assert sorted(f["seq"] for f in frames) == [e["seq"] for e in every]


def test_racing_claims_on_threads_nudge_exactly_once(direct_channel, monkeypatch):
    """maybe_nudge from many threads at once (workers, tabs): one claim wins, one notice, one event."""
    nudge_after(direct_channel, 3)
    session = add_tasks(direct_channel, 3)
    sent: list[dict] = []
    monkeypatch.setattr(events, "send_now", lambda channel_id, frame: sent.append(frame))
    racers = 8
    start = threading.Barrier(racers)
    results: list[bool] = []

    def race(trigger: str) -> None:
        try:
            start.wait()
            results.append(nudge.maybe_nudge(session.pk, trigger))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race, args=(["entry", "instruction"][n % 2],)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == [False] * (racers - 1) + [True]
    assert Message.objects.filter(session=session, role="notice").count() == 1
    assert [f["type"] for f in sent] == ["message", "nudge"]


def test_it_reads_traditional_chinese_from_accept_language():
    assert nudge.language_from_header("zh-TW,zh;q=0.9,en;q=0.8") == "zh-hant"
    assert nudge.language_from_header("zh-Hant-TW") == "zh-hant"
    assert nudge.language_from_header("zh-HK") == "zh-hant"
    assert nudge.language_from_header("en-US,en;q=0.9,zh-TW;q=0.5") == "en"
    assert nudge.language_from_header("fr;q=0.4, zh-tw;q=0.8") == "zh-hant"
    assert nudge.language_from_header("zh-CN") == "en"
    assert nudge.language_from_header("") == "en"
    assert nudge.language_from_header("garbage;q=x") == "en"


# Inert HTML --------------------------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("payload", XSS)
async def test_user_and_model_text_is_inert_in_every_message_frame(payload, bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "instruction", "text": f"Look at this: {payload}"})
    frames = await receive_until(socket, "task")
    # The model answers with the same payload (scripted), on a worker thread as in production.
    await sync_to_async(run_in_thread, thread_sensitive=False)(
        pipeline.run_task, frames[-1]["id"], provider=ScriptedProvider([Reply(f"Sure: {payload}")])
    )
    frames += await receive_until(socket, "task")  # running
    frames += await receive_until(socket, "task")  # done

    messages = [f for f in frames if f["type"] == "message"]
    assert [m["message"]["role"] for m in messages] == ["user", "assistant"]
    socket_again, session_frame = await enter(bob, direct_channel)
    await socket_again.send_json_to({"type": "resync", "after": 0})
    count = await ChannelEvent.objects.filter(channel=direct_channel).acount()
    replayed = [f for f in [await socket_again.receive_json_from(timeout=5) for _ in range(count)] if f["type"] == "message"]
    assert len(replayed) == 2
    for html in [m["html"] for m in messages + replayed] + [m["html"] for m in session_frame["messages"]]:
        assert html, "every message frame carries html"
        assert_inert(html)
    if not payload.startswith("["):
        assert "alert(1)" in messages[0]["html"], "the text is shown, as text"


def test_markdown_renders_safe_html():
    from office.markdown import render

    assert render("") == ""
    assert render("**hi** `<b>`") == "<p><strong>hi</strong> <code>&lt;b&gt;</code></p>"
    assert render("[docs](https://example.com)") == (
        '<p><a href="https://example.com" target="_blank" rel="noopener noreferrer">docs</a></p>'
    )
    for payload in XSS + ('<a href="javascript:alert(1)">x</a>', "[x](JAVASCRIPT:alert(1))", "<svg onload=alert(1)>"):
        assert_inert(render(payload))


@pytest.mark.asyncio
async def test_what_a_tab_was_shown_live_counts_as_read_when_it_closes(bob, direct_channel, enter, nudge_checks):
    from office.models import ChannelRead

    socket, _ = await enter(bob, direct_channel)
    await socket.send_json_to({"type": "instruction", "text": "Hello", "client_id": "c-read"})
    task = (await receive_until(socket, "task"))[-1]

    await socket.disconnect()

    read = await ChannelRead.objects.aget(user=bob, channel=direct_channel)
    assert read.last_seen_seq == task["seq"]


@pytest.mark.asyncio
async def test_a_frame_for_a_socket_already_closing_is_dropped_without_an_error(caplog):
    """Between a browser's close frame and the consumer's disconnect, Daphne refuses a send with
    autobahn's Disconnected (a delta streamed then, or a stop's last events): the frame is dropped
    and nothing reaches the log as an error."""
    from autobahn.exception import Disconnected

    from office.consumers import ChannelConsumer

    sent: list[dict] = []

    async def closing_socket(message: dict) -> None:
        sent.append(message)
        raise Disconnected("Attempt to send on a closed protocol")

    consumer = ChannelConsumer()
    consumer.base_send = closing_socket
    await consumer.office_event({"event": {"type": "delta", "task": 1, "text": "on its way"}})

    assert sent and json.loads(sent[0]["text"])["text"] == "on its way"
    assert not [record for record in caplog.records if record.levelname in {"ERROR", "CRITICAL"}]
