"""The per-person instruction limit: the window arithmetic, the shared counter, and the channel socket's
`rate_limited` error (the socket stays open, nothing is stored, a resend is free)."""

from __future__ import annotations

import threading
import types

import pytest

from channels.db import database_sync_to_async

from office import ratelimit
from office.models import Channel, ChannelEvent
from sessions.models import Message, Task

from .conftest import receive_until


@pytest.fixture
def clock(monkeypatch):
    """Time as the limiter sees it, moved by the test."""
    now = types.SimpleNamespace(value=60 * 16_000 + 20.0)  # 20 s into a minute
    monkeypatch.setattr(ratelimit, "time", types.SimpleNamespace(time=lambda: now.value))
    return now


def fill_channel(channel: Channel, count: int) -> None:
    ChannelEvent.objects.bulk_create(
        ChannelEvent(channel=channel, seq=seq, type="task", payload={"id": seq, "turn": seq, "status": "done"})
        for seq in range(1, count + 1)
    )
    Channel.objects.filter(pk=channel.pk).update(last_event_seq=count)


# The arithmetic -------------------------------------------------------------------------------------


def test_it_says_how_long_is_left_of_the_window():
    assert ratelimit.window(120.0, 60) == (2, 60)
    assert ratelimit.window(120.2, 60) == (2, 60)
    assert ratelimit.window(150.0, 60) == (2, 30)
    assert ratelimit.window(179.9, 60) == (2, 1), "never 'try again in 0 seconds'"


def test_it_allows_up_to_the_limit_and_no_more():
    assert ratelimit.judge(3, limit=3, retry_after=10) == ratelimit.Verdict(True, 10)
    assert ratelimit.judge(4, limit=3, retry_after=10) == ratelimit.Verdict(False, 10)


def test_it_phrases_the_wait():
    assert ratelimit.wait_phrase(1) == "1 second"
    assert ratelimit.wait_phrase(42) == "42 seconds"
    assert ratelimit.wait_phrase(300) == "5 minutes"


# The shared counter (local memory, or Redis with REDIS_URL) -------------------------------------------


def test_the_counter_refuses_past_the_limit_until_the_next_window(clock):
    verdicts = [ratelimit.hit("instructions:1", limit=3).allowed for _ in range(5)]
    assert verdicts == [True, True, True, False, False]
    assert ratelimit.hit("instructions:1", limit=3).retry_after == 40

    clock.value += 40  # the next minute
    assert ratelimit.hit("instructions:1", limit=3).allowed


def test_each_key_has_its_own_count(clock):
    for _ in range(3):
        ratelimit.hit("instructions:1", limit=3)
    assert not ratelimit.hit("instructions:1", limit=3).allowed
    assert ratelimit.hit("instructions:2", limit=3).allowed


def test_it_counts_hits_from_many_threads_exactly(clock):
    """The count is atomic (add, then incr): 40 racing hits against a limit of 25 let exactly 25 through."""
    start = threading.Barrier(8)
    allowed: list[bool] = []
    lock = threading.Lock()

    def racer() -> None:
        start.wait()
        for _ in range(5):
            verdict = ratelimit.hit("instructions:race", limit=25)
            with lock:
                allowed.append(verdict.allowed)

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(allowed) == 40 and allowed.count(True) == 25


# The channel socket ----------------------------------------------------------------------------------

socket_test = pytest.mark.django_db(transaction=True)


async def stored_counts() -> tuple[int, int, int]:
    return await Task.objects.acount(), await Message.objects.acount(), await ChannelEvent.objects.acount()


@pytest.fixture
def limit_of_three(settings, no_background, monkeypatch):
    settings.INSTRUCTIONS_PER_MINUTE = 3
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)


async def send_instruction(socket, text: str, client_id: str | None = None) -> list[dict]:
    await socket.send_json_to({"type": "instruction", "text": text, **({"client_id": client_id} if client_id else {})})
    return await receive_until(socket, "task")


@pytest.mark.asyncio
@socket_test
async def test_past_the_limit_an_instruction_gets_rate_limited_and_nothing_is_stored(bob, direct_channel, enter, limit_of_three, clock):
    socket = await enter(bob, direct_channel)
    for n in range(3):
        await send_instruction(socket, f"Instruction {n + 1}", f"c-{n + 1}")
    before = await stored_counts()

    await socket.send_json_to({"type": "instruction", "text": "One too many", "client_id": "c-4"})
    frame = await socket.receive_json_from(timeout=5)

    assert frame == {
        "type": "error",
        "code": "rate_limited",
        "detail": "You are sending instructions faster than 3 a minute, so this one was not sent. Try again in 40 seconds.",
        "client_id": "c-4",
    }
    assert await stored_counts() == before
    assert not await Message.objects.filter(content="One too many").aexists()
    # The socket is still open and answers other frames.
    await socket.send_json_to({"type": "resync", "after": before[2]})
    assert await socket.receive_nothing(timeout=0.3)
    await socket.send_json_to({"type": "nudge.dismiss"})
    await socket.send_json_to({"type": "ping"})
    assert (await socket.receive_json_from(timeout=5))["code"] == "unknown_type"

    # In the next minute the same instruction goes through.
    clock.value += 40
    frames = await send_instruction(socket, "One too many", "c-4")
    assert [f["type"] for f in frames] == ["message", "task"]
    assert frames[0]["message"]["content"] == "One too many"


@pytest.mark.asyncio
@socket_test
async def test_the_limit_is_per_person_across_tabs_and_channels(bob, alice, direct_channel, main_channel, enter, limit_of_three, clock):
    first, second = await enter(bob, direct_channel), await enter(bob, main_channel)
    await send_instruction(first, "One")
    await send_instruction(second, "@mina Two")
    await send_instruction(first, "Three")

    await second.send_json_to({"type": "instruction", "text": "@mina Four"})
    assert (await second.receive_json_from(timeout=5))["code"] == "rate_limited"
    assert await Task.objects.acount() == 3

    # Someone else in the same office is not held back by Bob.
    hers = await enter(alice, main_channel)
    frames = await send_instruction(hers, "@mina From Alice")
    assert frames[0]["message"]["content"] == "@mina From Alice"


@pytest.mark.asyncio
@socket_test
async def test_a_resend_of_a_stored_instruction_is_free(bob, direct_channel, enter, limit_of_three, clock):
    """A tab that reconnects resends what it has not seen acknowledged: never refused for that."""
    socket = await enter(bob, direct_channel)
    for n in range(3):
        await send_instruction(socket, f"Instruction {n + 1}", f"c-{n + 1}")
    before = await stored_counts()

    await socket.send_json_to({"type": "instruction", "text": "Instruction 3", "client_id": "c-3"})
    await socket.send_json_to({"type": "ping"})

    assert (await socket.receive_json_from(timeout=5))["code"] == "unknown_type", "no rate_limited error before it"
    assert await stored_counts() == before


@pytest.mark.asyncio
@socket_test
async def test_bad_frames_do_not_use_up_the_limit(bob, direct_channel, enter, limit_of_three, clock):
    socket = await enter(bob, direct_channel)
    for text in ["", "   ", "x" * 20_001]:
        await socket.send_json_to({"type": "instruction", "text": text})
        assert (await socket.receive_json_from(timeout=5))["code"] in {"empty", "too_long"}

    for n in range(3):
        frames = await send_instruction(socket, f"Instruction {n + 1}")
        assert frames[0]["type"] == "message"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_socket_flooding_frames_is_closed_and_another_persons_is_not(
    bob, alice, direct_channel, main_channel, enter, monkeypatch
):
    from office import consumers
    from office.consumers import FLOODED, FRAMES_BURST

    monkeypatch.setattr(consumers, "FRAMES_PER_SECOND", 1e-6)  # no refill while the burst is sent, however slow the machine

    flooding, calm = await enter(bob, direct_channel), await enter(alice, main_channel)
    for _ in range(FRAMES_BURST + 5):
        await flooding.send_json_to({"type": "bogus"})
    answers = [await flooding.receive_output(timeout=5) for _ in range(FRAMES_BURST + 2)]

    assert [a["type"] for a in answers[-2:]] == ["websocket.send", "websocket.close"]
    assert '"rate_limited"' in answers[-2]["text"] and answers[-1]["code"] == FLOODED
    assert sum('"unknown_type"' in a.get("text", "") for a in answers) == FRAMES_BURST, "the burst is answered as usual"
    await calm.send_json_to({"type": "bogus"})
    assert (await calm.receive_json_from(timeout=5))["code"] == "unknown_type", "the other socket is not touched"


@pytest.fixture
def two_waiting(settings, no_background, monkeypatch):
    settings.WAITING_INSTRUCTIONS_PER_PERSON = 2
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)


@pytest.mark.asyncio
@socket_test
async def test_a_person_with_too_many_instructions_waiting_in_a_channel_cannot_hold_the_others_back(
    bob, alice, direct_channel, main_channel, enter, two_waiting
):
    """A conversation answers in order: in a shared channel, one person's queue is capped, so the
    others' instructions do not wait behind all of theirs."""
    bobs = await enter(bob, main_channel)
    for n in range(2):
        await send_instruction(bobs, f"@mina Task {n + 1}", f"b-{n + 1}")

    await bobs.send_json_to({"type": "instruction", "text": "@mina Task 3", "client_id": "b-3"})
    frame = await bobs.receive_json_from(timeout=5)

    assert frame["code"] == "rate_limited" and frame["client_id"] == "b-3"
    assert frame["detail"].startswith("2 of your instructions here are still waiting for replies")
    assert not await Message.objects.filter(content="@mina Task 3").aexists()
    # Alice in the same channel, and Bob in his 1:1, are not held back by Bob's queue in #main.
    hers = await enter(alice, main_channel)
    assert (await send_instruction(hers, "@mina From Alice"))[0]["message"]["content"] == "@mina From Alice"
    his_other = await enter(bob, direct_channel)
    assert (await send_instruction(his_other, "In my 1:1"))[0]["message"]["content"] == "In my 1:1"
    # Once one of his is answered, the refused one gets in as it was.
    await Task.objects.filter(client_id="b-1").aupdate(status=Task.Status.DONE)
    await bobs.send_json_to({"type": "instruction", "text": "@mina Task 3", "client_id": "b-3"})
    frames = await receive_until(bobs, "task") + await receive_until(bobs, "task")  # Alice's events first
    assert [f["message"]["content"] for f in frames if f["type"] == "message"] == ["@mina From Alice", "@mina Task 3"]
    assert await Task.objects.filter(client_id="b-3").aexists()


def at_once(send, count: int) -> None:
    """send(n) for n in range(count), each on its own thread and database connection, started together."""
    from django.db import connection

    barrier = threading.Barrier(count)

    def run(n: int) -> None:
        try:
            barrier.wait()
            send(n)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.django_db(transaction=True)
def test_instructions_sent_at_the_same_moment_from_several_tabs_are_counted_one_after_another(
    bob, direct_channel, two_waiting
):
    """The count and the stored task are one step under the session's lock: six tabs sending at
    once cannot all pass a count none of them has added to yet."""
    from sessions import posting

    tabs, refused = 6, []

    def send(n: int) -> None:
        try:
            posting.post_instruction(channel=direct_channel, text=f"Task {n}", client_id=f"tab-{n}", person=bob)
        except posting.InstructionRejected as rejected:
            refused.append(rejected.code)

    at_once(send, tabs)

    assert Task.objects.filter(session__channel=direct_channel).count() == 2
    assert refused == ["rate_limited"] * (tabs - 2)


@pytest.mark.django_db(transaction=True)
def test_an_instruction_refused_for_the_waiting_cap_costs_no_routing_call_and_no_rate(bob, main_channel, mina, two_waiting):
    from coworkers.providers.scripted import Reply, ScriptedProvider
    from sessions import posting

    for n in range(2):
        posting.post_instruction(channel=main_channel, text=f"@mina Task {n}", person=bob)
    router, admitted = ScriptedProvider([Reply('["mina"]')]), []

    with pytest.raises(posting.InstructionRejected) as refused:
        posting.post_instruction(
            channel=main_channel, text="Anyone free?", person=bob, provider=router, admit=lambda: admitted.append(1)
        )

    assert refused.value.code == "rate_limited"
    assert router.requests == [] and admitted == [], "refused before the router or the rate limit was asked"


@pytest.mark.django_db(transaction=True)
def test_a_resend_that_overlaps_its_original_at_the_cap_gets_the_original(bob, direct_channel, two_waiting):
    """A page resends what it has pending when its socket reopens, maybe while the original is still
    being stored: counted under the lock, the resend must find its original, not be refused for it."""
    import time

    from sessions import posting

    posting.post_instruction(channel=direct_channel, text="Task 1", client_id="a", person=bob)
    results: list = []

    def send(_) -> None:
        try:
            # Both pass the first checks before either is stored (routing can take a second).
            task = posting.post_instruction(
                channel=direct_channel, text="Task 2", client_id="b", person=bob, admit=lambda: time.sleep(0.5)
            )
            results.append(task.pk)
        except posting.InstructionRejected as rejected:
            results.append(rejected.code)

    at_once(send, 2)

    stored = Task.objects.get(client_id="b")
    assert results == [stored.pk, stored.pk]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_frames_are_limited_per_person_over_all_their_sockets(bob, alice, direct_channel, main_channel, enter, monkeypatch):
    """Each of Bob's sockets stays under its own pace; together they pass his, and one is closed."""
    from office import consumers
    from office.consumers import FLOODED, PERSON_FRAMES_BURST
    from office.ratelimit import PeopleBuckets

    monkeypatch.setattr(consumers, "person_frames", PeopleBuckets(PERSON_FRAMES_BURST, 3600))  # no refill meanwhile
    his = [await enter(bob, direct_channel) for _ in range(3)]
    per_socket = PERSON_FRAMES_BURST // 3 + 5  # under a socket's burst of 60, over his 120 together
    for socket in his:
        for _ in range(per_socket):
            await socket.send_json_to({"type": "bogus"})
    answers = [await his[-1].receive_output(timeout=5)]
    while answers[-1]["type"] != "websocket.close":
        answers.append(await his[-1].receive_output(timeout=5))

    assert answers[-1]["code"] == FLOODED and '"rate_limited"' in answers[-2]["text"]
    # His sockets' frames are handled side by side: together, exactly his burst was answered.
    assert len(answers) - 2 < per_socket
    hers = await enter(alice, main_channel)
    await hers.send_json_to({"type": "bogus"})
    assert (await hers.receive_json_from(timeout=5))["code"] == "unknown_type", "another person is not touched"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_resyncs_are_limited_per_person_over_all_their_sockets(bob, alice, direct_channel, enter, monkeypatch):
    from office import consumers
    from office.consumers import PERSON_RESYNC_BURST, RESYNC_BURST
    from office.ratelimit import PeopleBuckets

    monkeypatch.setattr(consumers, "person_resyncs", PeopleBuckets(PERSON_RESYNC_BURST, 3600))  # no refill meanwhile
    await database_sync_to_async(fill_channel)(direct_channel, 3)  # something to replay: a resync then costs

    his = [await enter(bob, direct_channel) for _ in range(PERSON_RESYNC_BURST // RESYNC_BURST + 1)]
    refusals = []
    for socket in his:
        for _ in range(RESYNC_BURST):  # each socket within its own burst
            await socket.send_json_to({"type": "resync", "after": 0})
            await socket.send_json_to({"type": "bogus"})  # its answer marks the end of the resync's
            while (frame := await socket.receive_json_from(timeout=5)).get("code") != "unknown_type":
                if frame.get("code") == "rate_limited":
                    refusals.append(frame["detail"])
                    # What the page needs to ask again by itself: that it was a resync, and when.
                    assert frame["refused"] == "resync" and frame["retry_after"] >= 1

    assert len(refusals) == len(his) * RESYNC_BURST - PERSON_RESYNC_BURST
    assert refusals[0].startswith("Too many resyncs from your connections; try again in")
    hers = await enter(alice, direct_channel)
    await hers.send_json_to({"type": "resync", "after": 0})
    await hers.send_json_to({"type": "bogus"})
    answered = [await hers.receive_json_from(timeout=5) for _ in range(4)]
    assert [f.get("seq") for f in answered[:3]] == [1, 2, 3], "her resync is not refused"
    # A reconnecting tab that missed nothing costs him nothing, past his limit as he is.
    reconnected = await enter(bob, direct_channel)
    await reconnected.send_json_to({"type": "resync", "after": 3})
    await reconnected.send_json_to({"type": "bogus"})
    assert (await reconnected.receive_json_from(timeout=5))["code"] == "unknown_type"
