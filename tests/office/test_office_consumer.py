"""The office websocket that keeps the sidebar live: who may connect, the sidebar frame on connect,
unread activity only for channels the person can see (and never for instructions), and a coworker's
dot going working -> idle around a task, idle only once nothing of theirs runs anywhere in sight."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connections

from coworkers.providers.scripted import Reply, ScriptedProvider
from office import events, office_consumer, reading
from office.models import Channel, ChannelEvent, ChannelQuerySet, Membership
from sessions import pipeline, posting
from sessions.models import Task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]


@pytest.fixture(autouse=True)
def replies_only(no_background, monkeypatch):
    """Tasks run only when a test runs them; nudge checks, memory and folds are not this file's."""
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)


@pytest.fixture
def hidden_from_bob(monkeypatch):
    """Bob cannot see 1:1 channels (as a private 1:1 of someone else): visible_to says so."""
    original = ChannelQuerySet.visible_to

    def visible_to(self, user):
        channels = original(self, user)
        return channels.exclude(kind=Channel.Kind.DIRECT) if user.username == "bob" else channels

    monkeypatch.setattr(ChannelQuerySet, "visible_to", visible_to)


@pytest.fixture
def sockets(open_websocket, cookie):
    """An office's sidebar socket, signed in as `user` (anonymous without one)."""

    async def open_socket(office_id: int, user=None) -> WebsocketCommunicator:
        key = await sync_to_async(cookie)(user) if user is not None else None
        return open_websocket(f"/ws/offices/{office_id}/", session_key=key)

    return open_socket


@pytest.fixture
def enter(sockets):
    """Connect as a member and read the sidebar frame."""

    async def enter_as(user, office) -> tuple[WebsocketCommunicator, dict]:
        communicator = await sockets(office.pk, user)
        connected, _ = await communicator.connect()
        assert connected
        frame = await communicator.receive_json_from(timeout=5)
        assert frame["type"] == "sidebar"
        return communicator, frame

    return enter_as


def post(channel: Channel, text: str, coworker) -> Task:
    return posting.post_instruction(channel=channel, text=text, coworker=coworker)


class Gate:
    """A provider whose reply waits until the test opens the gate: the task stays running meanwhile."""

    def __init__(self, text: str) -> None:
        self.open = threading.Event()
        self.provider = ScriptedProvider([lambda request: self.open.wait(30) and Reply(text)])


async def run(task_id: int, provider) -> None:
    """run_task on a worker thread, as in production (its own connection, closed after)."""

    def work() -> None:
        try:
            pipeline.run_task(task_id, provider=provider)
        finally:
            connections.close_all()

    await sync_to_async(work, thread_sensitive=False)()


async def running(*task_ids: int) -> None:
    for _ in range(200):
        if await Task.objects.filter(pk__in=task_ids, status=Task.Status.RUNNING).acount() == len(task_ids):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the tasks never started")


def reply_seq(channel: Channel) -> int:
    event = ChannelEvent.objects.filter(channel=channel, type="message", payload__message__role="assistant").latest("seq")
    return event.seq


# Who may connect ------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("who", ["outsider", "anonymous", "no such office"])
async def test_it_refuses_anyone_but_a_member_the_same_way(who, office, bob, charlie, sockets):
    if who == "outsider":
        communicator = await sockets(office.pk, charlie)
    elif who == "anonymous":
        communicator = await sockets(office.pk)
    else:
        communicator = await sockets(office.pk + 1000, bob)

    assert await communicator.connect() == (False, 4403)


@pytest.mark.asyncio
async def test_a_member_gets_who_is_working_and_the_unread_counts_on_connect(office, bob, mina, direct_channel, main_channel, enter):
    task = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)
    await run(task.pk, ScriptedProvider([Reply("Here is the draft.")]))
    second = await database_sync_to_async(post)(direct_channel, "Shorter, please", mina)
    await Task.objects.filter(pk=second.pk).aupdate(status=Task.Status.RUNNING)

    _, frame = await enter(bob, office)

    # Two instructions and one reply: one unread, and the count covers up to the reply's seq.
    seq = await database_sync_to_async(reply_seq)(direct_channel)
    assert frame == {
        "type": "sidebar",
        "working": ["mina"],
        "channels": sorted(
            [{"id": direct_channel.pk, "unread": 1, "seq": seq}, {"id": main_channel.pk, "unread": 0, "seq": 0}],
            key=lambda c: c["id"],
        ),
    }


# Unread activity --------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_reply_in_a_channel_raises_activity_for_a_member_who_can_see_it_only(
    office, alice, bob, mina, direct_channel, main_channel, enter, hidden_from_bob
):
    alice_socket, _ = await enter(alice, office)
    bob_socket, bob_frame = await enter(bob, office)
    assert [c["id"] for c in bob_frame["channels"]] == [main_channel.pk], "bob's sidebar has no 1:1"

    task = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)
    await run(task.pk, ScriptedProvider([Reply("Here is the draft.")]))

    got = []
    while not await alice_socket.receive_nothing(timeout=0.5):
        got.append(await alice_socket.receive_json_from())
    activity = [f for f in got if f["type"] == "activity"]
    # The instruction is the person's own words: only the reply counts.
    assert activity == [{"type": "activity", "channel": direct_channel.pk, "seq": await database_sync_to_async(reply_seq)(direct_channel)}]
    assert await bob_socket.receive_nothing(timeout=0.5), "nothing of a channel bob cannot see reaches him"


@pytest.mark.asyncio
async def test_the_live_count_adds_exactly_what_a_reload_would_show(office, bob, mina, direct_channel, enter):
    """Replies, notices, tool results and instructions: an activity frame for each event the
    sidebar's count includes on a reload, and for no other."""
    socket, _ = await enter(bob, office)

    def send_one_of_each() -> None:
        for role in ["user", "assistant", "tool", "notice"]:
            events.send_event(direct_channel.pk, "message", message={"id": role, "role": role, "content": role})

    await database_sync_to_async(send_one_of_each)()

    live = [await socket.receive_json_from(timeout=5) for _ in range(2)]
    assert await socket.receive_nothing(timeout=0.3)
    assert [f["seq"] for f in live] == [2, 4], "the reply and the notice"
    counts = await database_sync_to_async(reading.unread_counts)(user=bob, office=office)
    assert counts == {direct_channel.pk: len(live)}


@pytest.mark.asyncio
async def test_a_member_removed_while_connected_is_cut_off_once_their_channels_are_read_again(
    office, bob, mina, direct_channel, enter, monkeypatch
):
    monkeypatch.setattr(office_consumer, "VISIBLE_SECONDS", 0.0)
    socket, _ = await enter(bob, office)
    await Membership.objects.filter(user=bob).adelete()

    await database_sync_to_async(events.send_event)(direct_channel.pk, "message", message={"id": "1", "role": "assistant", "content": "Hi"})

    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


# Presence -------------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_coworker_shows_working_while_a_task_runs_then_idle(office, bob, mina, direct_channel, enter):
    socket, frame = await enter(bob, office)
    assert frame["working"] == []
    task = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)
    gate = Gate("Here is the draft.")

    work = asyncio.ensure_future(run(task.pk, gate.provider))
    try:
        assert await socket.receive_json_from(timeout=5) == {"type": "presence", "coworker": "mina", "status": "working"}
    finally:
        gate.open.set()
    await work

    assert [await socket.receive_json_from(timeout=5) for _ in range(2)] == [
        {"type": "activity", "channel": direct_channel.pk, "seq": await database_sync_to_async(reply_seq)(direct_channel)},
        {"type": "presence", "coworker": "mina", "status": "idle"},
    ]
    assert await socket.receive_nothing(timeout=0.3)


@pytest.mark.asyncio
async def test_a_coworker_is_idle_only_when_nothing_of_theirs_runs_anywhere(office, bob, mina, direct_channel, main_channel, enter):
    socket, _ = await enter(bob, office)
    in_direct = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)
    in_main = await database_sync_to_async(post)(main_channel, "@mina check the numbers", mina)
    direct_gate, main_gate = Gate("Draft done."), Gate("Numbers checked.")

    direct_work = asyncio.ensure_future(run(in_direct.pk, direct_gate.provider))
    main_work = asyncio.ensure_future(run(in_main.pk, main_gate.provider))
    try:
        assert await socket.receive_json_from(timeout=5) == {"type": "presence", "coworker": "mina", "status": "working"}
        await running(in_direct.pk, in_main.pk)
        direct_gate.open.set()
        await direct_work
        # Done in the 1:1, still at work in main: the reply counts, the dot stays.
        assert (await socket.receive_json_from(timeout=5))["channel"] == direct_channel.pk
        assert await socket.receive_nothing(timeout=0.5)
    finally:
        direct_gate.open.set()
        main_gate.open.set()
    await main_work

    assert [await socket.receive_json_from(timeout=5) for _ in range(2)] == [
        {"type": "activity", "channel": main_channel.pk, "seq": await database_sync_to_async(reply_seq)(main_channel)},
        {"type": "presence", "coworker": "mina", "status": "idle"},
    ]


@pytest.mark.asyncio
async def test_work_in_a_channel_out_of_sight_does_not_move_the_dot(office, bob, mina, direct_channel, enter, hidden_from_bob):
    socket, _ = await enter(bob, office)
    task = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)

    await run(task.pk, ScriptedProvider([Reply("Here is the draft.")]))

    assert await socket.receive_nothing(timeout=0.5)


@pytest.mark.asyncio
async def test_a_sidebar_whose_group_redis_forgot_joins_again_and_its_dots_catch_up(
    office, bob, mina, direct_channel, enter, monkeypatch, settings
):
    from office import consumers

    # Forgetting a group is played on the in-memory layer, whatever the run's layer; the real Redis
    # restart is tests/production/test_faults.py's.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.2)
    socket, frame = await enter(bob, office)
    assert frame["working"] == []
    # A restarted Redis keeps no groups: the notice of this task's start reaches nobody live.
    get_channel_layer().groups.pop(events.office_group(office.pk), None)
    task = await database_sync_to_async(post)(direct_channel, "Draft the launch email", mina)
    gate = Gate("Here is the draft.")
    work = asyncio.ensure_future(run(task.pk, gate.provider))
    try:
        assert await socket.receive_json_from(timeout=5) == {"type": "presence", "coworker": "mina", "status": "working"}
    finally:
        gate.open.set()
    await work
