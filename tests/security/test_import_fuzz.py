"""Any file given to import_session: it is imported, and then the channel page, the past conversation's
page, show_prompt and export_session all work; or it is refused naming a line, and nothing is stored
(no new session, message or task; the conversation the channel had is still the active one).

Files are plausible histories bent in every way a hand-made or hostile one can be: keys dropped,
added or given any type; dates from year 1 to 9999 in any zone, or none, or garbage; text with NUL,
lone surrogates, zero-width characters and Chinese; records shuffled, relinked, cut off; lines that
are not UTF-8, not JSON, blank, or CRLF-ended. Runs the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sessions import services
from sessions.models import Message, Session, Task

pytestmark = pytest.mark.django_db

HOSTILE_TEXT = ["", " ", "\u200b", "\ufeff\u2060", "\x00", "a\x00b", "\ud800", "x\udfff", "\ud83d\ude00", "😀", "音樂類", "\r\n", "<script>alert(1)</script>", "[" * 50, "*a" * 40]
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12) | st.sampled_from(HOSTILE_TEXT)
DATES = (
    st.none()
    | st.sampled_from(["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1970-01-01T00:00:00+00:00", "2026-11-01T09:00:00", "2026-02-30T10:00:00", "yesterday", ""])
    | st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat())
    | st.integers()
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
KEYS = ["id", "previous", "turn", "role", "content", "tool_calls", "tool_call_id", "coworker", "created_at", "extra"]


def plausible(n_tasks: int, calls: list[int]) -> list[dict]:
    """A valid history: each task an instruction, some tool calls and their results, an answer."""
    records: list[dict] = []

    def add(**fields) -> None:
        previous = records[-1]["id"] if records else None
        records.append({"id": f"r{len(records)}", "previous": previous, "content": "", "coworker": "mina", "created_at": "2026-11-01T09:00:00+00:00", **fields})

    for turn in range(1, n_tasks + 1):
        add(turn=turn, role="user", content=f"Instruction {turn}", coworker=None)
        for n in range(calls[turn - 1] if turn <= len(calls) else 0):
            call_id = f"toolu_{turn}_{n}"
            add(turn=turn, role="assistant", tool_calls=[{"id": call_id, "name": "read_document", "args": {"title": f"doc {n}"}}])
            add(turn=turn, role="tool", content=f"result {n}", tool_call_id=call_id)
        add(turn=turn, role="assistant", content=f"Answer **{turn}**")
    return records


@st.composite
def bent(draw) -> list[dict]:
    records = plausible(draw(st.integers(1, 4)), draw(st.lists(st.integers(0, 2), max_size=4)))
    if draw(st.integers(0, 3)) == 0:
        del records[draw(st.integers(1, len(records))) :]  # a history that stops mid-task
    for _ in range(draw(st.integers(0, 3))):
        record = records[draw(st.integers(0, len(records) - 1))]
        action = draw(st.sampled_from(["set", "set", "drop", "relink", "swap", "date", "text", "text", "text"]))
        key = draw(st.sampled_from(KEYS))
        if action == "set":
            record[key] = draw(JSON)
        elif action == "drop":
            record.pop(key, None)
        elif action == "relink":
            record["previous"] = draw(st.none() | st.sampled_from([r.get("id") for r in records]))
        elif action == "swap":
            i, j = draw(st.integers(0, len(records) - 1)), draw(st.integers(0, len(records) - 1))
            records[i], records[j] = records[j], records[i]
        elif action == "date":
            record["created_at"] = draw(DATES)
        else:
            field = draw(st.sampled_from(["content", "coworker", "id", "tool_call_id", "args", "name"]))
            text = draw(TEXT)
            calls = record.get("tool_calls")
            if field in ("args", "name") and isinstance(calls, list) and calls:
                call = calls[0]
                if isinstance(call, dict):
                    call.update({"args": {text: text}} if field == "args" else {"name": text})
            else:
                record[field] = text
    return records


@st.composite
def files(draw) -> bytes:
    """The records as a file, each line written one of the ways a file can come to be."""
    if draw(st.integers(0, 9)) == 0:
        values = draw(st.lists(JSON, max_size=3))  # not records at all
    else:
        values = draw(bent())
    lines = []
    for value in values:
        # Mostly escaped, as most writers do: an unescaped lone surrogate is refused as not UTF-8 at once.
        text = json.dumps(value, ensure_ascii=draw(st.integers(0, 3)) > 0)
        lines.append(text.encode("utf-8", "surrogatepass"))  # a lone surrogate unescaped: not UTF-8
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = b"".join(line + ending for line in lines)
    if lines and draw(st.integers(0, 5)) == 0:
        data = data[: -draw(st.integers(1, min(len(lines[-1]), 20)))]  # the last write cut off
    if draw(st.integers(0, 7)) == 0:
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 7)) == 0:
        data += b"\n\n"
    return data


class _Undo(Exception):
    """Raised at the end of each example to roll back what it stored, so every one starts alike."""


@pytest.fixture
def before(direct_channel, bob):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Our conversation before the import")
    client = Client()
    client.force_login(bob)
    return {"channel": direct_channel, "session": session, "client": client}


def counts() -> tuple[int, int, int]:
    return Session.objects.count(), Message.objects.count(), Task.objects.count()


# Enough examples to reach the refusals and acceptances above on each run, under ~60 s in CI.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=files())
def test_it_imports_any_file_whole_and_working_or_refuses_it_naming_a_line_and_storing_nothing(before, data):
    channel, previous, client = before["channel"], before["session"], before["client"]
    try:
        with transaction.atomic():
            check(channel, previous, client, data)
            raise _Undo
    except _Undo:
        pass


def check(channel, previous: Session, client: Client, data: bytes) -> None:
    stored = counts()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        try:
            call_command("import_session", str(path), channel=channel.pk, stdout=out, stderr=err)
        except CommandError as error:
            message = str(error)
            has_records = any(line.strip(b"\r\xef\xbb\xbf") for line in data.split(b"\n"))
            event("refused: " + re.sub(r".*?: (line \d+: )?|, got .*|\d+", "", message, count=1)[:40])
            assert re.search(r": line \d+: ", message) or (not has_records and "holds no records" in message), message
            assert "Nothing was imported" in message
            assert counts() == stored, "a refused file stores nothing"
            assert Session.objects.get(channel=channel, status=Session.Status.ACTIVE) == previous
            return

    summary = json.loads(out.getvalue())
    event(f"imported ({'with' if summary['repaired_tool_calls'] else 'no'} repaired calls)")
    session = Session.objects.get(pk=summary["session"])
    assert session.status == Session.Status.ACTIVE
    assert Session.objects.get(pk=previous.pk).status == Session.Status.ENDED
    assert "catching up stopped" not in err.getvalue(), err.getvalue()

    assert client.get(f"/c/{channel.pk}/").status_code == 200
    assert client.get(f"/c/{channel.pk}/sessions/{previous.pk}/").status_code == 200
    prompt = io.StringIO()
    call_command("show_prompt", str(session.pk), "--json", stdout=prompt)
    assert json.loads(prompt.getvalue())["messages"]
    call_command("show_prompt", str(session.pk), stdout=io.StringIO())
    exported = io.StringIO()
    call_command("export_session", str(session.pk), stdout=exported)
    exported.getvalue().encode("utf-8")  # as the command's real standard output writes it
    lines = exported.getvalue().splitlines()
    assert len(lines) == summary["messages"] == Message.objects.filter(session=session).count()
    # What was accepted goes out again as a file the import accepts.
    services.import_session(channel=channel, data=exported.getvalue())
