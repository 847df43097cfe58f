"""A real Celery worker, killed in the middle of a task, against Redis, PostgreSQL and the real SDK."""

import os
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from sessions import services
from sessions.models import Task
from tests.conftest import requires_postgres, requires_redis
from tests.coworkers.fake_anthropic import FakeAnthropic, Reply
from tests.sessions.test_background import ROOT, _database_url, wait_for


def worker_children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(line) for line in out.split()]


@requires_redis
@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_task_loses_and_duplicates_nothing(direct_channel, settings):
    settings.BACKGROUND_WORK = "celery"
    fake = FakeAnthropic().start()
    # The first answer streams slowly: the worker is killed while it is in flight.
    fake.add(Reply("Thinking it over " * 300, chunk_size=6, delay=0.02), Reply("Here is the whole answer."))
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(connection.settings_dict),
        "BACKGROUND_WORK": "celery",
        "ANTHROPIC_API_KEY": fake.api_key,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "TASK_LEASE_SECONDS": "2",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "office", "worker", "--pool=prefork", "--concurrency=1",
         "--loglevel=WARNING", "--queues=crash-test"],
        cwd=ROOT,
        env=env,
    )
    try:
        session = services.get_active_session(channel=direct_channel)
        task, _ = services.start_task(session=session, instruction="Think it over, then answer.", coworker="mina", responders=["mina"])
        from sessions import tasks

        tasks.run_task.celery_task.apply_async(args=(task.pk,), queue="crash-test")
        assert wait_for(lambda: len(fake.requests) == 1 and Task.objects.get(pk=task.pk).status == "running", timeout=60)
        time.sleep(0.5)  # mid-stream

        children = worker_children(worker.pid)
        assert children, "the prefork child is running the task"
        for child in children:
            os.kill(child, signal.SIGKILL)

        # The message is requeued (reject on worker lost); the lease runs out; the task resumes.
        assert wait_for(lambda: Task.objects.get(pk=task.pk).status in ("done", "failed"), timeout=90)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        fake.stop()

    task.refresh_from_db()
    assert task.status == "done", task.error
    assert task.attempts == 2
    stored = list(services.task_messages(session, turn=task.turn).values_list("role", "content"))
    assert stored == [("user", "Think it over, then answer."), ("assistant", "Here is the whole answer.")]
    assert len(fake.requests) == 2
