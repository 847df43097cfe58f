"""After a task: folding and memory run in the background, in-process or on a real Celery worker."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from sessions import services, upkeep
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

    upkeep.after_task(task)  # outside a transaction: the jobs are handed to the pool at once

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
