"""Background jobs of the sessions app: thin, idempotent, retried with backoff.

Each takes an id and calls a service; Celery runs them in production, the
server's thread pool in the embedded default (office.background). This is the top
of the sessions layers (docs/architecture.md, "Layers"): the modules below announce
what happened (posting.instruction_stored, pipeline.task_finished) and the receivers at the end of this
module enqueue what follows, so no module below imports the jobs.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.dispatch import receiver
from django.utils import timezone

from coworkers.providers import ProviderError
from office import background
from office.background import job

from . import folding, memory, nudge, pipeline, posting, vectors
from .models import Task

log = logging.getLogger(__name__)

# A finished task whose memory extraction has not run after MEMORY_LOST_AFTER (longer than a
# busy queue keeps a job waiting) is sent again, until MEMORY_SWEEP_WITHIN after it finished,
# at most every MEMORY_RESEND_SPACING.
MEMORY_LOST_AFTER = timedelta(minutes=10)
MEMORY_SWEEP_WITHIN = timedelta(hours=1)
MEMORY_RESEND_SPACING = timedelta(minutes=5)


@job(retry_on=(ProviderError,), max_retries=5)
def fold_session(session_id: int, through_turn: int) -> None:
    folding.fold_summary(session_id=session_id, through_turn=through_turn)


@job(retry_on=(ProviderError,), max_retries=3)
def extract_task_memory(task_id: int) -> None:
    memory.extract_memory(task_id=task_id)


@job()
def embed_task(task_id: int) -> None:
    """A finished task's exchange, as a vector for recall's search by meaning."""
    task = Task.objects.select_related("session").filter(pk=task_id).first()
    if task is not None:
        vectors.embed_exchanges(task.session, [task.turn])


@job(retry_on=(pipeline.TaskBusy,), max_retries=20, queue=background.REPLIES)
def run_task(task_id: int) -> None:
    """A task's reply, then the next queued task of its conversation.

    A delivery that finds an earlier task of the conversation still to finish ends at once instead
    of waiting: twelve instructions sent in a burst held the embedded server's reply threads asleep
    in retries, and people in other offices waited two minutes for theirs. The conversation's tasks
    pass the turn on instead, one at a time. A delivery of a task a live worker holds is retried
    by Celery once its lease may have run out (a killed worker's task comes back at once; a retry
    waits in the broker, not in a thread); the embedded server, whose thread would sleep through
    it, leaves it to its sweep and to the conversation's next instruction (abandoned_tasks)."""
    try:
        pipeline.run_task(task_id)
    except pipeline.TaskBusy as busy:
        if not busy.behind_earlier and settings.BACKGROUND_WORK == "celery":
            raise
        log.info("task %s: not now (%s)", task_id, busy)
    finally:
        # Whatever became of this delivery: the next task goes once this one has ended (a
        # failure that left it queued or running passes nothing on; the sweep sends it again).
        _pass_the_turn(task_id)


def _pass_the_turn(task_id: int) -> None:
    """Send the conversation's next task. Best effort, and never in the way of the delivery's own
    outcome (this runs in a `finally`): what it fails to send, the sweep sends."""
    try:
        if (following := pipeline.next_in_line(task_id)) is not None:
            run_task.enqueue(following)
    except Exception:  # the database or the broker unreachable: any failure here has the same remedy
        log.exception("task %s: could not send the next task of its conversation; the sweep will", task_id)


@job()
def check_nudge(session_id: int, trigger: str, language: str = "en") -> None:
    """After an instruction is stored and acknowledged: show the long-conversation nudge if it is due."""
    nudge.maybe_nudge(session_id, trigger, language)


# The embedded server has no beat: a memory extraction it dropped while stopping is sent again
# with the session's next instruction, once the task finished this long ago (its own job has run).
EMBEDDED_MEMORY_LOST_AFTER = timedelta(seconds=30)


def lost_memory_extractions(session_id: int) -> list[int]:
    """The session's finished tasks whose memory extraction never ran, each at most every
    MEMORY_RESEND_SPACING (a model that keeps failing is not asked at every instruction)."""
    now = timezone.now()
    candidates = memory.unextracted_tasks(
        now, older_than=EMBEDDED_MEMORY_LOST_AFTER, within=MEMORY_SWEEP_WITHIN, session_id=session_id
    )
    return [
        task_id
        for task_id in candidates
        if cache.add(f"memory-resent:{task_id}", True, timeout=MEMORY_RESEND_SPACING.total_seconds())
    ]


@job()
def requeue_stalled_tasks() -> int:
    """Run by Celery beat in production (every REQUEUE_EVERY_SECONDS): send again the tasks whose
    delivery was lost (a broker restart empties its queues) or whose worker died, and memory
    extractions whose delivery was lost. Returns how many tasks it sent again."""
    # STALLED_AFTER_SECONDS: long enough that a normal delivery (or its wait behind an earlier
    # task of the session) would have claimed the task.
    now, stalled_after = timezone.now(), timedelta(seconds=settings.STALLED_AFTER_SECONDS)
    stalled = pipeline.stalled_tasks(now, queued_for=stalled_after)
    for task_id in stalled:
        run_task.enqueue(task_id)
    if stalled:
        log.warning("sent %d stalled task(s) again: %s", len(stalled), stalled[:20])
    # Memory extraction is lost the same way. Each is sent again at most every MEMORY_RESEND_SPACING,
    # so a model that keeps failing is not asked every sweep. (Folds need no sweep: the next task's
    # upkeep asks for any fold still due.)
    lost = [
        task_id
        for task_id in memory.unextracted_tasks(now, older_than=MEMORY_LOST_AFTER, within=MEMORY_SWEEP_WITHIN)
        if cache.add(f"memory-resent:{task_id}", True, timeout=MEMORY_RESEND_SPACING.total_seconds())
    ]
    for task_id in lost:
        extract_task_memory.enqueue(task_id)
    if lost:
        log.warning("sent %d lost memory extraction(s) again: tasks %s", len(lost), lost[:20])
    return len(stalled)


# What starts the jobs ------------------------------------------------------------------


@receiver(posting.instruction_stored)
def start_work(sender=None, *, task: Task, language: str = "en", **signal) -> None:
    """A new instruction is stored (this runs inside its transaction; each job is sent after the
    commit): its reply, and the long-conversation nudge's check."""
    if settings.BACKGROUND_WORK != "celery":
        # Celery redelivers and beat's sweeper re-sends; only the embedded runner needs this.
        # The first is enough: each task sends the next when it ends (run_task).
        for earlier in pipeline.abandoned_tasks(task.session, before=task.turn)[:1]:
            run_task.enqueue(earlier)
        # The same for memory extraction a stopped server dropped (beat's sweeper does it in
        # production), at most every MEMORY_RESEND_SPACING per task, as there.
        for lost in lost_memory_extractions(task.session_id):
            extract_task_memory.enqueue(lost)
    run_task.enqueue(task.pk)
    check_nudge.enqueue(task.session_id, "instruction", language)


@receiver(pipeline.task_finished)
def after_task(sender=None, *, task: Task, **signal) -> None:
    """A task has finished (done, failed or stopped), inside or outside a transaction: its memory
    extraction, its vector, and the fold it makes due."""
    extract_task_memory.enqueue(task.pk)
    embed_task.enqueue(task.pk)
    if (target := folding.fold_due(task.session, completed=task.turn)) is not None:
        fold_session.enqueue(task.session_id, target)
