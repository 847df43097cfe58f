"""Background jobs: one function, run by Celery workers in production or by a thread
pool inside the server process in the embedded default, with the same retries.

Jobs are enqueued after the transaction commits, so a worker never looks for a
row that is not there yet. Never run a job body on the event loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connections, transaction

from . import unavailable

log = logging.getLogger(__name__)

# Two kinds of work, each with its queue (Celery) or its pool of threads (embedded):
# replies, which mostly wait on the model's stream, so many run at once; and upkeep (folds,
# memory extraction), CPU work that must never take a reply's place. "celery" is Celery's
# default queue: a plain `celery -A office worker` serves replies.
REPLIES = "celery"
UPKEEP = "upkeep"
_pools = {
    REPLIES: ThreadPoolExecutor(max_workers=settings.EMBEDDED_REPLY_THREADS, thread_name_prefix="replies"),
    UPKEEP: ThreadPoolExecutor(max_workers=1, thread_name_prefix="upkeep"),
}
_in_flight: set[Future] = set()
_in_flight_lock = threading.Lock()
# Set when the server begins to stop (shutdown): no new job starts, and a job's retry wait ends.
_closing = threading.Event()
# Set when the grace period is over: running work leaves at its next stop check (pipeline.StopCheck).
_leaving = threading.Event()


def backoff_seconds(attempt: int, base: float = 2.0, cap: float = 300.0) -> float:
    """2, 4, 8, … seconds, capped: time for a rate limit or an outage to pass."""
    return min(cap, base * 2**attempt)


class Job:
    def __init__(self, func: Callable[..., Any], *, retry_on: tuple[type[BaseException], ...], max_retries: int, queue: str):
        self.func = func
        self.name = f"{func.__module__}.{func.__name__}"
        self.retry_on = retry_on
        self.max_retries = max_retries
        self.queue = queue

        def body(task, *args):
            try:
                return func(*args)
            except retry_on as error:
                if not _retryable(error):
                    raise
                raise task.retry(exc=error, countdown=_wait_after(error, task.request.retries))

        self.celery_task = shared_task(bind=True, name=self.name, max_retries=max_retries, queue=queue)(body)

    def __call__(self, *args: Any) -> Any:
        return self.func(*args)

    def enqueue(self, *args: Any) -> None:
        if settings.BACKGROUND_WORK == "celery":
            transaction.on_commit(partial(self._publish, *args))
        else:
            transaction.on_commit(partial(_submit, self.queue, self._run_in_pool, *args))

    def _publish(self, *args: Any) -> None:
        try:
            self.celery_task.delay(*args)
        except unavailable.ERRORS as error:
            # The broker is away after the commit: what was committed stands (a person's instruction
            # is stored), and a task left queued is sent again by the stalled-task sweeper.
            log.error("%s%r could not be sent to the broker: %s", self.name, args, error)

    def run_here(self, *args: Any, sleep: Callable[[float], Any] | None = None) -> Any:
        """Run in this thread with a worker's retries; a final failure is logged, not raised.
        The server stopping ends a retry wait: the job is left for the next start to do again."""
        sleep = sleep or _closing.wait
        for attempt in range(self.max_retries + 1):
            if attempt and _closing.is_set():
                log.info("%s%r not retried: the server is stopping", self.name, args)
                return None
            try:
                return self.func(*args)
            except self.retry_on as error:
                if not _retryable(error) or attempt == self.max_retries:
                    log.exception("%s%r failed for good after %d attempt(s)", self.name, args, attempt + 1)
                    return None
                wait = _wait_after(error, attempt)
                log.warning("%s%r failed (%s); retrying in %.0f s", self.name, args, error, wait)
                sleep(wait)
            except Exception:
                log.exception("%s%r failed", self.name, args)
                return None
        return None

    def _run_in_pool(self, *args: Any) -> Any:
        close_old_connections()
        try:
            return self.run_here(*args)
        finally:
            # A pool thread's connections must not outlive the job (SQLite locks, PostgreSQL slots).
            connections.close_all()


def _submit(queue: str, function: Callable[..., Any], *args: Any) -> None:
    if _closing.is_set():
        # Follow-up work asked for while the server stops (a finished task's memory extraction and
        # fold, a queued task): dropped, because it is asked for again. The next task asks for any
        # fold still due, and a memory extraction that never ran and a task left queued are sent
        # again with the next instruction to the session (tasks.lost_memory_extractions,
        # pipeline.abandoned_tasks).
        log.info("%s%r not started: the server is stopping", _name(function), args)
        return
    try:
        future = _pools[queue].submit(function, *args)
    except RuntimeError:
        # The pool is shut down (the interpreter is exiting): the same as above.
        log.info("%s%r not started: the pool is shut down", _name(function), args)
        return
    with _in_flight_lock:
        _in_flight.add(future)
    future.add_done_callback(_forget)


def _name(function: Callable[..., Any]) -> str:
    job = getattr(function, "__self__", None)
    return getattr(job, "name", None) or getattr(function, "__qualname__", repr(function))


def _forget(future: Future) -> None:
    with _in_flight_lock:
        _in_flight.discard(future)


def drain(timeout: float = 60.0) -> bool:
    """Wait until in-process jobs (including jobs they start) have finished. Tests use it
    so that no job outlives the test that started it. False if it timed out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _in_flight_lock:
            pending = list(_in_flight)
        if not pending:
            return True
        wait(pending, timeout=max(deadline - time.monotonic(), 0))
    return False


def shutdown(grace: float | None = None) -> bool:
    """Stop the in-process jobs for a server that is stopping (SIGTERM; asgi.py calls this before
    Daphne's reactor stops). Jobs not started are dropped (their work is asked for again, see
    _submit); running ones get `grace` seconds to finish (a reply mid-stream usually does), then
    are asked to leave at their next stop check, storing nothing more, to be resumed on the next
    start. Never raises; True if everything finished within the grace period."""
    grace = settings.SHUTDOWN_GRACE_SECONDS if grace is None else grace
    _closing.set()
    for pool in _pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    if drain(timeout=grace):
        return True
    log.warning("background work still running %.0f s after the server began to stop; asking it to leave", grace)
    _leaving.set()
    drain(timeout=5)
    return False


def every(seconds: float, function: Callable[[], Any]) -> threading.Thread:
    """Call `function` now and then every `seconds` on a thread of its own, until the server
    stops (shutdown). What it raises is logged, and the next round comes as usual."""

    def rounds() -> None:
        while True:
            try:
                function()
            except Exception:
                log.exception("%s failed; trying again in %.0f s", _name(function), seconds)
            if _closing.wait(seconds):
                return

    thread = threading.Thread(target=rounds, name=f"every-{seconds:g}s", daemon=True)
    thread.start()
    return thread


def closing() -> bool:
    return _closing.is_set()


def leaving() -> bool:
    """Running work must stop now and store nothing more (the grace period of a shutdown is over)."""
    return _leaving.is_set()


def _retryable(error: BaseException) -> bool:
    return getattr(error, "retryable", True)


def _wait_after(error: BaseException, attempt: int) -> float:
    # An error may know how long to wait (a lease that has to run out); else back off.
    return getattr(error, "retry_in", None) or backoff_seconds(attempt)


def job(
    *, retry_on: tuple[type[BaseException], ...] = (), max_retries: int = 5, queue: str = UPKEEP
) -> Callable[[Callable], Job]:
    return lambda func: Job(func, retry_on=retry_on, max_retries=max_retries, queue=queue)

