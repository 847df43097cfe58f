"""The JSONL export format of the history store: one record a line, strict on read, crash tolerant at the end.
Imports only the standard library and sessions.history; append_record is its only I/O."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessions.history import ROLES, Record, ToolCall

_KEYS = ("id", "previous", "turn", "role", "content", "tool_calls", "tool_call_id", "coworker", "created_at")
_CALL_KEYS = ("id", "name", "args")

# What an imported record may hold. The dates: PostgreSQL and Python both refuse some years a
# time zone can push a date into (0001-01-01T00:00+14:00 is in year 0 in UTC), and nothing a
# session records happened before 1970 or will after 9000.
EARLIEST_YEAR, LATEST_YEAR = 1970, 9000
MAX_CONTENT_CHARS = 1_000_000
MAX_ARGS_CHARS = 1_000_000
MAX_ARGS_DEPTH = 50
# The columns they go to (sessions.models.Message): longer fails on PostgreSQL, and not on SQLite.
MAX_COWORKER_CHARS, MAX_TOOL_CALL_ID_CHARS = 60, 200
# PostgreSQL stores neither NUL nor a lone surrogate (UTF-8 cannot encode one); SQLite stores
# both and every page that shows them fails later. Refused wherever they are in a record.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


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


# Characters other readers take for a line break (Python's str.splitlines, editors, JavaScript)
# that json leaves raw with ensure_ascii=False: escaped, so a record is one line for them too.
_OTHER_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dumps_record(record: Record) -> str:
    # ensure_ascii=False keeps Chinese text readable; json still escapes \n, \r and the
    # other control characters inside strings, so a record is always exactly one line.
    line = json.dumps(record_to_dict(record), ensure_ascii=False, separators=(",", ":"))
    return line.translate(_OTHER_LINE_BREAKS)


def dump_records(records: Iterable[Record]) -> str:
    return "".join(dumps_record(record) + "\n" for record in records)


def _show(value: Any) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        shown = f"a {type(value).__name__}"
    # A lone surrogate would make the message itself unprintable.
    shown = _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", shown)
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
            raise fail(f'unknown key {_show(key)}')
    if (where := _unstorable(data, 0)) is not None:
        raise fail(where)
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
    if len(content) > MAX_CONTENT_CHARS:
        raise fail(f'"content" is {len(content):,} characters; at most {MAX_CONTENT_CHARS:,} are accepted')
    coworker = text('"coworker"', data.get("coworker"), nullable=True)
    if coworker is not None and len(coworker) > MAX_COWORKER_CHARS:
        raise fail(f'"coworker" must be at most {MAX_COWORKER_CHARS} characters, got {_show(coworker)}')
    created_at = _created_at(data.get("created_at"), fail)

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
            if (problem := _args_problem(call["args"])) is not None:
                raise fail(f'"args" of tool call {number} {problem}')
            tool_calls.append(ToolCall(id=call_id, name=name, args=call["args"]))

    tool_call_id = None
    if role == "tool":
        tool_call_id = text('"tool_call_id" (required on a tool record)', data.get("tool_call_id"))
        if len(tool_call_id) > MAX_TOOL_CALL_ID_CHARS:
            raise fail(f'"tool_call_id" must be at most {MAX_TOOL_CALL_ID_CHARS} characters, got {_show(tool_call_id)}')
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


def _created_at(value: Any, fail) -> datetime | None:
    """An aware UTC datetime, or None. A naive date and time is read as UTC, as exports write UTC."""
    if value is None:
        return None
    problem = f'"created_at" must be an ISO 8601 date and time or null, got {_show(value)}'
    if not isinstance(value, str):
        raise fail(problem)
    try:
        parsed = datetime.fromisoformat(value)
        parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except ValueError:
        raise fail(problem) from None
    except OverflowError:  # the offset pushes it out of years 1–9999
        parsed = None
    if parsed is None or not EARLIEST_YEAR <= parsed.year <= LATEST_YEAR:
        raise fail(f'"created_at" must be between the years {EARLIEST_YEAR} and {LATEST_YEAR} in UTC, got {_show(value)}')
    return parsed


def _unstorable(value: Any, depth: int, where: str = "") -> str | None:
    """Where a NUL or a lone surrogate is in a parsed line (keys included), or None."""
    if isinstance(value, str):
        match = _UNSTORABLE.search(value)
        if match is None:
            return None
        what = "a NUL character" if match.group() == "\x00" else f"a lone surrogate (U+{ord(match.group()):04X})"
        return f"{where or 'a string'} holds {what}, which cannot be stored"
    if depth > MAX_ARGS_DEPTH:
        return None  # _args_problem refuses the depth
    if isinstance(value, dict):
        for key, item in value.items():
            if _UNSTORABLE.search(key):
                return _unstorable(key, depth, f"a key in {where}" if where else "a key")
            label = f'"{key}"' if depth == 0 else where
            if (found := _unstorable(item, depth + 1, label)) is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            if (found := _unstorable(item, depth + 1, where)) is not None:
                return found
    return None


def _args_problem(args: dict) -> str | None:
    """Why tool call arguments cannot be stored as JSON everywhere, or None."""

    def walk(value: Any, depth: int) -> str | None:
        if depth > MAX_ARGS_DEPTH:
            return f"are nested more than {MAX_ARGS_DEPTH} levels deep"
        if isinstance(value, float) and not math.isfinite(value):
            return "hold a number too large to store"
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return next((problem for item in items if (problem := walk(item, depth + 1)) is not None), None)

    problem = walk(args, 0)
    if problem is None and len(json.dumps(args, ensure_ascii=False)) > MAX_ARGS_CHARS:
        problem = f"are over {MAX_ARGS_CHARS:,} characters as JSON"
    return problem


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


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
            # A trailing \r is JSON whitespace. NaN and Infinity are not JSON, and PostgreSQL refuses them.
            value = json.loads(line, parse_constant=_reject_constant)
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
        except ValueError as error:  # NaN or Infinity, an integer of over 4,300 digits
            raise JsonlError(number, f"not valid JSON: {error}") from None
        except RecursionError:
            raise JsonlError(number, "not valid JSON: nested too deeply") from None
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
