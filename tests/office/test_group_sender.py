"""Sending to Redis from many threads (office.events._GroupSender): per channel in order, a
streaming thread never waits for the round trips, and deltas that pile up go as one."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from office.events import LAYER_TYPE, _GroupSender, merged_delta


def delta(text: str, task: int = 1, coworker: str = "mina") -> dict:
    return {"type": LAYER_TYPE, "event": {"type": "delta", "task": task, "coworker": coworker, "text": text}}


def stored(seq: int) -> dict:
    return {"type": LAYER_TYPE, "event": {"type": "task", "status": "done", "seq": seq}}


def test_two_deltas_of_one_task_become_one_in_order_and_nothing_else_merges():
    assert merged_delta(delta("Hel"), delta("lo"))["event"]["text"] == "Hello"
    assert merged_delta(delta("a", task=1), delta("b", task=2)) is None
    assert merged_delta(delta("a", coworker="mina"), delta("b", coworker="theo")) is None
    assert merged_delta(delta("a"), stored(3)) is None
    assert merged_delta(stored(3), delta("a")) is None


class SlowLayer:
    """A channel layer whose every send takes a while, as Redis does on a busy machine."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []
        self.gate = asyncio.Event()

    async def group_send(self, group: str, message: dict) -> None:
        await self.gate.wait()
        await asyncio.sleep(0.01)
        self.sent.append((group, message))


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_a_stream_hands_its_deltas_over_without_waiting_and_they_arrive_whole_and_in_order(loop):
    layer = SlowLayer()
    sender = _GroupSender(loop, layer)
    futures = [sender.submit("channel-1", delta(f"{n} ")) for n in range(20)]  # no send has finished
    futures.append(sender.submit("channel-1", stored(7)))
    loop.call_soon_threadsafe(layer.gate.set)
    futures[-1].result(timeout=5)  # the stored event waits for every delta before it
    assert all(f.done() and f.exception() is None for f in futures)
    frames = [message["event"] for group, message in layer.sent]
    assert "".join(f["text"] for f in frames if f["type"] == "delta") == "".join(f"{n} " for n in range(20))
    assert frames[-1] == {"type": "task", "status": "done", "seq": 7}
    assert len(frames) < 21  # the deltas that waited went as fewer messages


def test_one_slow_channel_does_not_hold_up_another(loop):
    class OneSlowGroup(SlowLayer):
        async def group_send(self, group, message):
            if group == "channel-slow":
                await self.gate.wait()
            self.sent.append((group, message))

    layer = OneSlowGroup()
    sender = _GroupSender(loop, layer)
    stuck = sender.submit("channel-slow", stored(1))
    sender.submit("channel-fast", stored(1)).result(timeout=5)
    assert not stuck.done()
    loop.call_soon_threadsafe(layer.gate.set)
    stuck.result(timeout=5)
    assert [group for group, _ in layer.sent] == ["channel-fast", "channel-slow"]


def test_a_failed_send_reaches_whoever_waits_for_it(loop):
    class Broken:
        async def group_send(self, group, message):
            raise ConnectionError("Redis is away")

    sender = _GroupSender(loop, Broken())
    with pytest.raises(ConnectionError):
        sender.submit("channel-1", stored(1)).result(timeout=5)
    # The group's queue is gone with its failure: the next send starts afresh.
    with pytest.raises(ConnectionError):
        sender.submit("channel-1", stored(2)).result(timeout=5)


def test_a_barrier_is_done_once_every_delta_before_it_has_gone_out_and_sends_nothing(loop):
    from office.events import BARRIER

    layer = SlowLayer()
    sender = _GroupSender(loop, layer)
    for n in range(5):
        sender.submit("channel-1", delta(f"{n}"))
    barrier = sender.submit("channel-1", BARRIER)
    assert not barrier.done()  # the deltas are still on their way: the reply must not be stored yet
    loop.call_soon_threadsafe(layer.gate.set)
    barrier.result(timeout=5)
    assert "".join(message["event"]["text"] for _, message in layer.sent) == "01234"
    assert all(message is not BARRIER for _, message in layer.sent)


def test_an_acknowledgement_stops_at_its_task_so_what_follows_comes_in_order_with_the_deltas():
    from office.consumers import acknowledgement

    frames = [
        {"type": "message", "message": {"role": "user"}, "seq": 4},
        {"type": "task", "id": 9, "status": "queued", "seq": 5},
        {"type": "task", "id": 9, "status": "running", "seq": 6},  # the worker was quicker than the read
        {"type": "message", "message": {"role": "assistant"}, "seq": 7},
        {"type": "task", "id": 9, "status": "done", "seq": 8},
    ]
    assert [f["seq"] for f in acknowledgement(frames, 9)] == [4, 5]
    # A resend of a task this socket has seen: everything after it, as before.
    assert acknowledgement(frames[2:], 3) == frames[2:]


class GatedLayer:
    """A channel layer (configured as the backend) that sends nothing until its gate opens: Redis
    on a machine busy with a hundred streams."""

    def __init__(self, **config) -> None:
        self.sent: list[dict] = []
        self.gate = threading.Event()

    async def group_send(self, group: str, message: dict) -> None:
        while not self.gate.is_set():
            await asyncio.sleep(0.005)
        self.sent.append(message["event"])


def test_a_claims_running_event_does_not_wait_for_redis_but_still_goes_before_the_stream(settings):
    from channels.layers import channel_layers, get_channel_layer

    from office import events

    channel_layers.backends.clear()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "tests.office.test_group_sender.GatedLayer"}}
    layer = get_channel_layer()
    try:
        began = time.monotonic()
        with events.unawaited():
            events.send_now(1, {"type": "task", "status": "running", "seq": 3})
        assert time.monotonic() - began < 1 and layer.sent == []  # handed over while the gate is shut
        events.send_now(1, {"type": "delta", "task": 1, "text": "Hel"})
        threading.Timer(0.2, layer.gate.set).start()
        events.send_now(1, {"type": "message", "seq": 4})  # outside the block: waits for its turn
        assert layer.sent == [
            {"type": "task", "status": "running", "seq": 3},
            {"type": "delta", "task": 1, "text": "Hel"},
            {"type": "message", "seq": 4},
        ]
    finally:
        layer.gate.set()
        channel_layers.backends.clear()


class SlowToBuildLayer(GatedLayer):
    """A layer that takes a moment to build (channels_redis parses its config, makes its pools):
    long enough for threads asking at once to each build one, if nothing stops them."""

    built: list = []

    def __init__(self, **config) -> None:
        time.sleep(0.05)
        super().__init__(**config)
        self.gate.set()
        SlowToBuildLayer.built.append(self)


def test_replies_starting_at_once_on_a_fresh_worker_all_stream_through_one_layer_and_sender(settings):
    from channels.layers import channel_layers

    from office import events

    channel_layers.backends.clear()
    SlowToBuildLayer.built.clear()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "tests.office.test_group_sender.SlowToBuildLayer"}}
    start = threading.Barrier(20)

    def stream(n: int) -> None:
        start.wait()
        events.send_now(1, {"type": "delta", "task": n, "text": f"{n} "})

    threads = [threading.Thread(target=stream, args=(n,)) for n in range(20)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        events.sent_out(1)
        # One layer, so one sender: the barrier waited for every delta, none went out after it.
        assert len(SlowToBuildLayer.built) == 1
        assert sorted(frame["text"] for frame in SlowToBuildLayer.built[0].sent) == sorted(f"{n} " for n in range(20))
    finally:
        channel_layers.backends.clear()


def test_a_delta_whose_send_fails_goes_again_so_the_reply_streams_whole_and_in_order(loop):
    class BusyPool(SlowLayer):
        """Every other delta finds no free connection in time (redis-py's pool timeout)."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        async def group_send(self, group, message):
            self.calls += message["event"]["type"] == "delta"
            if self.calls % 2 and message["event"]["type"] == "delta":
                raise ConnectionError("No connection available.")
            await super().group_send(group, message)

    layer = BusyPool()
    sender = _GroupSender(loop, layer)
    for n in range(6):
        sender.submit("channel-1", delta(f"{n} "))
    loop.call_soon_threadsafe(layer.gate.set)
    sender.submit("channel-1", stored(9)).result(timeout=5)
    frames = [message["event"] for _, message in layer.sent]
    assert "".join(f["text"] for f in frames if f["type"] == "delta") == "0 1 2 3 4 5 "
    assert frames[-1]["type"] == "task"


def test_a_delta_that_keeps_failing_is_given_up_and_the_stream_goes_on(loop):
    class DownThenUp(SlowLayer):
        async def group_send(self, group, message):
            if message["event"].get("text") == "lost ":
                raise ConnectionError("Redis is away")
            await super().group_send(group, message)

    layer = DownThenUp()
    layer.gate.set()
    sender = _GroupSender(loop, layer)
    sender.submit("channel-1", delta("lost ")).exception(timeout=5)
    sender.submit("channel-1", stored(2)).result(timeout=5)
    assert [message["event"]["type"] for _, message in layer.sent] == ["task"]
