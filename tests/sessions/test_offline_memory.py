"""The offline responder's own words never come back as memory or as the summary."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from coworkers.providers.offline import OfflineResponder
from sessions import folding, memory, services
from sessions.models import MemoryItem, Task

pytestmark = pytest.mark.django_db


def answered(channel, *, provider: str, turn_text: str, reply: str) -> Task:
    session = services.get_active_session(channel=channel)
    task, _ = services.start_task(session=session, instruction=turn_text, coworker="mina")
    services.append_message(session=session, turn=task.turn, role="assistant", content=reply, coworker="mina")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, provider=provider)
    return task


@pytest.mark.parametrize(("provider", "remembered"), [("offline", []), ("claude", ["We agreed to go with the Harbour Loft for the offsite."])])
def test_a_reply_given_offline_is_never_remembered(direct_channel, provider, remembered):
    task = answered(direct_channel, provider=provider, turn_text="Which venue?", reply="We agreed to go with the Harbour Loft for the offsite.")

    memory.extract_memory(task_id=task.pk, provider=OfflineResponder())

    assert list(MemoryItem.objects.values_list("text", flat=True)) == remembered


def test_a_fold_of_offline_tasks_keeps_what_people_said_and_leaves_the_replies_out(direct_channel):
    for n in range(1, 5):
        task = answered(
            direct_channel, provider="offline", turn_text=f"The budget for phase {n} is ${n},000.",
            reply=f"Here's what I have on that:\n\n- We agreed the phase {n} deadline is May {n} (from memory)",
        )

    version = folding.fold_summary(session_id=task.session_id, through_turn=4, provider=OfflineResponder())

    assert version.model == "offline"
    assert "$4,000" in version.text
    assert "from memory" not in version.text and "Here's what I have" not in version.text


def test_a_task_with_nothing_to_remember_leaves_a_large_memory_unread(direct_channel):
    # Upkeep that reads the office's whole memory after every task grows with the memory.
    office = direct_channel.office_id
    MemoryItem.objects.bulk_create(MemoryItem(office_id=office, text=f"Fact {n} about the launch.", kind="project") for n in range(600))
    small_talk = answered(direct_channel, provider="claude", turn_text="Thanks, that helps!", reply="Glad to help.")
    decision = answered(direct_channel, provider="claude", turn_text="We decided the launch moves to May 4.", reply="Noted.")

    with CaptureQueriesContext(connection) as queries:
        assert memory.extract_memory(task_id=small_talk.pk, provider=OfflineResponder()) == []
    assert not [q for q in queries if "FROM \"work_sessions_memoryitem\"" in q["sql"]]

    events = memory.extract_memory(task_id=decision.pk, provider=OfflineResponder())
    assert [event.action for event in events] == ["add"]
    assert MemoryItem.objects.filter(office_id=office, text__contains="May 4").exists()


def test_one_task_adds_at_most_a_dozen_facts_the_first_ones_said(direct_channel):
    said = " ".join(f"Remember that the locker {n} code is {1000 + n}." for n in range(40))
    task = answered(direct_channel, provider="claude", turn_text=said, reply="Noted.")

    memory.extract_memory(task_id=task.pk, provider=OfflineResponder())

    texts = list(MemoryItem.objects.order_by("pk").values_list("text", flat=True))
    assert len(texts) == memory.ITEMS_PER_TASK and "1000" in texts[0] and "1011" in texts[-1]
