"""The history store: sessions, tasks and the append-only message chain, and JSONL in and out.

The only place that turns rows into sessions.history values and back. Views,
commands, consumers and tasks call these functions; none writes a Message itself.
"""

from dataclasses import dataclass, replace
from typing import Iterable, Iterator

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from office import rendering
from office.models import Channel

from . import history, jsonl, relevance, search
from .models import Message, Session, Task


class SessionEnded(Exception):
    """An ended session is read-only: its history is kept, nothing is added."""


class ImportRejected(ValueError):
    """A JSONL file that cannot become a session; `line` names the line at fault."""

    def __init__(self, line: int | None, problem: str) -> None:
        self.line = line
        super().__init__(f"line {line}: {problem}" if line else problem)


# Sessions ------------------------------------------------------------------


def get_active_session(*, channel: Channel) -> Session:
    """The channel's active session, opening the first one if there is none."""
    session = Session.objects.filter(channel=channel, status=Session.Status.ACTIVE).first()
    if session:
        return session
    try:
        with transaction.atomic():
            return Session.objects.create(channel=channel)
    except IntegrityError:
        # Another request opened it between our read and our insert.
        return Session.objects.get(channel=channel, status=Session.Status.ACTIVE)


def start_session(*, channel: Channel, carried_note: str = "") -> Session:
    """End the channel's active session, if any, and open a new one (with a note carried from the old one)."""
    with transaction.atomic():
        end_active_session(channel=channel)
        return Session.objects.create(channel=channel, carried_note=carried_note)


def end_active_session(*, channel: Channel) -> int:
    """Returns how many sessions it ended (0 or 1)."""
    return Session.objects.filter(channel=channel, status=Session.Status.ACTIVE).update(
        status=Session.Status.ENDED, ended_at=timezone.now()
    )


# Appending -----------------------------------------------------------------


def start_task(*, session: Session, instruction: str, html: str | None = None, **task_fields) -> tuple[Task, Message]:
    """Store a new instruction as the next task, before any model sees it.

    `task_fields` are the Task's own (coworker, client_id, origin, handed_off_from). No
    savepoint of its own inside the caller's transaction: a caller that catches its failure
    and goes on must open one around the call. A caller inside a transaction passes `html`
    (rendering.render(instruction), done before it opened it): rendering holds no lock.
    """
    if not instruction.strip():
        raise ValueError("An instruction needs some text.")
    html = rendering.render(instruction) if html is None else html
    with transaction.atomic(savepoint=False):  # as events.send_event: nobody goes on after a failure
        lock_active(session)
        last = Task.objects.filter(session=session).order_by("-turn").values_list("turn", flat=True).first()
        task = Task.objects.create(session=session, turn=(last or 0) + 1, **task_fields)
        message = _append_locked(session, turn=task.turn, role=Message.Role.USER, content=instruction, html=html)
    return task, message


def append_message(
    *,
    session: Session,
    turn: int,
    role: str,
    content: str = "",
    tool_calls: Iterable[history.ToolCall] = (),
    tool_call_id: str = "",
    coworker: str = "",
    html: str | None = None,
) -> Message:
    """Append one message to the end of the session's chain and store it now, with its HTML.

    Appends to one session are serialized (a row lock on PostgreSQL, the
    IMMEDIATE write lock on SQLite); the chain's unique constraints are the
    guard behind that, so two concurrent appends can never fork the chain.
    The content is rendered before the transaction begins; a caller already in
    one passes `html` (rendering.render(content)) rendered before it began.
    """
    html = rendering.render(content) if html is None else html
    # jieba's words now, outside the write lock: indexing inside reads them from relevance's cache.
    relevance.search_terms(content)
    with transaction.atomic():
        lock_active(session)
        return _append_locked(
            session,
            turn=turn,
            role=role,
            content=content,
            tool_calls=tuple(tool_calls),
            tool_call_id=tool_call_id,
            coworker=coworker,
            html=html,
        )


def lock_active(session: Session) -> None:
    """Hold the session's row for the rest of the transaction (appends to it wait), or raise
    SessionEnded if it is no longer the active one."""
    status = Session.objects.select_for_update().filter(pk=session.pk).values_list("status", flat=True).first()
    if status != Session.Status.ACTIVE:
        raise SessionEnded(f"Session {session.pk} has ended; start a new conversation to continue.")


def _append_locked(
    session: Session,
    *,
    turn: int,
    role: str,
    content: str,
    tool_calls: tuple[history.ToolCall, ...] = (),
    tool_call_id: str = "",
    coworker: str = "",
    html: str,
) -> Message:
    if role not in history.ROLES:
        raise ValueError(f"Unknown role {role!r}.")
    if tool_calls and role != Message.Role.ASSISTANT:
        raise ValueError("Only an assistant message can make tool calls.")
    if (role == Message.Role.TOOL) != bool(tool_call_id):
        raise ValueError("A tool result, and only a tool result, names the tool call it answers.")
    if role != Message.Role.USER and not Task.objects.filter(session=session, turn=turn).exists():
        raise ValueError(f"Session {session.pk} has no task {turn} to add to.")
    # Turns may interleave: a task still working when the next instruction arrives keeps appending.
    last = Message.objects.filter(session=session).order_by("-position").only("id", "position").first()
    message = Message.objects.create(
        session=session,
        position=last.position + 1 if last else 1,
        previous=last,
        turn=turn,
        role=role,
        content=content,
        tool_calls=[_tool_call_to_json(call) for call in tool_calls],
        tool_call_id=tool_call_id,
        coworker=coworker,
    )
    search.index_messages([message], channel_id=session.channel_id)
    # In the message's transaction, so the HTML exists exactly when the message does; the event
    # that announces it (events.send_event) reads it from there.
    rendering.store([(message.pk, html)])
    return message


# Reading -------------------------------------------------------------------


def task_messages(session: Session, **turns) -> QuerySet[Message]:
    """Messages of some of a session's tasks (`turn=…`, `turn__gt=…`, `turn__in=…`), in chain order.

    Ordered by turn, then position: turns never decrease along the chain, so this is
    the chain's order, and the (session, turn, position) index serves it as it is. Ordered
    by position alone, SQLite reads every message of the session to avoid a sort.
    """
    return Message.objects.filter(session=session, **turns).order_by("turn", "position")


def load_records(session: Session) -> list[history.Record]:
    """The whole session in chain order (the chain, not the position column, decides)."""
    rows = Message.objects.filter(session=session).order_by("position")
    return history.order_chain(record_from_row(row) for row in rows)


# What a Record needs of a Message row, read as plain values: building a model instance
# for every row would cost more than the prompt built from them (sessions.prompts).
RECORD_COLUMNS = ("id", "previous_id", "turn", "role", "content", "coworker", "created_at", "tool_calls", "tool_call_id")


def records_of(rows: QuerySet[Message]) -> list[history.Record]:
    """The rows' Records, in the queryset's order, without building Message instances."""
    return [_record(*values) for values in rows.values_list(*RECORD_COLUMNS)]


def record_from_row(row: Message) -> history.Record:
    return _record(*(getattr(row, column) for column in RECORD_COLUMNS))


def _record(id_, previous, turn, role, content, coworker, created_at, tool_calls, tool_call_id) -> history.Record:
    """A Record from a Message row's RECORD_COLUMNS, in that order."""
    return history.Record(
        id=str(id_),
        previous=str(previous) if previous else None,
        turn=turn,
        role=role,
        content=content,
        coworker=coworker or None,
        created_at=created_at,
        tool_calls=_tool_calls_from_json(tool_calls),
        tool_call_id=tool_call_id or None,
    )


def _tool_calls_from_json(calls: list[dict]) -> tuple[history.ToolCall, ...]:
    return tuple(history.ToolCall(id=call["id"], name=call["name"], args=call.get("args", {})) for call in calls)


def _tool_call_to_json(call: history.ToolCall) -> dict:
    return {"id": call.id, "name": call.name, "args": dict(call.args)}


# JSONL ---------------------------------------------------------------------


def export_session(session: Session) -> Iterator[str]:
    """The session as JSONL lines (each ends with a newline), task by task.

    A task still working when the next instruction arrived kept appending after it, so the
    stored chain can interleave two turns. The export lists each task's records together, in
    the order prompts read them (turn, then position), linked in that order: an import, which
    refuses turns that go back, takes it whole and rebuilds the same tasks.
    """
    previous: str | None = None
    for record in sorted(load_records(session), key=lambda r: r.turn):  # stable: chain order within a turn
        yield jsonl.dumps_record(replace(record, previous=previous)) + "\n"
        previous = record.id


@dataclass(frozen=True)
class ImportResult:
    session: Session
    tasks: int
    messages: int
    skipped_lines: tuple[int, ...]
    repaired_tool_calls: tuple[str, ...]

    def summary(self) -> dict:
        """The one-line report import_session prints (README, "Commands")."""
        return {
            "session": self.session.pk,
            "tasks": self.tasks,
            "messages": self.messages,
            "skipped_lines": len(self.skipped_lines),
            "repaired_tool_calls": len(self.repaired_tool_calls),
        }


def import_session(*, channel: Channel, data: str | bytes) -> ImportResult:
    """Import a JSONL history as the channel's new active session: all of it, or nothing.

    The channel's current session, if any, is ended (as "start a new
    conversation" would). Records get new ids; their order and links are kept.
    """
    try:
        parsed = jsonl.parse_jsonl(data)
    except jsonl.JsonlError as error:
        raise ImportRejected(error.line, error.problem) from error
    if not parsed.records:
        if parsed.skipped_lines:
            (line,) = parsed.skipped_lines  # only the last line is ever skipped
            raise ImportRejected(
                line, "the file holds no records: its only line was cut off by an interrupted write (no newline, not JSON)"
            )
        raise ImportRejected(None, "the file holds no records")
    # Every check runs before anything is written: a refused file changes nothing.
    line_of = dict(zip((record.id for record in parsed.records), parsed.lines))
    try:
        records = history.order_chain(parsed.records)
    except history.ChainError as error:
        raise ImportRejected(line_of.get(error.record_id), str(error)) from error
    if (fault := history.order_fault(records)) is not None:
        record_id, problem = fault
        raise ImportRejected(line_of[record_id], problem)
    tasks = history.group_tasks(records)
    rebuilt = history.rebuild_messages(records)
    # Rendered before the transaction, so SQLite's write lock is not held while markdown runs.
    html = [rendering.render(record.content) for record in records]
    # And the search index's words, for the same reason (jieba over Chinese is the slow part).
    words = [
        search.message_words(r.role, r.content, [_tool_call_to_json(call) for call in r.tool_calls]) for r in records
    ]

    with transaction.atomic():
        end_active_session(channel=channel)
        session = Session.objects.create(channel=channel, started_at=records[0].created_at or timezone.now())
        interrupted_turns = {
            task.turn for task in tasks if any(call in rebuilt.repaired_tool_calls for call in _call_ids(task))
        }
        Task.objects.bulk_create(_task_row(session, task, interrupted_turns) for task in tasks)
        rows = Message.objects.bulk_create(_message_rows(session, records))
        search.index_messages(rows, channel_id=channel.pk, words=words)
        rendering.store((row.pk, markup) for row, markup in zip(rows, html))
    return ImportResult(
        session=session,
        tasks=len(tasks),
        messages=len(records),
        skipped_lines=parsed.skipped_lines,
        repaired_tool_calls=rebuilt.repaired_tool_calls,
    )


def _call_ids(task: history.TaskRecords) -> Iterator[str]:
    for record in task.records:
        for call in record.tool_calls:
            yield call.id


def _task_row(session: Session, task: history.TaskRecords, interrupted_turns: set[int]) -> Task:
    first, last = task.records[0], task.records[-1]
    interrupted = task.turn in interrupted_turns
    return Task(
        session=session,
        turn=task.turn,
        status=Task.Status.FAILED if interrupted else Task.Status.DONE,
        error="Interrupted: a tool call never returned a result (imported history)." if interrupted else "",
        created_at=first.created_at or timezone.now(),
        started_at=first.created_at,
        finished_at=last.created_at,
    )


def _message_rows(session: Session, records: list[history.Record]) -> Iterator[Message]:
    previous: Message | None = None
    now = timezone.now()
    for position, record in enumerate(records, start=1):
        row = Message(
            session=session,
            position=position,
            previous=previous,
            turn=record.turn,
            role=record.role,
            content=record.content,
            tool_calls=[_tool_call_to_json(call) for call in record.tool_calls],
            tool_call_id=record.tool_call_id or "",
            coworker=record.coworker or "",
            created_at=record.created_at or now,
        )
        previous = row
        yield row
