"""Replays under a hostile client: a resync replays at most RESYNC_MAX_EVENTS and says the rest was
left out, and a socket that asks again and again is refused, so a client that never reads cannot make
the server buffer the channel thousands of times over."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from office import consumers
from office.ratelimit import PeopleBuckets
from office.models import Channel, ChannelEvent

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]


def fill(channel: Channel, count: int) -> None:
    """A channel with a long past: `count` stored events."""
    ChannelEvent.objects.bulk_create(
        ChannelEvent(channel=channel, seq=seq, type="task", payload={"id": seq, "turn": seq, "status": "done"})
        for seq in range(1, count + 1)
    )
    Channel.objects.filter(pk=channel.pk).update(last_event_seq=count)


@pytest.fixture
def enter(open_websocket, cookie):
    async def enter_as(user, channel):
        socket = open_websocket(f"/ws/channels/{channel.pk}/", session_key=await sync_to_async(cookie)(user))
        assert (await socket.connect())[0]
        assert (await socket.receive_json_from(timeout=5))["type"] == "session"
        return socket

    return enter_as


async def test_it_replays_at_most_500_events_and_tells_the_page_to_reload(bob, direct_channel, enter):
    await database_sync_to_async(fill)(direct_channel, 1200)
    socket = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "resync", "after": 0})
    replayed = [await socket.receive_json_from(timeout=5) for _ in range(consumers.RESYNC_MAX_EVENTS)]
    last = await socket.receive_json_from(timeout=5)

    assert [frame["seq"] for frame in replayed] == list(range(1, 501))
    assert last["type"] == "resync" and last["truncated"] is True and last["after"] == 500
    assert "reload" in last["detail"]
    assert await socket.receive_nothing(timeout=0.3)


async def test_it_replays_at_most_a_megabyte_of_large_events_then_tells_the_page_to_reload(bob, direct_channel, enter):
    big = "x" * 300_000  # a long highlighted code block's HTML is about this size
    await database_sync_to_async(ChannelEvent.objects.bulk_create)(
        ChannelEvent(channel=direct_channel, seq=seq, type="task", payload={"id": seq, "status": "done", "html": big})
        for seq in range(1, 11)
    )
    await database_sync_to_async(Channel.objects.filter(pk=direct_channel.pk).update)(last_event_seq=10)
    socket = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "resync", "after": 0})
    frames = [await socket.receive_json_from(timeout=5) for _ in range(4)]

    assert [frame.get("seq") for frame in frames[:3]] == [1, 2, 3], "three of 300 KB fit in a megabyte"
    assert frames[3]["type"] == "resync" and frames[3]["truncated"] is True and frames[3]["after"] == 3
    assert await socket.receive_nothing(timeout=0.3)


async def test_it_replays_a_short_gap_whole_without_a_truncated_notice(bob, direct_channel, enter):
    await database_sync_to_async(fill)(direct_channel, 1200)
    socket = await enter(bob, direct_channel)

    await socket.send_json_to({"type": "resync", "after": 1190})

    assert [(await socket.receive_json_from(timeout=5))["seq"] for _ in range(10)] == list(range(1191, 1201))
    assert await socket.receive_nothing(timeout=0.3)


async def test_it_refuses_resyncs_past_a_few_per_socket_and_the_socket_stays_open(bob, direct_channel, enter):
    await database_sync_to_async(fill)(direct_channel, 20)
    socket = await enter(bob, direct_channel)

    for _ in range(10):
        await socket.send_json_to({"type": "resync", "after": 10})
    await socket.send_json_to({"type": "ping"})
    frames = []
    while not frames or frames[-1].get("code") != "unknown_type":
        frames.append(await socket.receive_json_from(timeout=5))

    replays = [frame for frame in frames if frame["type"] == "task"]
    refusals = [frame for frame in frames if frame.get("code") == "rate_limited"]
    assert len(replays) == consumers.RESYNC_BURST * 10
    assert len(refusals) == 10 - consumers.RESYNC_BURST
    assert "Too many resyncs" in refusals[0]["detail"]


async def test_a_client_that_never_reads_gets_a_bounded_amount_queued(bob, direct_channel, enter, monkeypatch):
    """3,000 resyncs of a 1,200-event channel queued 3.6 million frames for one socket; 1,000 here
    (each frame is handled in turn, so this is a matter of time, not of count)."""
    monkeypatch.setattr(consumers, "RESYNC_EVERY_SECONDS", 3600)  # no refill during the test: an exact count
    # The resyncs' own limit, measured alone: the flood limit would close this socket at frame 61.
    monkeypatch.setattr(consumers, "FRAMES_BURST", 100_000)
    monkeypatch.setattr(consumers, "person_frames", PeopleBuckets(100_000, 1.0))  # and the person's
    monkeypatch.setattr(consumers, "person_resyncs", PeopleBuckets(100_000, 1.0))
    await database_sync_to_async(fill)(direct_channel, 1200)
    socket = await enter(bob, direct_channel)

    # Three whole replays (500 events and the truncated notice each), then one short error frame each.
    expected = consumers.RESYNC_BURST * (consumers.RESYNC_MAX_EVENTS + 1) + (1000 - consumers.RESYNC_BURST) + 1

    for _ in range(1000):
        await socket.send_json_to({"type": "resync", "after": 0})
    await socket.send_json_to({"type": "ping"})
    for _ in range(1200):  # until the consumer has handled every one of them
        await asyncio.sleep(0.05)
        if socket.output_queue.qsize() >= expected:
            break
    await asyncio.sleep(0.3)

    assert socket.output_queue.qsize() == expected
