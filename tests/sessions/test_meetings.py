"""Meetings: turns, notes, decisions into memory, follow-ups into owners' 1:1s."""

import pytest

from coworkers.providers.offline import OfflineResponder
from coworkers.providers.scripted import Reply, ScriptedProvider
from office.models import Channel
from sessions import meetings, memory, pipeline, posting, services, summarize
from sessions.models import MemoryEvent, MemoryItem, Message, Task

NOTES = """## Decisions
- (task 1, Mina) We decided to launch on May 4 because the beta is stable.
## Commitments and next steps
- (task 1, Theo) I'll fix the invite link on mobile by Friday.
"""


def test_a_meeting_takes_turns_then_remembers_decisions_and_starts_follow_ups(office, mina, theo, frames, no_background):
    provider = ScriptedProvider(
        [
            Reply("I propose we launch on May 4; the beta is stable."),
            Reply("Agreed. I'll fix the invite link on mobile by Friday."),
            Reply(NOTES),  # the notes (a fold of the meeting)
        ]
    )
    channel, task = meetings.start_meeting(
        office=office, title="Launch sync", agenda="Pick the launch date.", participants=[mina, theo], rounds=1, provider=provider
    )

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    speakers = list(services.task_messages(done.session, turn=1).filter(role="assistant").values_list("coworker", flat=True))
    assert speakers == ["mina", "theo"]
    notes = services.task_messages(done.session, turn=1).get(role=Message.Role.NOTICE)
    assert notes.content.startswith("Meeting notes") and "May 4" in notes.content
    remembered = MemoryItem.objects.get(office=office, text__contains="May 4")
    assert remembered.kind == "decision"
    assert MemoryEvent.objects.get(item=remembered).actor == "meeting"
    follow_up = Task.objects.get(handed_off_from=done)
    assert follow_up.session.channel == Channel.objects.get(kind="direct", coworker=theo)
    assert follow_up.coworker == "theo" and follow_up.origin["meeting"] == channel.pk
    assert "invite link" in services.task_messages(follow_up.session, turn=follow_up.turn).get(role="user").content
    assert follow_up.pk in no_background, "the follow-up is queued to run"


def test_offline_a_meeting_turn_speaks_to_the_agenda_not_to_an_older_memory(office, mina, theo, frames, no_background):
    MemoryItem.objects.create(office=office, text="The launch date is May 4.", kind="project")
    channel, task = meetings.start_meeting(
        office=office, title="Launch", agenda="We decided to move the launch to May 11.",
        participants=[mina, theo], rounds=1, provider=OfflineResponder(),
    )

    done = pipeline.run_task(task.pk, provider=OfflineResponder())

    turns = list(services.task_messages(done.session, turn=1).filter(role="assistant").values_list("content", flat=True))
    assert turns == ["On the agenda:\n\n- We decided to move the launch to May 11", "Nothing to add from me."]


def test_offline_a_follow_up_in_meeting_note_style_is_started_too(office, mina, theo, frames, no_background):
    channel, task = meetings.start_meeting(
        office=office, title="Customers", agenda="Theo to check with our top 3 customers.",
        participants=[mina, theo], rounds=1, provider=OfflineResponder(),
    )

    done = pipeline.run_task(task.pk, provider=OfflineResponder())

    follow_up = Task.objects.get(handed_off_from=done)
    assert follow_up.coworker == "theo"
    assert "check with our top 3 customers" in services.task_messages(follow_up.session, turn=follow_up.turn).get(role="user").content


def test_a_meeting_runs_offline_too(office, mina, theo, frames, no_background):
    channel, task = meetings.start_meeting(
        office=office, title="Pricing", agenda="We decided the Team plan costs $29. Theo will update the pricing page by Friday.",
        participants=[mina, theo], rounds=2, provider=OfflineResponder(),
    )

    done = pipeline.run_task(task.pk, provider=OfflineResponder())

    assert done.status == Task.Status.DONE
    assert services.task_messages(done.session, turn=1).filter(role="assistant").count() == 4
    notes = services.task_messages(done.session, turn=1).get(role=Message.Role.NOTICE).content
    # Offline, the notes come from the agenda the person wrote, never from the offline turns.
    assert "## Decisions\n- We decided the Team plan costs $29." in notes
    assert "**Theo** will update the pricing page by Friday." in notes
    assert "Offline" not in notes
    assert MemoryItem.objects.get(office=office, kind="decision").text == "We decided the Team plan costs $29."
    assert Task.objects.get(handed_off_from=done).session.channel.coworker == theo


def test_after_a_meeting_a_question_in_its_channel_is_answered_like_anywhere_else(office, mina, theo, frames, no_background, client):
    channel, task = meetings.start_meeting(
        office=office, title="Pricing", agenda="We decided the Team plan costs $29.",
        participants=[mina, theo], rounds=1, provider=OfflineResponder(),
    )
    pipeline.run_task(task.pk, provider=OfflineResponder())

    asked = posting.post_instruction(channel=channel, text="@mina remember that the posters are printed by Inkworks", coworker=mina)
    pipeline.run_task(asked.pk, provider=OfflineResponder())

    reply = services.task_messages(asked.session, turn=asked.turn).get(role="assistant").content
    assert reply == "Noted: the posters are printed by Inkworks.", "not a meeting turn's 'Nothing to add from me.'"


def test_closing_a_meeting_twice_starts_and_remembers_nothing_twice(office, mina, theo, frames, no_background):
    channel, task = meetings.start_meeting(
        office=office, title="Pricing", agenda="We decided the Team plan costs $29. Theo will update the pricing page by Friday.",
        participants=[mina, theo], rounds=1, provider=OfflineResponder(),
    )
    done = pipeline.run_task(task.pk, provider=OfflineResponder())
    notes = services.task_messages(done.session, turn=1).get(role=Message.Role.NOTICE)
    notes.delete()  # as if the worker died after the follow-ups, before the notes were stored

    meetings.close_meeting(done, OfflineResponder())
    meetings.close_meeting(done, OfflineResponder())

    assert services.task_messages(done.session, turn=1).filter(role=Message.Role.NOTICE).count() == 1
    assert Task.objects.filter(handed_off_from=done).count() == 1
    assert MemoryItem.objects.filter(office=office, kind="decision").count() == 1


@pytest.mark.parametrize("who", [[], ["one"]])
def test_a_meeting_needs_two_participants_and_an_agenda(office, mina, who, frames, no_background):
    with pytest.raises(posting.InstructionRejected):
        meetings.start_meeting(office=office, title="Solo", agenda="x", participants=[mina] if who else [])
    with pytest.raises(posting.InstructionRejected):
        meetings.start_meeting(office=office, title="No agenda", agenda=" ", participants=[mina, mina])


@pytest.mark.parametrize(
    "bullet, owner, text",
    [
        (summarize.Bullet("I'll fix the invite link.", 1, 1, "Theo"), "theo", "I'll fix the invite link."),
        (summarize.Bullet("(Theo) Fix the invite link by Friday."), "theo", "Fix the invite link by Friday."),
        (summarize.Bullet("**Mina**: draft the launch email"), "mina", "draft the launch email"),
        (summarize.Bullet("Mina: draft the launch email"), "mina", "draft the launch email"),
        (summarize.Bullet("Theo will fix the invite link."), "theo", "Theo will fix the invite link."),
        (summarize.Bullet("Someone books the venue."), None, "Someone books the venue."),
        (summarize.Bullet("I'll book the venue.", 1, 1, "you"), None, "I'll book the venue."),
    ],
)
def test_a_follow_ups_owner_is_its_speaker_or_the_participant_it_names(mina, theo, bullet, owner, text):
    team = {"mina": mina, "theo": theo}

    found, said = meetings.owner_and_text(bullet, team)

    assert (found.slug if found else None, said) == (owner, text)


def test_the_notes_link_decisions_to_memory_and_follow_ups_to_their_tasks():
    notes = meetings.render_notes(
        decisions=[("Launch on May 4.", "/o/acme/memory/#item-3")],
        follow_ups=[("Theo", "Theo will fix the link.", "/t/9/"), ("Mina", "draft the email", "/t/10/"), ("", "Book the venue.", "")],
        questions=["Who writes the press release?"],
    )

    assert notes.splitlines() == [
        "Meeting notes",
        "",
        "## Decisions",
        "- Launch on May 4. ([remembered](/o/acme/memory/#item-3))",
        "",
        "## Follow-ups",
        "- **Theo** will fix the link. ([follow-up in Theo’s 1:1](/t/9/))",
        "- **Mina**: draft the email ([follow-up in Mina’s 1:1](/t/10/))",
        "- Book the venue. (nobody in the meeting owns this yet)",
        "",
        "## Open questions",
        "- Who writes the press release?",
    ]
    assert meetings.render_notes(decisions=[], follow_ups=[], questions=[]).endswith("Nothing was decided and nobody took anything on.")


def test_a_follow_up_is_not_remembered_as_something_the_person_said(office, mina, theo, frames, no_background):
    provider = ScriptedProvider(
        [Reply("I propose we launch on May 4."), Reply("Agreed. I'll fix the invite link on mobile by Friday."), Reply(NOTES)]
    )
    channel, task = meetings.start_meeting(
        office=office, title="Launch sync", agenda="Pick the launch date.", participants=[mina, theo], rounds=1, provider=provider
    )
    done = pipeline.run_task(task.pk, provider=provider)
    follow_up = Task.objects.get(handed_off_from=done)

    pipeline.run_task(follow_up.pk, provider=OfflineResponder())
    memory.extract_memory(task_id=follow_up.pk, provider=OfflineResponder())

    assert not MemoryItem.objects.filter(text__contains="invite link").exists(), "the meeting said it, not the person"
    assert Task.objects.get(pk=follow_up.pk).memory_extracted_at is not None, "and it is not asked again"


def test_a_meeting_starts_at_most_a_few_follow_up_tasks_and_keeps_the_rest_in_its_notes(office, mina, theo, frames, no_background):
    many = "\n".join(f"- (task 1, Theo) I'll check item {n} by Friday." for n in range(1, meetings.MAX_FOLLOW_UP_TASKS + 5))
    notes = f"## Commitments and next steps\n{many}\n"
    provider = ScriptedProvider([Reply("Let's go through the list."), Reply("I'll take them all."), Reply(notes)])
    channel, task = meetings.start_meeting(
        office=office, title="Backlog", agenda="Go through the list.", participants=[mina, theo], rounds=1, provider=provider
    )

    done = pipeline.run_task(task.pk, provider=provider)

    assert Task.objects.filter(handed_off_from=done).count() == meetings.MAX_FOLLOW_UP_TASKS
    notes_message = services.task_messages(done.session, turn=1).get(role=Message.Role.NOTICE)
    assert f"item {meetings.MAX_FOLLOW_UP_TASKS + 4}" in notes_message.content, "the rest stay in the notes"
