"""Issue-level flows end to end: a reply, a document, a handoff; through Claude (the fake server) and offline."""

import json
from datetime import datetime, timezone

import pytest

from coworkers.providers import get_provider
from coworkers.providers.offline import NOTHING_YET
from office.models import Channel, Document
from sessions import memory, pipeline, posting, services
from sessions.models import MemoryItem, Task
from tests.coworkers.fake_anthropic import Reply, Tool


def run(channel: Channel, text: str) -> Task:
    """Post and run a task the way the app does (the job is run here, not in a worker)."""
    task = posting.post_instruction(channel=channel, text=text)
    return pipeline.run_task(task.pk)


def test_through_claude_a_reply_streams_a_document_is_written_and_work_is_handed_off(
    fake_anthropic, office, mina, theo, direct_channel, frames, no_background
):
    fake_anthropic.add(
        Reply(text="Let me save that. ", tools=[Tool("toolu_01", "write_document", {"title": "Launch email", "content": "Hi all…"})]),
        Reply(text="Saved “Launch email”. Handing the landing page to Theo. ", tools=[Tool("toolu_02", "handoff", {"coworker": "theo", "brief": "Build the landing page."})]),
        Reply(text="Done: the email is saved and Theo has the landing page.", input_tokens=900, cache_read_tokens=700, output_tokens=40),
    )
    assert get_provider().name == "claude"

    task = run(direct_channel, "Write the launch email, then get Theo on the landing page.")

    assert task.status == Task.Status.DONE, task.error
    assert "".join(f["text"] for f in frames if f["type"] == "delta").endswith("Theo has the landing page.")
    assert Document.objects.get(office=office).title == "Launch email"
    handed = Task.objects.get(handed_off_from=task)
    assert handed.session.channel == Channel.objects.get(kind="direct", coworker=theo)
    assert task.input_tokens > 0 and task.cache_read_tokens == 700 and task.cost_usd is not None
    # The request carried the cached front and the tools.
    body = fake_anthropic.requests[0].body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {tool["name"] for tool in body["tools"]} >= {"write_document", "handoff", "search_history"}
    # Each call caches its whole self, so the next (after the tool result) reads all of it.
    for request in fake_anthropic.requests[:3]:
        assert request.body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    first, second = (plain(request.body["messages"]) for request in fake_anthropic.requests[:2])
    assert second[: len(first)] == first


def plain(turns: list[dict]) -> list[dict]:
    """Messages on the wire without their cache markers."""
    return [
        {**turn, "content": [{k: v for k, v in block.items() if k != "cache_control"} for block in turn["content"]]}
        for turn in turns
    ]


def test_through_claude_a_task_begins_with_the_whole_last_call_of_the_task_before(
    fake_anthropic, office, mina, direct_channel, no_background
):
    fake_anthropic.add(
        Reply(text="Noted."),
        Reply(text="Saving it. ", tools=[Tool("toolu_11", "write_document", {"title": "Launch plan", "content": "May 4"})]),
        Reply(text="Saved “Launch plan”."),
        Reply(text="Done."),
    )
    run(direct_channel, "We launch in spring.")
    # Learned after the session began: it rides in the next task's tail, which then stays in place.
    MemoryItem.objects.create(office=office, text="The launch is on May 4.", kind="project")
    run(direct_channel, "Write the launch plan.")
    run(direct_channel, "Now draft the announcement.")

    bodies = [request.body for request in fake_anthropic.requests]
    last_of_second, first_of_third = plain(bodies[2]["messages"]), plain(bodies[3]["messages"])
    assert first_of_third[: len(last_of_second)] == last_of_second
    assert bodies[3]["system"] == bodies[2]["system"]
    assert json.dumps(bodies[3]["messages"]).count("The launch is on May 4.") == 1


def test_offline_the_same_flows_work(office, mina, theo, direct_channel, frames, no_background, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert get_provider().name == "offline"

    replied = run(direct_channel, "What is on the agenda?")
    written = run(direct_channel, "Write a spec called Export fixes")
    handed = run(direct_channel, "Hand this to Theo: fix the invite link on mobile.")

    assert [t.status for t in (replied, written, handed)] == ["done"] * 3
    assert services.task_messages(replied.session, turn=replied.turn).get(role="assistant").content == NOTHING_YET
    assert (replied.provider, replied.model, replied.cost_usd) == ("offline", "offline", 0), "no model, nothing billed"
    assert Document.objects.get(office=office, title="Export fixes").versions.count() == 1
    follow = Task.objects.get(handed_off_from=handed)
    assert follow.coworker == "theo"
    assert "fix the invite link on mobile" in services.task_messages(follow.session, turn=follow.turn).get(role="user").content


@pytest.mark.parametrize(
    "asked, brief",
    [
        ("Please hand the pricing page to Theo", "the pricing page"),
        ("@Mina please pass the pricing page over to Theo, it needs a table", "the pricing page: it needs a table"),
        ("Please hand off the signup page build to Theo.", "the signup page build"),
        ("Hand the booth shipping checklist over to Theo.", "the booth shipping checklist"),
        (
            "The signup form needs email validation before launch. Hand this off to Theo.",
            "The signup form needs email validation before launch",
        ),
        (
            "The signup form needs email validation. Hand it over to Theo: the copy too.",
            "The signup form needs email validation: the copy too",
        ),
    ],
)
def test_offline_a_handoff_asked_in_other_plain_words_is_made(asked, brief, office, mina, theo, direct_channel, frames, no_background, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    handed = run(direct_channel, asked)

    follow = Task.objects.get(handed_off_from=handed)
    assert follow.coworker == "theo"
    assert services.task_messages(follow.session, turn=follow.turn).get(role="user").content == f"Handoff from Mina: {brief}"


def test_offline_a_last_sentence_that_names_a_coworker_but_hands_nothing_on_is_no_handoff(
    office, mina, theo, direct_channel, frames, no_background, monkeypatch
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    said = run(direct_channel, "Lovely dinner last night. Give my regards to Theo.")

    assert not Task.objects.filter(handed_off_from=said).exists()


def test_offline_remember_said_to_someone_in_a_shared_channel_is_noted_and_remembered(
    office, mina, theo, main_channel, frames, no_background, monkeypatch
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    noted = run(main_channel, "@theo Remember that the booth demo runs on the tablet build")
    memory.extract_memory(task_id=noted.pk, provider=get_provider())

    reply = services.task_messages(noted.session, turn=noted.turn).get(role="assistant").content
    assert reply == "Noted: the booth demo runs on the tablet build."
    assert list(MemoryItem.objects.filter(active=True).values_list("text", flat=True)) == [
        "The booth demo runs on the tablet build."
    ]


def test_offline_a_reply_says_on_which_day_the_person_said_it(office, mina, direct_channel, frames, no_background, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    said = run(direct_channel, "The launch date is May 4.")
    services.task_messages(said.session, turn=said.turn).update(created_at=datetime(2026, 11, 30, 12, tzinfo=timezone.utc))

    asked = run(direct_channel, "When is the launch?")

    reply = services.task_messages(asked.session, turn=asked.turn).get(role="assistant").content
    assert "- The launch date is May 4 (you said this on Nov 30)" in reply
    assert "task" not in reply, "people never see task numbers"


def test_offline_what_it_says_it_notes_is_remembered_and_what_it_says_it_forgets_is_gone(
    office, mina, direct_channel, frames, no_background, monkeypatch
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    noted = run(direct_channel, "Please remember that the launch date is May 4.")
    memory.extract_memory(task_id=noted.pk, provider=get_provider())  # the job the pipeline queues after the task

    reply = services.task_messages(noted.session, turn=noted.turn).get(role="assistant").content
    assert reply == "Noted: the launch date is May 4."
    assert list(MemoryItem.objects.filter(active=True).values_list("text", flat=True)) == ["The launch date is May 4."]

    forgot = run(direct_channel, "Please forget the launch date.")
    memory.extract_memory(task_id=forgot.pk, provider=get_provider())

    assert services.task_messages(forgot.session, turn=forgot.turn).get(role="assistant").content == (
        "Okay, I'll forget the launch date."
    )
    assert not MemoryItem.objects.filter(active=True).exists()
