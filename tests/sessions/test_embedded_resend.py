"""The embedded server has no beat: work a stopped server dropped is sent again with the session's
next instruction (queued tasks, and memory extractions that never ran)."""

from __future__ import annotations

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
