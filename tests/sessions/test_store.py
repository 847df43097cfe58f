"""The history store: one chain per session, whatever happens concurrently."""

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from sessions import history, services
from sessions.models import Message, Session, Task


@pytest.fixture
def session(direct_channel) -> Session:
    return services.get_active_session(channel=direct_channel)


def test_it_stores_the_instruction_as_a_new_task(session):
    task, message = services.start_task(session=session, instruction="Draft the launch email")
    second, _ = services.start_task(session=session, instruction="Shorter, please")

    assert (task.turn, second.turn) == (1, 2)
    assert task.status == Task.Status.QUEUED
    assert message.role == "user" and message.content == "Draft the launch email"
    assert message.previous is None and message.position == 1


def test_it_refuses_an_empty_instruction(session):
    with pytest.raises(ValueError, match="needs some text"):
        services.start_task(session=session, instruction="   ")
    assert not Task.objects.exists()


def test_it_reads_back_a_tool_round_trip_in_chain_order(session):
    task, _ = services.start_task(session=session, instruction="Which category has the most views?")
    call = history.ToolCall(id="toolu_1", name="read_document", args={"title": "Q3 views"})
    services.append_message(session=session, turn=1, role="assistant", tool_calls=[call], coworker="mina")
    services.append_message(session=session, turn=1, role="tool", content="music: 41k", tool_call_id="toolu_1")
    services.append_message(session=session, turn=1, role="assistant", content="Music.", coworker="mina")

    records = services.load_records(session)

    assert [r.role for r in records] == ["user", "assistant", "tool", "assistant"]
    assert [r.previous for r in records[1:]] == [r.id for r in records[:-1]]
    assert records[1].tool_calls == (call,)
    assert history.find_faults(history.rebuild_messages(records).messages) == []


def test_the_prompts_fast_read_gives_the_same_records_as_the_rows(session):
    # Prompts read plain values instead of Message instances; a field lost there would change every prompt.
    services.start_task(session=session, instruction="Which category has the most views?")
    call = history.ToolCall(id="toolu_1", name="read_document", args={"title": "Q3 views"})
    services.append_message(session=session, turn=1, role="assistant", tool_calls=[call], coworker="mina")
    services.append_message(session=session, turn=1, role="tool", content="music: 41k", tool_call_id="toolu_1")
    services.append_message(session=session, turn=1, role="assistant", content="Music.", coworker="mina")
    rows = services.task_messages(session, turn=1)

    assert services.records_of(rows) == [services.record_from_row(row) for row in rows]


def test_it_rejects_a_tool_result_that_names_no_call(session):
    services.start_task(session=session, instruction="Hi")
    with pytest.raises(ValueError, match="names the tool call"):
        services.append_message(session=session, turn=1, role="tool", content="?")


def test_it_refuses_to_append_to_an_ended_session(direct_channel, session):
    services.start_task(session=session, instruction="Hi")
    services.start_session(channel=direct_channel)

    with pytest.raises(services.SessionEnded):
        services.append_message(session=session, turn=1, role="assistant", content="Too late")
    assert session.messages.count() == 1


def test_a_task_still_working_when_the_next_instruction_arrives_keeps_its_messages(session):
    services.start_task(session=session, instruction="One")
    services.start_task(session=session, instruction="Two")
    services.append_message(session=session, turn=1, role="assistant", content="late reply to one")

    records = services.load_records(session)
    assert [r.turn for r in records] == [1, 2, 1], "the chain keeps the order things happened"
    tasks = history.group_tasks(records)
    assert [(t.turn, t.instruction, t.final_answer) for t in tasks] == [(1, "One", "late reply to one"), (2, "Two", "")]


def test_it_refuses_a_reply_to_a_task_that_does_not_exist(session):
    services.start_task(session=session, instruction="One")
    with pytest.raises(ValueError, match="no task 2"):
        services.append_message(session=session, turn=2, role="assistant", content="?")


def test_starting_a_new_conversation_ends_the_old_one(direct_channel, session):
    new = services.start_session(channel=direct_channel)
    session.refresh_from_db()

    assert session.status == Session.Status.ENDED and session.ended_at is not None
    assert services.get_active_session(channel=direct_channel) == new


def test_the_database_allows_one_active_session_per_channel(direct_channel, session):
    with pytest.raises(IntegrityError), transaction.atomic():
        Session.objects.create(channel=direct_channel)


def test_the_database_refuses_a_fork_in_the_chain(session):
    _, head = services.start_task(session=session, instruction="Hi")
    services.append_message(session=session, turn=1, role="assistant", content="Hello")

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, position=3, previous=head, turn=1, role="assistant", content="fork")


def test_the_database_refuses_a_second_head(session):
    services.start_task(session=session, instruction="Hi")

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, position=2, previous=None, turn=1, role="user", content="x")
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, position=1, previous=None, turn=1, role="user", content="x")


def test_a_stored_message_cannot_be_edited(session):
    _, message = services.start_task(session=session, instruction="Hi")
    message.content = "rewritten history"
    with pytest.raises(Exception, match="append-only"):
        message.save()


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_never_fork_the_chain(direct_channel):
    """Real threads, each on its own database connection, appending at once."""
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Everyone, report in")
    writers, appends_each = 6, 8
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            for i in range(appends_each):
                services.append_message(session=session, turn=1, role="assistant", content=f"writer {n} step {i}")
        except BaseException as error:  # surfaced below: a thread's failure must fail the test
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    records = services.load_records(session)
    assert len(records) == 1 + writers * appends_each
    positions = list(Message.objects.filter(session=session).order_by("position").values_list("position", flat=True))
    assert positions == list(range(1, len(records) + 1))
    # Each writer's own appends stay in the order it made them.
    for n in range(writers):
        mine = [r.content for r in records if r.content.startswith(f"writer {n} ")]
        assert mine == [f"writer {n} step {i}" for i in range(appends_each)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_instructions_get_distinct_turns(direct_channel):
    session = services.get_active_session(channel=direct_channel)
    barrier = threading.Barrier(5)
    turns: list[int] = []

    def send(n: int) -> None:
        try:
            barrier.wait()
            task, _ = services.start_task(session=session, instruction=f"instruction {n}")
            turns.append(task.turn)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(turns) == [1, 2, 3, 4, 5]
    assert [t.turn for t in history.group_tasks(services.load_records(session))] == [1, 2, 3, 4, 5]
