"""The history store's values: records, their chain, tasks, and rebuilding them for a model.
Pure: imports only the standard library and langchain_core.messages (no Django, no ORM, no I/O)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

ROLES = ("user", "assistant", "tool", "notice")

INTERRUPTED_TOOL_RESULT = (
    "Error: this tool call was interrupted before it returned a result "
    "(the process stopped). Do not assume it ran."
)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Record:
    """One message of a session, as stored: append-only, never edited."""

    id: str
    previous: str | None
    turn: int
    role: str
    content: str = ""
    coworker: str | None = None
    created_at: datetime | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        # A misspelt role would otherwise be silently left out of every prompt.
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")


class ChainError(ValueError):
    def __init__(self, message: str, record_id: str | None) -> None:
        super().__init__(message)
        self.record_id = record_id


def order_chain(records: Iterable[Record]) -> list[Record]:
    """Return the records in chain order: the head (previous None), then each one's successor.

    Raises ChainError naming the first fault found: a duplicate id, a `previous`
    that names no record, a fork (two records with one `previous`), no head or
    several heads, or records that the head never reaches (a cycle).
    """
    by_id: dict[str, Record] = {}
    for record in records:
        if record.id in by_id:
            raise ChainError(f"duplicate id {record.id}", record.id)
        by_id[record.id] = record
    if not by_id:
        return []

    successor: dict[str | None, Record] = {}
    for record in by_id.values():
        if record.previous is not None and record.previous not in by_id:
            raise ChainError(f"record {record.id} follows {record.previous}, which is not in the session", record.id)
        if record.previous in successor:
            if record.previous is None:
                raise ChainError(f"more than one head: {successor[None].id} and {record.id}", record.id)
            raise ChainError(
                f"fork: {successor[record.previous].id} and {record.id} both follow {record.previous}", record.id
            )
        successor[record.previous] = record
    if None not in successor:
        # Name a record, so the import can name its line: the first one, which a cycle follows too.
        first = next(iter(by_id.values()))
        raise ChainError(f"no head: every record follows another one (a cycle), {first.id} among them", first.id)

    ordered: list[Record] = []
    current = successor.get(None)
    while current is not None:
        ordered.append(current)
        current = successor.get(current.id)
    if len(ordered) < len(by_id):
        # With one head, no fork and no dangling link, whatever is left is a loop.
        reached = {record.id for record in ordered}
        stray = next(record for record in by_id.values() if record.id not in reached)
        raise ChainError(f"record {stray.id} is not reachable from the head (a cycle)", stray.id)
    return ordered


def _has_text(content: Any) -> bool:
    # Claude rejects empty and whitespace-only text blocks alike.
    return bool(content.strip()) if isinstance(content, str) else bool(content)


# Characters that show nothing: white space, controls, and format characters such as the zero-width
# space and joiners, the word joiner, the byte order mark and the soft hyphen.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def is_visible(text: str) -> bool:
    """Whether a person would see any of the text: an instruction of only zero-width characters is empty."""
    return any(not char.isspace() and unicodedata.category(char) not in _INVISIBLE_CATEGORIES for char in text)


def order_fault(records: Sequence[Record]) -> tuple[str, str] | None:
    """The first reason records in chain order are not a history as it is lived, as (record id, problem).

    As lived, for an import (live sessions let a task that is still working append after the next
    instruction; an import must not, or its report, its tasks' statuses and its prompts would
    disagree about which task a record belongs to): turns start at 1 and count up by one along
    the chain, never back; each turn opens with the user's instruction, which has visible text,
    and holds no other user record; a tool result answers, once, a call made earlier in its own
    turn.
    """
    turn = 0
    calls: dict[str, bool] = {}  # the current turn's tool call ids -> answered yet
    for record in records:
        if record.turn != turn:
            if record.turn < turn:
                return record.id, f"turn {record.turn} comes after turn {turn}; turns never go back along the chain"
            if record.turn != turn + 1:
                return record.id, f"turn {record.turn} where turn {turn + 1} was expected; turns count up from 1"
            if record.role != "user":
                return record.id, f"turn {record.turn} begins with a {record.role} record, not the user's instruction"
            if not is_visible(record.content):
                return record.id, f"the instruction of turn {record.turn} is empty (nothing visible in it)"
            turn, calls = record.turn, {}
        elif record.role == "user":
            return record.id, f"a second user record in turn {turn}; each instruction begins a turn of its own"
        for call in record.tool_calls:
            calls.setdefault(call.id, False)
        if record.role == "tool":
            answered = calls.get(record.tool_call_id or "")
            if answered is None:
                return record.id, (
                    f"tool result for {record.tool_call_id} answers no tool call made before it in turn {turn}; "
                    "a result belongs to the turn of its call"
                )
            if answered:
                return record.id, f"a second tool result for {record.tool_call_id} in turn {turn}"
            calls[record.tool_call_id or ""] = True
    return None


@dataclass(frozen=True)
class TaskRecords:
    turn: int
    records: tuple[Record, ...]

    @property
    def instruction(self) -> str:
        return next((record.content for record in self.records if record.role == "user"), "")

    def transcript(self, user_label: str = "User") -> str:
        """What was said, one line a message: the user's words and the coworkers' text (no tool traffic)."""
        lines = []
        for record in self.records:
            if record.role == "user":
                lines.append(f"{user_label}: {record.content}")
            elif record.role == "assistant" and _has_text(record.content):
                lines.append(f"{record.coworker or 'Coworker'}: {record.content}")
        return "\n".join(lines)

    @property
    def final_answer(self) -> str:
        answers = [r.content for r in self.records if r.role == "assistant" and _has_text(r.content)]
        return answers[-1] if answers else ""


def group_tasks(records: Sequence[Record]) -> list[TaskRecords]:
    """Group records (in chain order) into tasks, by turn, in turn order.

    Turns may interleave in the chain: when a new instruction arrives while an
    earlier task is still working, the earlier task's last messages come after
    it. Each task keeps its own records in chain order.
    """
    by_turn: dict[int, list[Record]] = {}
    for record in records:
        by_turn.setdefault(record.turn, []).append(record)
    return [TaskRecords(turn=turn, records=tuple(by_turn[turn])) for turn in sorted(by_turn)]


@dataclass(frozen=True)
class Rebuilt:
    messages: tuple[BaseMessage, ...]
    repaired_tool_calls: tuple[str, ...]
    dropped_tool_results: tuple[str, ...]


def rebuild_messages(records: Sequence[Record]) -> Rebuilt:
    """Turn records (in chain order) into the messages a model is sent.

    Left out: notices (for people only); everything before the first user
    record with text (a model conversation must open with the user, so an
    import that starts mid-conversation loses its head, and no user record with
    text at all gives no messages); user records with no text and assistant
    records with neither text nor tool calls (they should not exist, and Claude
    rejects empty text); a repeated tool call id within one assistant record
    (only the first is kept). Records left out of the prompt stay in the store.
    A tool call id already used earlier in the conversation is sent as
    "<id>~2" (and its results with it), since providers require unique ids.

    Repaired, so the sequence stays valid (see find_faults): a tool call whose
    result never arrived gets a synthetic error result at the end of the block
    of results right after its assistant message (reported in
    repaired_tool_calls); a tool result that does not answer an open call of the
    assistant message opening its block (an orphan, a second result for one
    call, or a result that arrives after another message sent to the model) is
    left out (reported in dropped_tool_results). Records that are left out, such
    as a notice, do not break a block: the model never sees them.
    """
    start = next((i for i, r in enumerate(records) if r.role == "user" and _has_text(r.content)), len(records))
    messages: list[BaseMessage] = []
    repaired: list[str] = []
    dropped: list[str] = []
    # Calls of the latest AIMessage still waiting for a result (stored id -> id
    # sent); only results for these may follow until the next human or AI
    # message closes the block.
    waiting: dict[str, str] = {}
    sent_ids: set[str] = set()

    def close_block() -> None:
        for call_id, sent_id in waiting.items():
            messages.append(ToolMessage(INTERRUPTED_TOOL_RESULT, tool_call_id=sent_id, status="error"))
            repaired.append(call_id)
        waiting.clear()

    def unique_id(call_id: str) -> str:
        # Claude rejects a conversation that reuses a tool_use id anywhere in it;
        # scripted and hand-written histories often do ("toolu_1" every task).
        sent_id, n = call_id, 1
        while sent_id in sent_ids:
            n += 1
            sent_id = f"{call_id}~{n}"
        sent_ids.add(sent_id)
        return sent_id

    for record in records[start:]:
        if record.role == "tool":
            if record.tool_call_id in waiting:
                sent_id = waiting.pop(record.tool_call_id)
                messages.append(ToolMessage(record.content, tool_call_id=sent_id, id=record.id))
            else:
                dropped.append(record.tool_call_id or "")
        elif record.role == "user" and _has_text(record.content):
            close_block()
            messages.append(HumanMessage(record.content, id=record.id))
        elif record.role == "assistant" and (record.tool_calls or _has_text(record.content)):
            close_block()
            calls: dict[str, ToolCall] = {}
            for call in record.tool_calls:
                calls.setdefault(call.id, call)
            waiting.update({call_id: unique_id(call_id) for call_id in calls})
            tool_calls = [
                {"name": call.name, "args": dict(call.args), "id": waiting[call.id], "type": "tool_call"}
                for call in calls.values()
            ]
            messages.append(AIMessage(record.content, tool_calls=tool_calls, id=record.id))
    close_block()
    return Rebuilt(tuple(messages), tuple(repaired), tuple(dropped))


@dataclass(frozen=True)
class Fault:
    index: int
    message_id: str | None
    tool_call_id: str | None
    problem: str
    # Only for the reader of str(fault); two faults are the same fault whatever it says.
    kind: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        details = [part for part in (self.kind, self.message_id and f"id {self.message_id}") if part]
        where = f"message {self.index}" + (f" ({', '.join(details)})" if details else "")
        return f"{where}: {self.problem}"


class InvalidSequence(ValueError):
    def __init__(self, faults: Sequence[Fault]) -> None:
        super().__init__("invalid message sequence:\n" + "\n".join(f"  {fault}" for fault in faults))
        self.faults = list(faults)


def find_faults(messages: Sequence[BaseMessage]) -> list[Fault]:
    """Name every reason a provider (Claude, the strictest) would reject this sequence, by index.

    Rules: system messages only as a leading run; then a human message first;
    no empty human message, no AI message with neither text nor tool calls;
    tool call ids unique in the whole sequence; every tool call answered in the
    run of tool messages right after its AI message, and every tool message in
    that run answering a still open call of that AI message.
    """
    faults: list[Fault] = []

    def fault(index: int, problem: str, tool_call_id: str | None = None) -> None:
        message = messages[index]
        faults.append(Fault(index, message.id, tool_call_id, problem, kind=message.type))

    if not any(not isinstance(message, SystemMessage) for message in messages):
        return [Fault(0, None, None, "nothing to send: no messages besides system messages")]

    opener: int | None = None  # index of the AIMessage whose tool-result block we are in
    waiting: dict[str, None] = {}
    answered: set[str] = set()
    used_by: dict[str, int] = {}  # tool call id -> the message that first made it

    def close_block() -> None:
        nonlocal opener
        for call_id in waiting:
            fault(opener, f"tool call {call_id} has no tool result immediately after it", call_id)
        waiting.clear()
        answered.clear()
        opener = None

    leading_system = True
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            close_block()
            if not leading_system:
                fault(index, "system message after the start of the conversation")
            continue
        if leading_system and not isinstance(message, HumanMessage):
            fault(index, "the conversation must start with a human message")
        leading_system = False

        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in waiting:
                del waiting[call_id]
                answered.add(call_id)
            elif call_id in answered:
                fault(index, f"tool result for {call_id} answers a call that already has a result", call_id)
            elif opener is None:
                fault(index, f"tool result for {call_id} does not follow an AI message that made that call", call_id)
            else:
                fault(index, f"tool result for {call_id} answers no call of message {opener}", call_id)
            continue

        close_block()
        if isinstance(message, HumanMessage):
            if not _has_text(message.content):
                fault(index, "human message has no text")
        elif isinstance(message, AIMessage):
            if not message.tool_calls and not _has_text(message.content):
                fault(index, "AI message has neither text nor tool calls")
            for call in message.tool_calls:
                if call["id"] in waiting:
                    fault(index, f"tool call id {call['id']} appears twice in one message", call["id"])
                elif call["id"] in used_by:
                    fault(index, f"tool call id {call['id']} was already used by message {used_by[call['id']]}", call["id"])
                used_by.setdefault(call["id"], index)
                waiting[call["id"]] = None
            opener = index if waiting else None
        else:
            fault(index, f"unsupported message type {type(message).__name__}")
    close_block()
    faults.sort(key=lambda f: f.index)
    return faults


def validate_messages(messages: Sequence[BaseMessage]) -> None:
    """Raise InvalidSequence listing every fault; never send a sequence a provider would reject."""
    faults = find_faults(messages)
    if faults:
        raise InvalidSequence(faults)
