"""import_session and export_session, as a maintainer runs them."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from sessions import history, jsonl, services
from sessions.models import Message, Session, Task

RECORDS = [
    {"id": "9f2c", "previous": None, "turn": 1, "role": "user", "content": "Which category has the most views?", "coworker": None, "created_at": "2026-11-01T09:00:00+00:00"},
    {"id": "41ab", "previous": "9f2c", "turn": 1, "role": "assistant", "content": "", "tool_calls": [{"id": "toolu_1", "name": "read_document", "args": {"title": "Q3 views"}}], "coworker": "mina", "created_at": "2026-11-01T09:00:02+00:00"},
    {"id": "c07e", "previous": "41ab", "turn": 1, "role": "tool", "content": "[music 41k, news 12k]", "tool_call_id": "toolu_1", "coworker": "mina", "created_at": "2026-11-01T09:00:03+00:00"},
    {"id": "5d19", "previous": "c07e", "turn": 1, "role": "assistant", "content": "Music has the most views.", "coworker": "mina", "created_at": "2026-11-01T09:00:05+00:00"},
    {"id": "77aa", "previous": "5d19", "turn": 2, "role": "user", "content": "And which came second?", "coworker": None, "created_at": "2026-11-01T09:01:00+00:00"},
    {"id": "88bb", "previous": "77aa", "turn": 2, "role": "assistant", "content": "", "tool_calls": [{"id": "toolu_2", "name": "read_document", "args": {"title": "Q3 views"}}], "coworker": "mina", "created_at": "2026-11-01T09:01:02+00:00"},
]


def write_jsonl(path, records, tail: str = "") -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return str(path)


def run_import(file: str, channel_id: int) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_session", file, channel=channel_id, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def run_export(session_id: int) -> list[dict]:
    out = io.StringIO()
    call_command("export_session", str(session_id), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_it_imports_a_history_as_the_channels_new_session(tmp_path, direct_channel):
    old = services.get_active_session(channel=direct_channel)
    file = write_jsonl(tmp_path / "h.jsonl", RECORDS[:4])

    summary, _ = run_import(file, direct_channel.pk)

    assert summary == {"session": summary["session"], "tasks": 1, "messages": 4, "skipped_lines": 0, "repaired_tool_calls": 0}
    assert services.get_active_session(channel=direct_channel).pk == summary["session"]
    old.refresh_from_db()
    assert old.status == Session.Status.ENDED


def test_export_of_an_import_gives_back_the_same_records(tmp_path, direct_channel):
    file = write_jsonl(tmp_path / "h.jsonl", RECORDS)
    summary, _ = run_import(file, direct_channel.pk)

    exported = run_export(summary["session"])

    without_ids = lambda rows: [{k: v for k, v in r.items() if k not in ("id", "previous")} for r in rows]  # noqa: E731
    assert without_ids(exported) == without_ids(RECORDS)
    assert [list(r) for r in exported] == [list(r) for r in RECORDS]  # same keys, same order
    assert exported[0]["previous"] is None
    assert [r["previous"] for r in exported[1:]] == [r["id"] for r in exported[:-1]]


def test_a_line_cut_off_mid_write_is_skipped_and_the_dangling_call_reported(tmp_path, direct_channel):
    cut = json.dumps({"id": "99cc", "previous": "88bb", "turn": 2, "role": "tool", "content": "[music 41k"})[:37]
    file = write_jsonl(tmp_path / "crashed.jsonl", RECORDS, tail=cut)

    summary, report = run_import(file, direct_channel.pk)

    assert summary["skipped_lines"] == 1 and summary["repaired_tool_calls"] == 1
    assert summary["tasks"] == 2 and summary["messages"] == 6
    assert "skipped line 7" in report
    assert "toolu_2" in report
    session = Session.objects.get(pk=summary["session"])
    rebuilt = history.rebuild_messages(services.load_records(session))
    history.validate_messages(rebuilt.messages)  # raises if Claude would reject the sequence
    assert rebuilt.repaired_tool_calls == ("toolu_2",)
    assert rebuilt.messages[-1].tool_call_id == "toolu_2" and rebuilt.messages[-1].status == "error"
    interrupted = Task.objects.get(session=session, turn=2)
    assert interrupted.status == Task.Status.FAILED and "Interrupted" in interrupted.error


def test_a_bad_line_in_the_middle_names_its_line_and_imports_nothing(tmp_path, direct_channel):
    active = services.get_active_session(channel=direct_channel)
    lines = [json.dumps(r) for r in RECORDS]
    lines[2] = '{"id": "c07e", "role": '
    file = tmp_path / "bad.jsonl"
    file.write_text("\n".join(lines) + "\n")

    with pytest.raises(CommandError, match="line 3") as error:
        run_import(str(file), direct_channel.pk)

    assert "Nothing was imported" in str(error.value)
    assert "looks cut off by an interrupted write" in str(error.value)
    assert Session.objects.filter(channel=direct_channel).get() == active
    assert not Message.objects.exists()


def test_a_forked_history_is_refused_with_the_line_of_the_fork(tmp_path, direct_channel):
    fork = dict(RECORDS[3], id="dup1", previous="c07e")
    file = write_jsonl(tmp_path / "fork.jsonl", [*RECORDS[:4], fork])

    with pytest.raises(CommandError, match="line 5"):
        run_import(file, direct_channel.pk)
    assert not Message.objects.exists()


def test_a_task_that_does_not_begin_with_the_instruction_is_refused(tmp_path, direct_channel):
    skipped_turn = [dict(r) for r in RECORDS[:4]] + [dict(RECORDS[4], turn=3)]
    file = write_jsonl(tmp_path / "gap.jsonl", skipped_turn)

    with pytest.raises(CommandError, match="line 5: turn 3 where turn 2 was expected"):
        run_import(file, direct_channel.pk)


def test_it_refuses_a_file_larger_than_any_history_without_reading_it_all(tmp_path, direct_channel, monkeypatch):
    monkeypatch.setattr("sessions.management.commands.import_session.MAX_IMPORT_BYTES", 100)
    file = write_jsonl(tmp_path / "h.jsonl", RECORDS * 5)
    before = Session.objects.count()
    with pytest.raises(CommandError, match="larger than"):
        run_import(file, direct_channel.pk)
    assert Session.objects.count() == before, "nothing imported"


def test_it_explains_a_missing_channel_file_or_session(tmp_path, direct_channel):
    file = write_jsonl(tmp_path / "h.jsonl", RECORDS)
    with pytest.raises(CommandError, match="no channel with id 999"):
        run_import(file, 999)
    with pytest.raises(CommandError, match="Cannot read"):
        run_import(str(tmp_path / "missing.jsonl"), direct_channel.pk)
    with pytest.raises(CommandError, match="no session with id 999"):
        run_export(999)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(CommandError, match="no records"):
        run_import(str(empty), direct_channel.pk)


def test_an_exported_file_appended_after_a_crash_keeps_the_new_record_whole(tmp_path, direct_channel):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Remember: launch is on May 4")
    path = tmp_path / "live.jsonl"
    path.write_text("".join(services.export_session(session)) + '{"id": "half')  # the crash

    record = services.load_records(session)[0]
    jsonl.append_record(path, record)

    last_line = path.read_text().splitlines()[-1]
    assert json.loads(last_line)["content"] == "Remember: launch is on May 4"


def test_a_crash_that_cuts_a_chinese_character_in_half_is_an_interrupted_write(tmp_path, direct_channel):
    reply = dict(RECORDS[3], content="音樂類的觀看次數最多。")
    line = json.dumps(dict(RECORDS[4], content="第二名是哪一類？"), ensure_ascii=False).encode()
    cut = line[: line.index("二".encode()) + 1]  # one byte into a three-byte character
    with pytest.raises(UnicodeDecodeError):
        cut.decode("utf-8")
    file = tmp_path / "zh.jsonl"
    file.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*RECORDS[:3], reply]).encode() + cut)

    summary, _ = run_import(str(file), direct_channel.pk)

    assert summary["skipped_lines"] == 1 and summary["messages"] == 4
    assert run_export(summary["session"])[-1]["content"] == "音樂類的觀看次數最多。"


def test_a_session_whose_turns_interleave_exports_task_by_task_and_imports_again(db):
    from office.models import Channel, Office

    office = Office.objects.create(name="Acme", slug="acme-interleave")
    channel = Channel.objects.create(office=office, kind=Channel.Kind.MAIN, name="main")
    session = services.get_active_session(channel=channel)
    first, _ = services.start_task(session=session, instruction="Look up the Q3 views")
    services.append_message(
        session=session, turn=1, role="assistant", coworker="mina",
        tool_calls=[history.ToolCall(id="toolu_1", name="read_document", args={"title": "Q3"})],
    )
    services.start_task(session=session, instruction="And draft the newsletter")  # arrives while task 1 works
    services.append_message(session=session, turn=1, role="tool", content="Music: 41%", tool_call_id="toolu_1", coworker="mina")
    services.append_message(session=session, turn=1, role="assistant", content="Music has the most views.", coworker="mina")
    services.append_message(session=session, turn=2, role="assistant", content="Here is the draft.", coworker="mina")

    exported = "".join(services.export_session(session))
    again = services.import_session(channel=channel, data=exported)

    assert (again.tasks, again.messages, again.repaired_tool_calls) == (2, 6, ())
    rebuilt = history.group_tasks(services.load_records(again.session))
    assert [t.final_answer for t in rebuilt] == ["Music has the most views.", "Here is the draft."]
