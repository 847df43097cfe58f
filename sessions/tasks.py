"""Background jobs of the sessions app: thin, idempotent, retried with backoff.

Each takes an id and calls a service; Celery runs them in production, the
server's thread pool in the embedded default (office.background).
"""

from coworkers.providers import ProviderError
from office.background import job

from . import folding, memory, nudge, pipeline


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
