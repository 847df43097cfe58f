import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions.history import Record, ToolCall
from sessions.jsonl import (
    JsonlError,
    append_record,
    dump_records,
    dumps_record,
    parse_jsonl,
    record_from_dict,
    record_to_dict,
)

CREATED = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)

SESSION = (
    Record("9f2c", None, 1, "user", "Which category has the most views?", created_at=CREATED),
    Record(
        "41ab", "9f2c", 1, "assistant", "", coworker="mina", created_at=CREATED,
        tool_calls=(ToolCall("toolu_1", "read_document", {"title": "Q3 views"}),),
    ),
    Record("c07e", "41ab", 1, "tool", "[…]", coworker="mina", created_at=CREATED, tool_call_id="toolu_1"),
    Record("5d19", "c07e", 1, "assistant", "音樂的觀看次數最多。", coworker="mina", created_at=CREATED),
)


def line(**changes) -> str:
    data = {"id": "9f2c", "previous": None, "turn": 1, "role": "user", "content": "Hi", "coworker": None, "created_at": None}
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not ...})


def test_it_writes_the_documented_format_key_for_key():
    lines = dump_records(SESSION).splitlines()

    assert lines[0] == (
        '{"id":"9f2c","previous":null,"turn":1,"role":"user","content":"Which category has the most views?",'
        '"coworker":null,"created_at":"2026-11-29T10:00:00+00:00"}'
    )
    assert list(record_to_dict(SESSION[1])) == [
        "id", "previous", "turn", "role", "content", "tool_calls", "coworker", "created_at"
    ]
    assert list(record_to_dict(SESSION[2])) == [
        "id", "previous", "turn", "role", "content", "tool_call_id", "coworker", "created_at"
    ]
    assert '"content":"音樂的觀看次數最多。"' in lines[3]
    assert "\n" not in dumps_record(SESSION[3])


# Everything a record may hold: no NUL or lone surrogate (refused, tests/security/test_import_fuzz.py),
# finite numbers, dates in the years an import accepts.
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
IDS = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=8)
TIMES = st.none() | st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(8999, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30))]),
)


@st.composite
def records(draw) -> Record:
    role = draw(st.sampled_from(["user", "assistant", "tool", "notice"]))
    tool_calls = ()
    if role == "assistant":
        call_ids = draw(st.lists(IDS, max_size=3, unique=True))
        tool_calls = tuple(
            ToolCall(i, draw(IDS), draw(st.dictionaries(TEXT, JSON_VALUES, max_size=3))) for i in call_ids
        )
    return Record(
        id=draw(IDS),
        previous=draw(st.none() | IDS),
        turn=draw(st.integers(min_value=1)),
        role=role,
        content=draw(TEXT),  # includes \n, \r, U+2028 and friends
        coworker=draw(st.none() | IDS),
        created_at=draw(TIMES),
        tool_calls=tool_calls,
        tool_call_id=draw(IDS) if role == "tool" else None,
    )


# Hypothesis builds its Unicode table on the first run in a fresh checkout; that is not slow generation.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), max_size=6))
def test_it_reads_back_exactly_what_it_wrote(written):
    parsed = parse_jsonl(dump_records(written))

    assert parsed.records == tuple(written)
    assert parsed.skipped_lines == ()


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), min_size=1, max_size=4))
def test_a_record_is_one_line_for_any_reader_even_those_that_split_on_unicode_line_breaks(written):
    text = dump_records(written)

    assert len(text.splitlines()) == len(written), "U+0085, U+2028 and U+2029 are escaped, not written raw"
    assert parse_jsonl(text).records == tuple(written)


def test_it_skips_and_reports_a_last_line_cut_off_at_any_byte():
    data = dump_records(SESSION).encode()
    last_line_start = data.rindex(b"\n", 0, -1) + 1

    for cut in range(last_line_start + 1, len(data) - 1):
        parsed = parse_jsonl(data[:cut])

        assert parsed.records == SESSION[:3], cut
        assert parsed.skipped_lines == (4,), cut


def test_it_keeps_a_complete_last_line_that_only_lacks_its_newline():
    parsed = parse_jsonl(dump_records(SESSION).removesuffix("\n"))

    assert parsed.records == SESSION
    assert parsed.skipped_lines == ()


def test_it_accepts_windows_line_ends_a_byte_order_mark_and_blank_lines():
    text = "\ufeff" + dump_records(SESSION[:2]).replace("\n", "\r\n") + "\r\n  \n" + dumps_record(SESSION[2]) + "\r\n"

    assert parse_jsonl(text).records == SESSION[:3]
    assert parse_jsonl(text.encode()).records == SESSION[:3]
    assert parse_jsonl(text).lines == (1, 2, 5)  # so a later chain error can name the line


def test_it_names_the_line_of_a_bad_line_in_the_middle_and_imports_nothing():
    lines = dump_records(SESSION).splitlines(keepends=True)
    lines[2] = '{"id": "c07e", "previous": \n'

    with pytest.raises(JsonlError, match=r"^line 3: not valid JSON") as caught:
        parse_jsonl("".join(lines))

    assert caught.value.line == 3


def test_it_refuses_a_bad_last_line_that_was_written_completely():
    text = dump_records(SESSION) + '{"id": "5d19", "previous": \n'

    with pytest.raises(JsonlError, match="^line 5: "):
        parse_jsonl(text)


def test_it_refuses_a_cut_off_line_that_is_not_the_last():
    data = dump_records(SESSION).encode()
    broken = data[:20] + b"\n" + data

    with pytest.raises(JsonlError, match="^line 1: "):
        parse_jsonl(broken)


def test_it_refuses_invalid_utf8_before_the_last_line():
    data = dump_records(SESSION).encode().replace("音".encode(), "音".encode()[:2])

    with pytest.raises(JsonlError, match="^line 4: not valid UTF-8"):
        parse_jsonl(data + b"\n" + dumps_record(SESSION[0]).encode())


def test_it_refuses_a_last_line_that_parses_but_is_not_a_record():
    with pytest.raises(JsonlError, match='^line 2: missing key "role"'):
        parse_jsonl(dumps_record(SESSION[0]) + '\n{"id": "x", "previous": null, "turn": 1}')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "a record must be a JSON object, got [1, 2]"),
        (line(mood="happy"), 'unknown key "mood"'),
        (line(turn=...), 'missing key "turn"'),
        (line(id=""), '"id" must be a non-empty string, got ""'),
        (line(previous=7), '"previous" must be a non-empty string or null, got 7'),
        (line(turn="x"), '"turn" must be a positive integer, got "x"'),
        (line(turn=0), '"turn" must be a positive integer, got 0'),
        (line(turn=True), '"turn" must be a positive integer, got true'),
        (line(role="system"), '"role" must be one of user, assistant, tool, notice, got "system"'),
        (line(content=None), '"content" must be a string, got null'),
        (line(coworker=3), '"coworker" must be a non-empty string or null, got 3'),
        (line(created_at="yesterday"), '"created_at" must be an ISO 8601 date and time or null, got "yesterday"'),
        (line(tool_calls=[]), '"tool_calls" is only allowed on an assistant record, not on a user record'),
        (line(role="assistant", tool_calls={}), '"tool_calls" must be a list, got {}'),
        (
            line(role="assistant", tool_calls=[{"id": "t", "name": "read"}]),
            'tool call 1 must be an object with exactly the keys "id", "name" and "args"',
        ),
        (
            line(role="assistant", tool_calls=[{"id": "t", "name": "read", "args": []}]),
            '"args" of tool call 1 must be an object, got []',
        ),
        (
            line(role="assistant", tool_calls=[{"id": "t", "name": "a", "args": {}}, {"id": "t", "name": "b", "args": {}}]),
            "tool call id t appears twice",
        ),
        (line(role="tool"), '"tool_call_id" (required on a tool record) must be a non-empty string, got null'),
        (line(tool_call_id="toolu_1"), '"tool_call_id" is only allowed on a tool record, not on a user record'),
    ],
)
def test_it_says_exactly_what_is_wrong_with_a_record(text, message):
    with pytest.raises(JsonlError) as caught:
        parse_jsonl(dumps_record(SESSION[0]) + "\n\n" + text + "\n")

    assert str(caught.value) == f"line 3: {message}"
    assert (caught.value.line, caught.value.problem) == (3, message)


def test_it_reads_a_time_without_offset_as_utc():
    record = record_from_dict(json.loads(line(created_at="2026-11-29T10:00:00")), 1)

    assert record.created_at == CREATED
    assert record.created_at.tzinfo is not None


def test_it_appends_records_to_a_new_file(tmp_path):
    path = tmp_path / "session.jsonl"

    for record in SESSION:
        append_record(path, record)

    assert path.read_text(encoding="utf-8") == dump_records(SESSION)


def test_it_does_not_glue_a_new_record_to_a_line_broken_by_a_crash(tmp_path):
    path = tmp_path / "session.jsonl"
    data = dump_records(SESSION).encode()
    broken_fragment = data[: len(data) - 10]
    path.write_bytes(broken_fragment)
    assert parse_jsonl(path.read_bytes()).skipped_lines == (4,)
    resumed = Record("77aa", "c07e", 1, "assistant", "Music.", coworker="mina", created_at=CREATED)

    append_record(path, resumed)

    lines = path.read_bytes().split(b"\n")
    assert lines[3] == broken_fragment.split(b"\n")[3]
    assert parse_jsonl(lines[4]).records == (resumed,)
    assert lines[5] == b""
    # The fragment is now a complete line, so the file no longer imports (README: an interrupted write is only the last line).
    with pytest.raises(JsonlError, match="^line 4: "):
        parse_jsonl(path.read_bytes())
