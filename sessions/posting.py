"""Posting: an instruction or a message is stored, then shown to the channel.

post_instruction validates an instruction, stores it as a new task of the channel's
active session, shows it and sends `instruction_stored`, from which the jobs module
(sessions.tasks) starts the work. post_message stores one message of a task and shows
it. The runner (sessions.pipeline), the tools (coworkers.tools) and meetings
(sessions.meetings) all post through here, and this module imports none of them: see
docs/architecture.md, "Layers".
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.dispatch import Signal

from coworkers.models import Coworker
from coworkers.providers import Provider, get_provider
from coworkers.routing import NotInChannel, choose_responders
from office import events, rendering
from office.models import Channel

from . import relevance, senders, services
from .jsonl import record_to_dict
from .models import Message, Session, Task

log = logging.getLogger(__name__)

MAX_INSTRUCTION_CHARS = 20_000

# Sent inside the transaction that stores a new instruction, with its `task` and `language`. The
# jobs module (sessions.tasks) starts the work from it, enqueued for after the commit: posting sits
# below the runner, which posts too, so it cannot import the job that runs the runner.
instruction_stored = Signal()


class InstructionRejected(ValueError):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def waiting_instructions(session: Session, person_id: int) -> int:
    """How many of this person's instructions in the session are still waiting for their reply."""
    return Task.objects.filter(
        session=session, status__in=[Task.Status.QUEUED, Task.Status.RUNNING], origin__person=person_id
    ).count()


def refuse_if_many_waiting(session: Session, person_id: int) -> None:
    """A conversation answers in order, so in a shared channel one person sending as fast as the
    rate allows would put everyone else's instruction behind all of theirs: at most
    WAITING_INSTRUCTIONS_PER_PERSON of one person's may wait. Exact with the session's row locked
    (post_instruction checks once without the lock, then again under it), so instructions sent at
    the same moment from several tabs are counted one after the other."""
    limit = settings.WAITING_INSTRUCTIONS_PER_PERSON
    if waiting_instructions(session, person_id) >= limit:
        raise InstructionRejected(
            "rate_limited",
            f"{limit} of your instructions here are still waiting for replies, so this one was not sent. "
            "Send it once one of them is answered.",
        )


def post_instruction(
    *,
    channel: Channel,
    text: str,
    client_id: str = "",
    coworker: Coworker | None = None,
    origin: dict | None = None,
    person=None,
    handed_off_from: Task | None = None,
    provider: Provider | None = None,
    language: str = "en",
    admit: Callable[[], None] | None = None,
) -> Task:
    """Store an instruction as a new task of the channel's active session, show it, and announce it
    (`instruction_stored`), which starts the work.

    `person` is the user who typed it (none for a coworker's handoff or a meeting's follow-up):
    kept in the task's origin, so the others in a shared channel see who asked.
    A resend with the same `client_id` returns the task it already created. `language`
    is the one the long-conversation nudge is shown in, if this task makes it due.
    `admit` is called once the instruction is known to be new, before anything is
    stored; it may raise to refuse it (the sender's rate limit: a resend costs nothing).
    """
    text = text.strip()
    if not text:
        raise InstructionRejected("empty", "An instruction needs some text.")
    if not has_visible_text(text):
        # Zero-width spaces, joiners, BOMs…: nothing a coworker (or the person reading later) can see.
        raise InstructionRejected("invalid", "An instruction needs some visible text.")
    if len(text) > MAX_INSTRUCTION_CHARS:
        raise InstructionRejected("too_long", f"An instruction can be at most {MAX_INSTRUCTION_CHARS:,} characters.")
    client_id = client_id[:64]
    if client_id and (existing := Task.objects.filter(session__channel=channel, client_id=client_id).first()):
        return same_instruction(existing, text)
    if person is not None:
        # First without the lock: refused here, it costs no routing call and no place in the
        # sender's rate. Counted again below, where it is exact.
        refuse_if_many_waiting(services.get_active_session(channel=channel), person.pk)
    if admit is not None:
        admit()
    try:
        responders = [coworker] if coworker else choose_responders(channel, text, provider or get_provider())
    except NotInChannel as outsiders:
        raise InstructionRejected("not_member", str(outsiders)) from None
    html = rendering.render(text)  # before the transaction: rendering must hold no lock
    # And jieba's words, which indexing inside the transaction then reads from relevance's cache:
    # 19,000 Chinese characters took half a second of jieba, with SQLite's write lock held.
    relevance.search_terms(text)
    try:
        with transaction.atomic():
            session = services.get_active_session(channel=channel)
            if person is not None:  # a person's, not a handoff's or a meeting's follow-up
                services.lock_active(session)  # before the count: the count and the insert are one step
                if client_id and (existing := Task.objects.filter(session=session, client_id=client_id).first()):
                    # A resend that waited here for its original to be stored: that task is the one.
                    return same_instruction(existing, text)
                refuse_if_many_waiting(session, person.pk)
            task, message = services.start_task(
                session=session,
                instruction=text,
                html=html,
                coworker=responders[0].slug if responders else "",
                responders=[c.slug for c in responders],
                client_id=client_id,
                origin={**(origin or {}), "person": person.pk} if person is not None else origin or {},
                handed_off_from=handed_off_from,
            )
            names = senders.coworker_names(channel.office_id) if senders.needs_coworker_names([task.origin]) else {}
            message_payload = senders.with_sender(
                message_json(message), task.origin, names, {person.pk: senders.display_name(person)} if person is not None else {}
            )
            if client_id:
                # The sending tab knows its instruction by this, not by its words: in a shared
                # channel another member may send the same "yes" at the same moment.
                message_payload["client_id"] = client_id
            events.send_event(channel.pk, "message", message=message_payload)
            events.send_event(channel.pk, "task", **task_json(task))
            instruction_stored.send(sender=Task, task=task, language=language)
        log.info("task %s (session %s, turn %s) stored in channel %s", task.pk, session.pk, task.turn, channel.pk)
    except IntegrityError:
        # The same client_id raced in from another connection: that task is the one.
        existing = Task.objects.filter(session__channel=channel, client_id=client_id).first() if client_id else None
        if existing is None:
            raise
        return same_instruction(existing, text)
    return task


# Letters and marks that draw nothing: the Braille blank, Hangul fillers, the combining grapheme
# joiner, Khmer's inherent vowels, the Mongolian vowel separator.
BLANK_CHARACTERS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u034f\u17b4\u17b5\u180e")


def has_visible_text(text: str) -> bool:
    """Anything but whitespace, invisible format characters (Unicode category Cf: zero-width
    space and joiners, word joiner, BOM, direction marks) and the blanks above."""
    return any(
        not char.isspace() and char not in BLANK_CHARACTERS and unicodedata.category(char) != "Cf" for char in text
    )


def same_instruction(existing: Task, text: str) -> Task:
    """A resend is the same task only if it says the same thing: a client_id reused for other words
    is a client bug, and acknowledging it with the old task would silently drop the new words."""
    if instruction_of(existing).strip() != text:
        raise InstructionRejected(
            "conflict", "This client_id was already used for another instruction, so this one was not sent."
        )
    return existing


def instruction_of(task: Task) -> str:
    return (
        services.task_messages(task.session, turn=task.turn)
        .filter(role=Message.Role.USER)
        .values_list("content", flat=True)
        .first()
    ) or ""


def post_message(*, session, turn: int, role: str, content: str = "", **fields) -> Message:
    """Store one message of a task (services.append_message: `fields` are its tool calls, tool call
    id, coworker and HTML) and show it to the channel."""
    message = services.append_message(session=session, turn=turn, role=role, content=content, **fields)
    events.send_event(session.channel_id, "message", message=message_json(message))
    return message


# Event payloads ---------------------------------------------------------------------


def message_json(message: Message) -> dict:
    return record_to_dict(services.record_from_row(message))


def task_json(task: Task) -> dict:
    return {"id": task.pk, "turn": task.turn, "status": task.status, "error": task.error, "coworker": task.coworker}
