"""A meeting started from the page runs through Claude (the fake Messages API on loopback): each
participant's turn streams, the notes come from the model, decisions go to memory, follow-ups to 1:1s."""

from django.urls import reverse

from coworkers.providers import get_provider
from office.models import Channel
from sessions import pipeline, services
from sessions.models import MemoryItem, Message, Task
from tests.coworkers.fake_anthropic import Reply

NOTES = """## Decisions
- (task 1, Mina) Launch on May 4, because the beta is stable.
## Commitments and next steps
- (Theo) Fix the invite link on mobile by Friday.
"""


def test_through_claude_a_meeting_from_the_form_streams_each_turn_and_ends_with_linked_notes(
    fake_anthropic, client, alice, mina, theo, frames, no_background
):
    fake_anthropic.add(
        Reply(text="I'd launch on May 4: the beta has been stable for two weeks."),
        Reply(text="Agreed. I'll fix the invite link on mobile by Friday."),
        Reply(text=NOTES),
    )
    assert get_provider().name == "claude"
    client.force_login(alice)

    client.post(
        reverse("new_meeting", args=["acme"]),
        {"title": "Launch sync", "agenda": "Pick the launch date.", "rounds": "1", "coworkers": [mina.pk, theo.pk]},
    )
    (task_id,) = no_background
    done = pipeline.run_task(task_id)

    assert done.status == Task.Status.DONE, done.error
    streamed = {f["coworker"] for f in frames if f["type"] == "delta"}
    assert streamed == {"mina", "theo"}, "each participant's turn streams"
    # Theo's turn saw Mina's, and both saw the agenda in the system prompt.
    second = fake_anthropic.requests[1].body
    assert "beta has been stable" in str(second["messages"]) and "Pick the launch date." in str(second["system"])
    notes = services.task_messages(done.session, turn=1).get(role=Message.Role.NOTICE).content
    assert "Launch on May 4, because the beta is stable." in notes
    follow_up = Task.objects.get(handed_off_from=done)
    assert follow_up.session.channel == Channel.objects.get(kind="direct", coworker=theo)
    assert f"**Theo**: Fix the invite link on mobile by Friday. ([follow-up in Theo’s 1:1]({reverse('open_task', args=[follow_up.pk])}))" in notes
    assert MemoryItem.objects.get(kind="decision").source_task == done
