"""`task.regenerate` {turn}: the last reply asked for again, as a new task with the same instruction.
History stays append-only, a double click regenerates once, and the instruction rate limit holds."""

from __future__ import annotations

import pytest

from office.models import ChannelEvent
from sessions.models import Message, Task

from .test_consumer import enter, nudge_checks, receive_until, settle, sockets  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]


async def ask(socket, text: str, client_id: str) -> dict:
    await socket.send_json_to({"type": "instruction", "text": text, "client_id": client_id})
    return (await receive_until(socket, "task"))[-1]


async def finish(task_id: int) -> None:
    await Task.objects.filter(pk=task_id).aupdate(status=Task.Status.DONE)


async def regenerate(socket, turn) -> list[dict]:
    """The frames that answer one task.regenerate (the ping after it marks their end)."""
    await socket.send_json_to({"type": "task.regenerate", "turn": turn})
    await socket.send_json_to({"type": "ping"})
    got = []
    while (frame := await socket.receive_json_from(timeout=5)).get("code") != "unknown_type":
        got.append(frame)
    return got


@pytest.mark.asyncio
async def test_regenerate_posts_the_same_instruction_as_a_new_task_and_keeps_the_old_one(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    first = await ask(socket, "Draft three **taglines**", "c-1")
    await finish(first["id"])
    before = [(m.pk, m.content) async for m in Message.objects.order_by("position")]

    frames = await regenerate(socket, 1)

    message, task = [f for f in frames if f["type"] in ("message", "task")]
    assert message["message"]["role"] == "user" and message["message"]["turn"] == 2
    assert message["message"]["content"] == "Draft three **taglines**"
    assert message["html"] == "<p>Draft three <strong>taglines</strong></p>"
    assert task["turn"] == 2 and task["status"] == "queued" and task["coworker"] == "mina"
    # Nothing earlier was edited or removed.
    after = [(m.pk, m.content) async for m in Message.objects.order_by("position")]
    assert after[: len(before)] == before and len(after) == len(before) + 1
    regenerated = await Task.objects.aget(pk=task["id"])
    assert regenerated.origin == {"regenerates": 1, "person": bob.pk}  # asked again by bob


@pytest.mark.asyncio
async def test_a_double_click_or_a_second_tab_regenerates_once(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    other_tab, _ = await enter(bob, direct_channel)
    first = await ask(socket, "Draft the launch email", "c-1")
    await finish(first["id"])
    await settle(other_tab)

    await regenerate(socket, 1)
    events = await ChannelEvent.objects.acount()
    heard = await settle(other_tab)
    assert await regenerate(socket, 1) == []
    assert await regenerate(other_tab, 1) == []

    assert [f["type"] for f in heard] == ["message", "task"], "the other tab sees the new task once"
    assert await Task.objects.acount() == 2
    assert await ChannelEvent.objects.acount() == events


@pytest.mark.asyncio
async def test_only_the_last_ended_reply_can_be_regenerated(bob, direct_channel, enter, nudge_checks):
    socket, _ = await enter(bob, direct_channel)
    first = await ask(socket, "First", "c-1")

    running = await regenerate(socket, 1)
    await finish(first["id"])
    second = await ask(socket, "Second", "c-2")
    await finish(second["id"])
    older = await regenerate(socket, 1)
    missing = await regenerate(socket, 9)
    malformed = [await regenerate(socket, turn) for turn in (0, "1", None, True, -1)]

    assert [f["code"] for f in running] == ["busy"]
    assert [f["code"] for f in older] == ["not_last"]
    assert older[0]["detail"] == "Only the last reply of a conversation can be regenerated."
    assert [f["code"] for f in missing] == ["not_found"]
    assert [[f["code"] for f in frames] for frames in malformed] == [["bad_frame"]] * 5
    assert await Task.objects.acount() == 2


@pytest.mark.asyncio
async def test_regenerate_counts_against_the_instruction_rate_limit(bob, direct_channel, enter, nudge_checks, settings):
    settings.INSTRUCTIONS_PER_MINUTE = 1
    socket, _ = await enter(bob, direct_channel)
    first = await ask(socket, "Draft the launch email", "c-1")
    await finish(first["id"])

    frames = await regenerate(socket, 1)

    assert [f["code"] for f in frames] == ["rate_limited"]
    assert frames[0]["detail"].startswith("You are sending instructions faster than 1 a minute")
    assert await Task.objects.acount() == 1


@pytest.mark.asyncio
async def test_a_meetings_replies_are_not_regenerated(bob, office, mina, enter, nudge_checks):
    from channels.db import database_sync_to_async

    from office.models import Channel

    meeting = await database_sync_to_async(Channel.objects.create)(office=office, kind=Channel.Kind.MEETING, name="Launch review")
    socket, _ = await enter(bob, meeting)
    first = await ask(socket, "Agenda: the launch date", "c-1")
    await finish(first["id"])

    frames = await regenerate(socket, 1)

    assert [f["code"] for f in frames] == ["not_here"]
    assert await Task.objects.acount() == 1
