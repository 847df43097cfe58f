"""What follows a finished task: memory extraction, its vector and folding (the search index is written with each message).

Live tasks enqueue the slow parts in the background (sessions.tasks.after_task); an imported session
catches up inline, fold batch by fold batch, as if it had been lived.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from coworkers.providers import Provider

from . import folding, history, memory, prompts, vectors
from .models import Message, Session, Task
from .services import record_from_row

log = logging.getLogger(__name__)


def catch_up(
    session: Session, *, provider: Provider | None = None, progress: Callable[[str], None] = lambda line: None
) -> bool:
    """Extract and fold a whole imported session now (the import indexed it), in the order it happened.

    Runs after the import committed, so it must never leave the channel broken: each step is
    one transaction and idempotent, and a step that fails (a model that is down, a fold that
    fails) stops the catch-up there, said through `progress`, and returns False. What it did
    stands; the session works without the rest (less memory and summary), and running
    catch_up again does only what is left.
    """
    rows = Message.objects.filter(session=session).order_by("position")
    all_tasks = history.group_tasks([record_from_row(row) for row in rows])
    task_ids = dict(Task.objects.filter(session=session).values_list("turn", "pk"))
    for task in all_tasks:
        try:
            memory.extract_memory(task_id=task_ids[task.turn], provider=provider)
            # Fold one batch at a time, so the summary grows as it would have in use.
            batch = prompts.resolve_policy(session.channel).fold_batch
            while (done := _summarized(session)) < (target := folding.fold_target(session, completed=task.turn)):
                step = min(target, done + batch)
                with transaction.atomic():
                    folding.fold_summary(session_id=session.pk, through_turn=step, provider=provider)
                if _summarized(session) <= done:
                    break  # nothing to fold in that range: do not spin
                progress(f"folded tasks {done + 1}–{step} into the summary")
        except Exception as error:  # noqa: BLE001 - the import is committed; say why the rest waits
            log.exception("catching up session %s stopped at task %s", session.pk, task.turn)
            progress(
                f"catching up stopped at task {task.turn} ({type(error).__name__}: {error}); the session is "
                "imported and usable, with the tasks before it extracted and folded"
            )
            return False
    progress(f"extracted memory from {len(all_tasks)} task(s)")
    # Last: the search by meaning is an addition, and what it lacks the words still find.
    return embed_session(session, progress=progress)


# Exchanges embedded per step: a few seconds of CPU, then a progress line.
EMBED_STEP = 200


def embed_session(session: Session, *, progress: Callable[[str], None] = lambda line: None) -> bool:
    """The vectors the session's exchanges lack (sessions.vectors), a step at a time; False,
    said through `progress`, when it failed. Idempotent: a second run embeds only what is left."""
    if not vectors.enabled():
        return True
    turns = list(Task.objects.filter(session=session).order_by("turn").values_list("turn", flat=True))
    written = 0
    for start in range(0, len(turns), EMBED_STEP):
        try:
            step = vectors.embed_exchanges(session, turns[start : start + EMBED_STEP])
        except Exception as error:  # noqa: BLE001 - as in catch_up: what is done stands, say why the rest waits
            log.exception("embedding session %s stopped at task %s", session.pk, turns[start])
            progress(f"embedding stopped at task {turns[start]} ({type(error).__name__}: {error}); the session "
                     "is usable, and what is not embedded is found by its words")
            return False
        written += step
        if step and len(turns) > EMBED_STEP:
            progress(f"embedded tasks up to {turns[min(start + EMBED_STEP, len(turns)) - 1]} of {turns[-1]}")
    if written:
        progress(f"embedded {written} exchange(s) for the search by meaning")
    return True


def _summarized(session: Session) -> int:
    summary = prompts.latest_summary(session)
    return summary.through_turn if summary else 0

