"""Background jobs of the sessions app: thin, idempotent, retried with backoff.

Each takes an id and calls a service; Celery runs them in production, the
server's thread pool in the embedded default (office.background).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from coworkers.providers import ProviderError
from office.background import job

from . import folding, memory, nudge, pipeline

log = logging.getLogger(__name__)


@job(retry_on=(ProviderError,), max_retries=5)
def fold_session(session_id: int, through_turn: int) -> None:
    folding.fold_summary(session_id=session_id, through_turn=through_turn)


@job(retry_on=(ProviderError,), max_retries=3)
def extract_task_memory(task_id: int) -> None:
    memory.extract_memory(task_id=task_id)


@job(retry_on=(pipeline.TaskBusy,), max_retries=20)
def run_task(task_id: int) -> None:
    pipeline.run_task(task_id)


@job()
def check_nudge(session_id: int, trigger: str, language: str = "en") -> None:
    """After an instruction is stored and acknowledged: show the long-conversation nudge if it is due."""
    nudge.maybe_nudge(session_id, trigger, language)


@job()
def requeue_stalled_tasks() -> int:
    """Run by Celery beat in production (every REQUEUE_EVERY_SECONDS): send again the tasks whose
    delivery was lost (a broker restart empties its queues) or whose worker died. Returns how many."""
    # STALLED_AFTER_SECONDS: long enough that a normal delivery (or its wait behind an earlier
    # task of the session) would have claimed the task.
    stalled = pipeline.stalled_tasks(timezone.now(), queued_for=timedelta(seconds=settings.STALLED_AFTER_SECONDS))
    for task_id in stalled:
        run_task.enqueue(task_id)
    if stalled:
        log.warning("sent %d stalled task(s) again: %s", len(stalled), stalled[:20])
    return len(stalled)
