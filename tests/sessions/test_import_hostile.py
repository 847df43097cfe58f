"""import_session under hostile files: whatever it refuses, it refuses before writing anything and
names the line; whatever it accepts, the channel's page, show_prompt and export_session keep working."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from sessions import memory, services, upkeep
from sessions.models import Message, Session, Task

from .test_import_export import RECORDS, run_export, run_import, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def active(direct_channel) -> Session:
    """The conversation the channel has before the import: a refused import must leave it active."""
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Our conversation before the import")
    return session


def refused(tmp_path, channel, records, line: int, words: str) -> str:
    file = write_jsonl(tmp_path / "h.jsonl", records)
    with pytest.raises(CommandError, match=f"line {line}: ") as caught:
        run_import(file, channel.pk)
    message = str(caught.value)
    assert words in message, message
    assert "Nothing was imported" in message
    return message


def assert_nothing_stored(channel, active: Session) -> None:
    assert list(Session.objects.filter(channel=channel).values_list("pk", "status")) == [(active.pk, Session.Status.ACTIVE)]
    assert Message.objects.exclude(session=active).count() == 0
    assert Task.objects.exclude(session=active).count() == 0


def assert_channel_works(channel, bob) -> None:
    session = services.get_active_session(channel=channel)
    client = Client()
    client.force_login(bob)
    assert client.get(f"/c/{channel.pk}/").status_code == 200
    out = io.StringIO()
    call_command("show_prompt", str(session.pk), stdout=out)
    assert "recent" in out.getvalue()
    assert run_export(session.pk)


# Dates ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "created_at",
    ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1969-12-31T23:59:59+00:00", "9001-01-01T00:00:00", "2026-02-30T10:00:00"],
)
def test_it_refuses_a_date_it_cannot_store_before_writing_anything(tmp_path, direct_channel, active, created_at):
    records = [RECORDS[0], dict(RECORDS[1], created_at=created_at), *RECORDS[2:4]]

    refused(tmp_path, direct_channel, records, 2, '"created_at"')

    assert_nothing_stored(direct_channel, active)


def test_a_naive_date_is_read_as_utc(tmp_path, direct_channel, bob):
    records = [dict(RECORDS[0], created_at="2026-11-01T09:00:00"), *RECORDS[1:4]]

    summary, _ = run_import(write_jsonl(tmp_path / "h.jsonl", records), direct_channel.pk)

    assert run_export(summary["session"])[0]["created_at"] == "2026-11-01T09:00:00+00:00"
    assert_channel_works(direct_channel, bob)


def test_a_catch_up_that_fails_after_the_commit_leaves_the_channel_working(tmp_path, direct_channel, bob, monkeypatch):
    real = memory.extract_memory
    second = RECORDS[4:5] + [dict(RECORDS[3], id="x2", previous="77aa", turn=2, content="News came second.")]

    def fails_on_task_2(*, task_id, provider=None):
        if Task.objects.get(pk=task_id).turn == 2:
            raise RuntimeError("the model is down")
        return real(task_id=task_id, provider=provider)

    monkeypatch.setattr(memory, "extract_memory", fails_on_task_2)

    summary, report = run_import(write_jsonl(tmp_path / "h.jsonl", [*RECORDS[:4], *second]), direct_channel.pk)

    assert summary["tasks"] == 2
    assert "catching up stopped at task 2 (RuntimeError: the model is down)" in report
    assert "is imported, but not all of it" in report
    assert_channel_works(direct_channel, bob)
    monkeypatch.setattr(memory, "extract_memory", real)
    assert upkeep.catch_up(Session.objects.get(pk=summary["session"])), "running it again does the rest"


# Instructions -----------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   \n\t", "\u200b\u200d\u2060\ufeff", "\u00ad "])
def test_it_refuses_an_empty_instruction_naming_its_line(tmp_path, direct_channel, active, content):
    records = [dict(RECORDS[0], content=content), *RECORDS[1:4]]

    refused(tmp_path, direct_channel, records, 1, "the instruction of turn 1 is empty")

    assert_nothing_stored(direct_channel, active)


def test_an_empty_later_instruction_is_refused_with_its_line(tmp_path, direct_channel, active):
    records = [*RECORDS[:4], dict(RECORDS[4], content="\u200b")]

    refused(tmp_path, direct_channel, records, 5, "the instruction of turn 2 is empty")


# Characters no database keeps ----------------------------------------------------


def _call(**changes) -> dict:
    call = {"id": "toolu_1", "name": "read_document", "args": {"title": "Q3 views"}}
    return {**call, **changes}


@pytest.mark.parametrize("bad", ["\x00", "\ud800", "\udfff"])
@pytest.mark.parametrize(
    "where, line",
    [
        ("content", 4),
        ("coworker", 4),
        ("id", 1),
        ("tool call name", 2),
        ("tool call args", 2),
        ("tool call args key", 2),
        ("tool call id", 2),
        ("tool_call_id", 3),
    ],
)
def test_it_refuses_nul_and_lone_surrogates_anywhere_naming_the_line(tmp_path, direct_channel, active, bad, where, line):
    records = [dict(r) for r in RECORDS[:4]]
    if where == "content":
        records[3]["content"] = f"Music{bad} has the most views."
    elif where == "coworker":
        records[3]["coworker"] = f"mi{bad}na"
    elif where == "id":
        records[0]["id"] = records[1]["previous"] = f"9f{bad}2c"
    elif where == "tool call name":
        records[1]["tool_calls"] = [_call(name=f"read{bad}")]
    elif where == "tool call args":
        records[1]["tool_calls"] = [_call(args={"title": ["Q3", {"deep": f"views{bad}"}]})]
    elif where == "tool call args key":
        records[1]["tool_calls"] = [_call(args={f"ti{bad}tle": "Q3"})]
    elif where == "tool call id":
        records[1]["tool_calls"] = [_call(id=f"toolu{bad}1")]
        records[2]["tool_call_id"] = f"toolu{bad}1"
    elif where == "tool_call_id":
        records[2]["tool_call_id"] = f"toolu_1{bad}"

    message = refused(tmp_path, direct_channel, records, line, "cannot be stored")

    assert ("a NUL character" if bad == "\x00" else "a lone surrogate") in message
    message.encode("utf-8")  # printable: the surrogate is named, not repeated
    assert_nothing_stored(direct_channel, active)


def test_it_refuses_values_longer_than_their_columns(tmp_path, direct_channel, active):
    refused(tmp_path, direct_channel, [*RECORDS[:3], dict(RECORDS[3], coworker="m" * 61)], 4, '"coworker" must be at most 60')
    refused(tmp_path, direct_channel, [*RECORDS[:2], dict(RECORDS[2], tool_call_id="t" * 201)], 3, '"tool_call_id" must be at most 200')
    assert_nothing_stored(direct_channel, active)


@pytest.mark.parametrize("args", ['{"n": NaN}', '{"n": Infinity}', '{"n": 1e400}', '{"n": ' + "1" * 5000 + "}"])
def test_it_refuses_numbers_no_database_keeps(tmp_path, direct_channel, active, args):
    lines = [json.dumps(RECORDS[0]), json.dumps(dict(RECORDS[1], tool_calls=[_call(args={"n": 0})])).replace('{"n": 0}', args)]
    file = tmp_path / "n.jsonl"
    file.write_text("\n".join(lines) + "\n")

    with pytest.raises(CommandError, match="line 2: "):
        run_import(str(file), direct_channel.pk)
    assert_nothing_stored(direct_channel, active)


# Turns and tool results ----------------------------------------------------------


def test_it_refuses_a_tool_result_filed_under_another_turn(tmp_path, direct_channel, active):
    records = [*RECORDS[:2], dict(RECORDS[2], turn=2), *RECORDS[3:]]

    refused(tmp_path, direct_channel, records, 3, "turn 2 begins with a tool record")


def test_it_refuses_a_tool_result_that_arrives_after_the_next_instruction(tmp_path, direct_channel, active):
    # Task 1's result comes after task 2's instruction, still filed under turn 1.
    late = dict(RECORDS[2], previous="77aa")
    records = [RECORDS[0], RECORDS[1], dict(RECORDS[3], previous="41ab"), dict(RECORDS[4], previous="5d19"), late]

    refused(tmp_path, direct_channel, records, 5, "turn 1 comes after turn 2")
    assert_nothing_stored(direct_channel, active)


def test_it_refuses_a_tool_result_of_this_turn_for_a_call_of_an_earlier_one(tmp_path, direct_channel, active):
    answer_of_old_call = {"id": "99cc", "previous": "88bb", "turn": 2, "role": "tool", "content": "late", "tool_call_id": "toolu_1"}

    refused(tmp_path, direct_channel, [*RECORDS, answer_of_old_call], 7, "answers no tool call made before it in turn 2")


def test_it_refuses_a_second_result_for_one_call(tmp_path, direct_channel, active):
    again = dict(RECORDS[2], id="c07f", previous="c07e")
    records = [*RECORDS[:3], again, dict(RECORDS[3], previous="c07f")]

    refused(tmp_path, direct_channel, records, 4, "a second tool result for toolu_1")


def test_it_refuses_a_chain_whose_turns_go_backwards(tmp_path, direct_channel, active):
    back = {"id": "aa01", "previous": "88bb", "turn": 1, "role": "assistant", "content": "Back to task 1", "coworker": "mina"}

    refused(tmp_path, direct_channel, [*RECORDS, back], 7, "turn 1 comes after turn 2")


def test_it_refuses_a_second_instruction_inside_a_turn(tmp_path, direct_channel, active):
    second = dict(RECORDS[4], turn=1)

    refused(tmp_path, direct_channel, [*RECORDS[:4], second], 5, "a second user record in turn 1")


def test_what_it_accepts_the_report_the_statuses_and_the_prompt_agree_on(tmp_path, direct_channel, bob):
    summary, report = run_import(write_jsonl(tmp_path / "h.jsonl", RECORDS), direct_channel.pk)

    session = Session.objects.get(pk=summary["session"])
    statuses = dict(Task.objects.filter(session=session).values_list("turn", "status"))
    out = io.StringIO()
    call_command("show_prompt", str(session.pk), "--json", stdout=out)
    prompt = json.loads(out.getvalue())
    interrupted_in_prompt = [m for m in prompt["messages"] if m.get("status") == "error" or "interrupted" in str(m.get("content"))]

    assert summary["repaired_tool_calls"] == 1 and "toolu_2" in report
    assert statuses == {1: Task.Status.DONE, 2: Task.Status.FAILED}
    assert len(interrupted_in_prompt) == 1
    assert_channel_works(direct_channel, bob)


# What the report says ------------------------------------------------------------


def test_a_file_of_only_an_interrupted_line_names_that_line(tmp_path, direct_channel, active):
    file = tmp_path / "cut.jsonl"
    file.write_text(json.dumps(RECORDS[0])[:30])

    with pytest.raises(CommandError, match="line 1: the file holds no records: its only line was cut off"):
        run_import(str(file), direct_channel.pk)
    assert_nothing_stored(direct_channel, active)


def test_a_cycle_without_a_head_names_a_line(tmp_path, direct_channel, active):
    records = [dict(RECORDS[0], previous="41ab"), *RECORDS[1:2]]

    refused(tmp_path, direct_channel, records, 1, "no head")
