"""#all-hands: a message nobody needs to answer ends done with a visible notice; several answers are
each brief and said by their own coworker. The channel websocket on the full ASGI app, with the
in-process runner and the offline responder (as `make run`)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from coworkers.providers.scripted import Reply, ScriptedProvider
from office.models import Channel
from sessions import pipeline, posting, services
from sessions.models import Message, Task
from tests.office.test_consumer import drain_background, enter, receive_until, sockets  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]
HEADS_UP = "Heads-up: the office is closed on Friday. Any concerns?"


@pytest.fixture
def all_hands(office, mina, theo) -> Channel:
    return Channel.objects.create(office=office, kind=Channel.Kind.ALL_HANDS, name="all-hands")


@pytest.fixture
def in_process(settings):
    settings.BACKGROUND_WORK = "inprocess"


async def send_and_finish(socket, text: str) -> list[dict]:
    """Send an instruction and read every frame up to its task's final state."""
    await socket.send_json_to({"type": "instruction", "text": text})
    frames = []
    while True:
        frames += await receive_until(socket, "task", timeout=20)
        if frames[-1]["status"] not in ("queued", "running"):
            return frames


@pytest.mark.asyncio
async def test_a_message_nobody_needs_to_answer_ends_done_saying_no_one_had_anything_to_add(bob, all_hands, enter, in_process):
    socket, _ = await enter(bob, all_hands)

    frames = await send_and_finish(socket, HEADS_UP)

    assert frames[-1]["status"] == "done" and frames[-1]["error"] == ""
    notices = [f["message"] for f in frames if f["type"] == "message" and f["message"]["role"] == "notice"]
    assert [n["content"] for n in notices] == [pipeline.NOBODY_ANSWERED]
    assert notices[0]["turn"] == frames[0]["message"]["turn"], "under the message it answers"
    await sync_to_async(drain_background)()
    assert await Message.objects.filter(role="assistant").acount() == 0

    # Sending it again (what Retry does) ends the same way: done, never failed.
    again = await send_and_finish(socket, HEADS_UP)
    assert again[-1]["status"] == "done"
    assert await Task.objects.filter(status="failed").acount() == 0
    await sync_to_async(drain_background)()


def test_a_resumed_task_with_nobody_to_answer_says_so_once(all_hands, frames, no_background):
    task = posting.post_instruction(channel=all_hands, text=HEADS_UP)
    assert task.responders == [] and task.coworker == ""

    pipeline.run_task(task.pk)
    Task.objects.filter(pk=task.pk).update(status=Task.Status.QUEUED)  # delivered again, as after a crash
    done = pipeline.run_task(task.pk)

    assert done.status == Task.Status.DONE
    notices = services.task_messages(done.session, turn=done.turn).filter(role="notice")
    assert list(notices.values_list("content", flat=True)) == [pipeline.NOBODY_ANSWERED]


def test_when_several_answer_each_reply_is_theirs_and_they_are_asked_to_be_brief(all_hands, frames, no_background):
    task = posting.post_instruction(channel=all_hands, text="@mina @theo the launch moved to May 4: anything to flag?")
    provider = ScriptedProvider([Reply("Copy needs the new date."), Reply("No blockers from engineering.")])

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    replies = services.task_messages(done.session, turn=done.turn).filter(role="assistant")
    assert list(replies.values_list("coworker", "content")) == [
        ("mina", "Copy needs the new date."),
        ("theo", "No blockers from engineering."),
    ]
    for request, name in zip(provider.requests, ("Mina", "Theo")):
        assert request.system[0].startswith(f"You are {name}")
        assert "answer briefly" in request.system[0]


def test_offline_the_second_to_answer_does_not_repeat_the_first(office, all_hands, frames, no_background):
    from coworkers.providers.offline import NOTHING_TO_ADD, OfflineResponder
    from sessions.models import MemoryItem

    MemoryItem.objects.create(office=office, text="The office closes at noon on Friday.", kind="company")
    task = posting.post_instruction(channel=all_hands, text="@mina @theo the office closes on Friday: anything to flag?")

    done = pipeline.run_task(task.pk, provider=OfflineResponder())

    replies = services.task_messages(done.session, turn=done.turn).filter(role="assistant")
    (mina, first), (theo, second) = replies.values_list("coworker", "content")
    assert (mina, theo) == ("mina", "theo")
    assert first.count("\n- ") == 1 and "closes at noon on Friday (from memory)" in first, "brief: one line"
    assert second == NOTHING_TO_ADD
