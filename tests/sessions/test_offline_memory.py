"""The offline responder's own words never come back as memory or as the summary."""

import pytest

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
