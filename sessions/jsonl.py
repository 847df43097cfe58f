"""The JSONL export format of the history store: one record a line, strict on read, crash tolerant at the end.
Imports only the standard library and sessions.history; append_record is its only I/O."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessions.history import ROLES, Record, ToolCall

_KEYS = ("id", "previous", "turn", "role", "content", "tool_calls", "tool_call_id", "coworker", "created_at")
_CALL_KEYS = ("id", "name", "args")


class JsonlError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.problem = message


def record_to_dict(record: Record) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": record.id,
        "previous": record.previous,
        "turn": record.turn,
        "role": record.role,
        "content": record.content,
    }
    if record.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "args": dict(c.args)} for c in record.tool_calls]
    if record.role == "tool":
        data["tool_call_id"] = record.tool_call_id
    data["coworker"] = record.coworker
    data["created_at"] = record.created_at.isoformat() if record.created_at else None
    return data


def dumps_record(record: Record) -> str:
    # ensure_ascii=False keeps Chinese text readable; json still escapes \n and
    # \r inside strings, so a record is always exactly one line.
    return json.dumps(record_to_dict(record), ensure_ascii=False, separators=(",", ":"))


def dump_records(records: Iterable[Record]) -> str:
    return "".join(dumps_record(record) + "\n" for record in records)


def _show(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def record_from_dict(data: Any, line_no: int) -> Record:
    """Build a Record from one parsed line, or raise JsonlError saying exactly what is wrong.

    A naive created_at is read as UTC. Tool call ids must be unique within a record.
    """

    def fail(message: str) -> JsonlError:
        return JsonlError(line_no, message)

    def text(label: str, value: Any, *, nullable: bool = False) -> Any:
        if (value is None and nullable) or (isinstance(value, str) and value):
            return value
        raise fail(f'{label} must be a non-empty string{" or null" if nullable else ""}, got {_show(value)}')

    if not isinstance(data, dict):
        raise fail(f"a record must be a JSON object, got {_show(data)}")
    for key in data:
        if key not in _KEYS:
            raise fail(f'unknown key "{key}"')
    for key in ("id", "previous", "turn", "role"):
        if key not in data:
            raise fail(f'missing key "{key}"')

    record_id = text('"id"', data["id"])
    previous = text('"previous"', data["previous"], nullable=True)
    turn = data["turn"]
    # bool is an int in Python, but true is not a turn.
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
        raise fail(f'"turn" must be a positive integer, got {_show(turn)}')
    role = data["role"]
    if role not in ROLES:
        raise fail(f'"role" must be one of {", ".join(ROLES)}, got {_show(role)}')
    content = data.get("content", "")
    if not isinstance(content, str):
        raise fail(f'"content" must be a string, got {_show(content)}')
    coworker = text('"coworker"', data.get("coworker"), nullable=True)

    created_at = data.get("created_at")
    if created_at is not None:
        try:
            created_at = datetime.fromisoformat(created_at)
        except (TypeError, ValueError):
            raise fail(f'"created_at" must be an ISO 8601 date and time or null, got {_show(created_at)}') from None
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)

    tool_calls: list[ToolCall] = []
    if "tool_calls" in data:
        if role != "assistant":
            raise fail(f'"tool_calls" is only allowed on an assistant record, not on a {role} record')
        if not isinstance(data["tool_calls"], list):
            raise fail(f'"tool_calls" must be a list, got {_show(data["tool_calls"])}')
        for number, call in enumerate(data["tool_calls"], 1):
            if not isinstance(call, dict) or set(call) != set(_CALL_KEYS):
                raise fail(f'tool call {number} must be an object with exactly the keys "id", "name" and "args"')
            call_id = text(f'"id" of tool call {number}', call["id"])
            if any(earlier.id == call_id for earlier in tool_calls):
                raise fail(f"tool call id {call_id} appears twice")
            name = text(f'"name" of tool call {number}', call["name"])
            if not isinstance(call["args"], dict):
                raise fail(f'"args" of tool call {number} must be an object, got {_show(call["args"])}')
            tool_calls.append(ToolCall(id=call_id, name=name, args=call["args"]))

    tool_call_id = None
    if role == "tool":
        tool_call_id = text('"tool_call_id" (required on a tool record)', data.get("tool_call_id"))
    elif "tool_call_id" in data:
        raise fail(f'"tool_call_id" is only allowed on a tool record, not on a {role} record')

    return Record(
        id=record_id,
        previous=previous,
        turn=turn,
        role=role,
        content=content,
        coworker=coworker,
        created_at=created_at,
        tool_calls=tuple(tool_calls),
        tool_call_id=tool_call_id,
    )


@dataclass(frozen=True)
class ParsedJsonl:
    records: tuple[Record, ...]
    skipped_lines: tuple[int, ...]
    lines: tuple[int, ...] = ()  # the line each record came from, so later checks can name it


def parse_jsonl(text: str | bytes) -> ParsedJsonl:
    """Read a JSONL export: all of it, or a JsonlError naming the first bad line.

    The one exception is an interrupted write: a last line with no newline
    that does not parse (bytes cut mid-character included, hence bytes are
    accepted) is skipped and reported in skipped_lines. Blank lines are
    ignored; a leading byte order mark and \\r\\n line ends are accepted.
    """
    # Split on \n only: str.splitlines would also split on U+2028 and other
    # separators that json.dumps(ensure_ascii=False) leaves unescaped in strings.
    lines = text.split(b"\n") if isinstance(text, bytes) else text.split("\n")
    records: list[Record] = []
    numbers: list[int] = []
    skipped: list[int] = []
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            value = json.loads(line)  # a trailing \r is JSON whitespace
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            if number == len(lines):  # no newline after it: the write was cut off
                skipped.append(number)
                continue
            if isinstance(error, UnicodeDecodeError):
                raise JsonlError(number, "not valid UTF-8") from None
            problem = f"not valid JSON: {error.msg} at column {error.colno}"
            if error.pos >= len(line.rstrip()):
                # Cut off, not garbled: a crash mid-write, then more lines appended after it.
                problem += " (the line looks cut off by an interrupted write; remove it to import the rest)"
            raise JsonlError(number, problem) from None
        records.append(record_from_dict(value, number))
        numbers.append(number)
    return ParsedJsonl(tuple(records), tuple(skipped), tuple(numbers))


def append_record(path: str | os.PathLike[str], record: Record) -> None:
    """Append one record to a JSONL file (created if missing) and fsync it.

    If a crash left the file ending mid-line, the broken line is ended first so
    the new record starts on a line of its own.
    """
    line = (dumps_record(record) + "\n").encode("utf-8")
    with open(path, "a+b") as file:
        if file.seek(0, os.SEEK_END) > 0:
            file.seek(-1, os.SEEK_END)
            if file.read(1) != b"\n":
                line = b"\n" + line
        # One write, so the separating newline and the record land together.
        file.write(line)
        file.flush()
        os.fsync(file.fileno())
