"""The embedded server has no beat: work a stopped server dropped is sent again with the session's
next instruction (queued tasks, and memory extractions that never ran)."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions import posting
from sessions.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def extractions(no_background, monkeypatch, settings) -> list[int]:
    settings.BACKGROUND_WORK = "inprocess"  # the embedded runner's path, on either database
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}}
    sent: list[int] = []
    monkeypatch.setattr("sessions.tasks.extract_task_memory.enqueue", sent.append)
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)
    return sent


def finished_without_memory(task: Task, ago: timedelta) -> None:
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, attempts=1, finished_at=timezone.now() - ago)


def test_it_sends_a_dropped_memory_extraction_again_with_the_next_instruction_once(direct_channel, frames, extractions):
    first = posting.post_instruction(channel=direct_channel, text="Our trial is 14 days", client_id="c-1")
    finished_without_memory(first, timedelta(minutes=2))

    posting.post_instruction(channel=direct_channel, text="Next one", client_id="c-2")
    posting.post_instruction(channel=direct_channel, text="And another", client_id="c-3")

    assert extractions == [first.pk], "sent again once, not at every instruction"


def test_it_leaves_a_task_that_just_finished_to_its_own_extraction(direct_channel, frames, extractions):
    first = posting.post_instruction(channel=direct_channel, text="Our trial is 14 days", client_id="c-1")
    finished_without_memory(first, timedelta(seconds=2))

    posting.post_instruction(channel=direct_channel, text="Next one", client_id="c-2")

    assert extractions == []


@pytest.mark.django_db(transaction=True)
def test_the_embedded_server_resumes_a_reply_a_restart_cut_off_without_waiting_for_the_next_instruction(
    direct_channel, monkeypatch
):
    """A reply left running by a server that stopped (its lease given up, or run out after a kill)
    is resumed once the server is back, as Celery beat's sweeper does in production."""
    from sessions.models import Message
    from tests.servers import daphne

    monkeypatch.setattr("sessions.tasks.run_task.enqueue", lambda *args: None)  # this process runs nothing
    task = posting.post_instruction(channel=direct_channel, text="What should the Team plan cost?", client_id="c-1")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.RUNNING, attempts=1, lease_until=timezone.now())

    with daphne(REQUEUE_EVERY_SECONDS="1"):
        deadline = timezone.now() + timedelta(seconds=30)
        while timezone.now() < deadline and Task.objects.get(pk=task.pk).status == Task.Status.RUNNING:
            time.sleep(0.3)

    assert Task.objects.get(pk=task.pk).status == Task.Status.DONE
    assert Message.objects.filter(session=task.session, turn=task.turn, role="assistant").exclude(content="").count() == 1


def test_the_sweep_stops_the_tasks_of_an_ended_conversation_and_never_starts_outside_daphne(direct_channel, monkeypatch):
    import threading

    import office.asgi  # noqa: F401  (imported as a test imports it: no sweep starts)
    from sessions import pipeline, services

    monkeypatch.setattr("sessions.tasks.run_task.enqueue", lambda *args: None)
    task = posting.post_instruction(channel=direct_channel, text="Queued, then the conversation ended", client_id="c-9")
    Task.objects.filter(pk=task.pk).update(created_at=timezone.now() - timedelta(hours=1))
    services.start_session(channel=direct_channel)

    assert task.pk in pipeline.stalled_tasks(timezone.now(), queued_for=timedelta(seconds=60))
    assert pipeline.claim(task.pk) is None, "its claim stops it: no model call"
    assert Task.objects.get(pk=task.pk).status == Task.Status.STOPPED
    assert task.pk not in pipeline.stalled_tasks(timezone.now(), queued_for=timedelta(seconds=60))
    assert not [t for t in threading.enumerate() if t.name.startswith("every-")]
