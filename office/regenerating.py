"""The "Regenerate" button: the last reply of a conversation asked for again, as a new task with the same
instruction. History stays append-only: the old instruction and reply stay as they were.
ORM and the pipeline only; must not import a provider or the consumer.
"""

from __future__ import annotations

from collections.abc import Callable

from sessions import posting, services
from sessions.models import Message, Session, Task

from .models import Channel

OPEN = (Task.Status.QUEUED, Task.Status.RUNNING)


def client_id_of(task: Task) -> str:
    """The regenerated task's client_id names the task it re-asks: a double click, a second tab or a
    resend after a reconnect regenerate it once (post_instruction's own idempotency)."""
    return f"regenerate:{task.pk}"


def regenerate(
    *, channel: Channel, turn: int, language: str = "en", person=None, admit: Callable[[], None] | None = None
) -> Task:
    """Post the instruction of the active session's task `turn` again, as a new task.

    Only the last task, once it has ended: an older one would be answered out of order, and a
    running one is still answering. Refusals are InstructionRejected, like an instruction's;
    `admit` is the sender's rate limit, called only when a new task is about to be stored.
    """
    if channel.kind == Channel.Kind.MEETING:
        # A meeting's turns are its agenda's rounds, run by the meeting itself, not re-asked one by one.
        raise posting.InstructionRejected("not_here", "A meeting's replies cannot be regenerated.")
    task = Task.objects.filter(session__channel=channel, session__status=Session.Status.ACTIVE, turn=turn).first()
    if task is None:
        raise posting.InstructionRejected("not_found", "There is no such reply in this conversation.")
    client_id = client_id_of(task)
    if not Task.objects.filter(session__channel=channel, client_id=client_id).exists():
        if task.session.tasks.filter(turn__gt=task.turn).exists():
            raise posting.InstructionRejected("not_last", "Only the last reply of a conversation can be regenerated.")
        if task.status in OPEN:
            raise posting.InstructionRejected("busy", "This reply is still being written: stop it or wait for it first.")
    instruction = (
        services.task_messages(task.session, turn=task.turn)
        .filter(role=Message.Role.USER)
        .values_list("content", flat=True)
        .first()
    )
    return posting.post_instruction(
        channel=channel,
        text=instruction or "",
        client_id=client_id,
        language=language,
        origin={"regenerates": task.turn},
        person=person,
        admit=admit,
    )
