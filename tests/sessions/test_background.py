"""After a task: folding and memory run in the background, in-process or on a real Celery worker."""

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from sessions import memory, services, tasks
from sessions.models import MemoryItem, SummaryVersion, Task
from tests.conftest import requires_postgres, requires_redis
from tests.sessions.test_prompts import imported

ROOT = Path(__file__).resolve().parents[2]


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.django_db(transaction=True)
def test_after_a_task_the_server_folds_and_remembers_in_the_background(settings, direct_channel):
    settings.BACKGROUND_WORK = "inprocess"
    session = imported(direct_channel, 11)
    task, _ = services.start_task(session=session, instruction="Remember that our launch is on May 4.")
    services.append_message(session=session, turn=task.turn, role="assistant", content="Noted: May 4.", coworker="mina")

    tasks.after_task(task=task)  # outside a transaction: the jobs are handed to the pool at once

    assert wait_for(lambda: SummaryVersion.objects.filter(session=session, through_turn=4).exists())
    assert wait_for(lambda: MemoryItem.objects.filter(text__contains="May 4").exists())
    assert Task.objects.get(pk=task.pk).memory_extracted_at is not None


@requires_redis
@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_celery_worker_folds_a_session(direct_channel):
    from sessions import tasks

    session = imported(direct_channel, 12)
    env = {
        **os.environ,
        # The worker must use the test database this test writes to.
        "DATABASE_URL": _database_url(connection.settings_dict),
        "BACKGROUND_WORK": "celery",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "office", "worker", "--pool=solo", "--loglevel=WARNING", "--queues=fold-test"],
        cwd=ROOT,
        env=env,
    )
    try:
        tasks.fold_session.celery_task.apply_async(args=(session.pk, 4), queue="fold-test")
        assert wait_for(lambda: SummaryVersion.objects.filter(session=session, through_turn=4).exists(), timeout=60)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert "$29" in SummaryVersion.objects.get(session=session).text


def _database_url(db: dict) -> str:
    user = db["USER"] or "postgres"
    auth = f"{user}:{db['PASSWORD']}@" if db["PASSWORD"] else f"{user}@"
    return f"postgres://{auth}{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def lost_extraction(session, *, instruction: str, finished_ago: timedelta, started: bool = True) -> Task:
    """A finished task whose memory-extraction job never arrived (the broker was away)."""
    task, _ = services.start_task(session=session, instruction=instruction)
    services.append_message(session=session, turn=task.turn, role="assistant", content="Noted.", coworker="mina")
    finished = timezone.now() - finished_ago
    Task.objects.filter(pk=task.pk).update(
        status=Task.Status.DONE if started else Task.Status.STOPPED,
        attempts=1 if started else 0,
        started_at=finished - timedelta(seconds=5) if started else None,
        finished_at=finished,
    )
    cache.delete(f"memory-resent:{task.pk}")  # ids come back between tests; the cache outlives them
    return task


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_extracts_the_memory_of_a_task_whose_job_was_lost(settings, direct_channel):
    settings.BACKGROUND_WORK = "inprocess"
    session = services.get_active_session(channel=direct_channel)
    task = lost_extraction(session, instruction="Remember that our launch is on May 4.", finished_ago=timedelta(minutes=15))

    tasks.requeue_stalled_tasks()

    assert wait_for(lambda: MemoryItem.objects.filter(text__contains="May 4").exists())
    assert Task.objects.get(pk=task.pk).memory_extracted_at is not None


@pytest.mark.django_db
def test_the_sweeper_chooses_only_recently_finished_tasks_never_extracted(direct_channel):
    session = services.get_active_session(channel=direct_channel)
    lost = lost_extraction(session, instruction="Remember the venue is Hall B.", finished_ago=timedelta(minutes=5))
    lost_extraction(session, instruction="Just finished; its job may be on its way.", finished_ago=timedelta(seconds=10))
    lost_extraction(session, instruction="Finished yesterday.", finished_ago=timedelta(days=1))
    lost_extraction(session, instruction="Stopped before anyone started.", finished_ago=timedelta(minutes=5), started=False)
    done = lost_extraction(session, instruction="Already extracted.", finished_ago=timedelta(minutes=5))
    Task.objects.filter(pk=done.pk).update(memory_extracted_at=timezone.now())
    # Imported: never claimed by a worker; the import extracts it itself, in order.
    imported_task = lost_extraction(session, instruction="Imported an hour's history.", finished_ago=timedelta(minutes=5))
    Task.objects.filter(pk=imported_task.pk).update(attempts=0)

    chosen = memory.unextracted_tasks(timezone.now(), older_than=timedelta(minutes=1), within=timedelta(hours=1))

    assert chosen == [lost.pk]


@pytest.mark.django_db
def test_the_sweeper_sends_a_lost_extraction_again_at_most_every_few_minutes(direct_channel, monkeypatch):
    # A model that keeps failing must not be asked again at every sweep (every 30 seconds).
    session = services.get_active_session(channel=direct_channel)
    lost = lost_extraction(session, instruction="Remember the venue is Hall B.", finished_ago=timedelta(minutes=15))
    sent = []
    monkeypatch.setattr(tasks.extract_task_memory, "enqueue", sent.append)

    tasks.requeue_stalled_tasks()
    tasks.requeue_stalled_tasks()

    assert sent == [lost.pk]
