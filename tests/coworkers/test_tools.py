"""The coworkers' tools: each one's happy path, every failure as an error result (never an exception),
memory decisions with their audit log, history search, handoff, and the office boundary."""

from __future__ import annotations

import logging

import pytest

from coworkers import tools
from coworkers.models import Coworker
from coworkers.providers.scripted import CallTools, Reply, ScriptedProvider
from coworkers.tools import TOOL_SPECS, ToolContext, run_tool
from office import documents, events
from office.markdown import render
from office.models import Channel, Document
from sessions import pipeline, posting, services
from sessions.history import ToolCall
from sessions.models import MemoryEvent, MemoryItem, Message, Task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_background(monkeypatch) -> list[int]:
    """Jobs and events are recorded, not run: a handoff's task stays queued for the test to inspect."""
    queued: list[int] = []
    monkeypatch.setattr("sessions.tasks.run_task.enqueue", queued.append)
    monkeypatch.setattr("sessions.tasks.extract_task_memory.enqueue", lambda task_id: None)
    monkeypatch.setattr("sessions.tasks.fold_session.enqueue", lambda *args: None)
    monkeypatch.setattr("office.events.send_now", lambda channel_id, frame: None)
    return queued


def start(channel: Channel, instruction: str = "Plan the launch", coworker: str = "mina") -> Task:
    session = services.get_active_session(channel=channel)
    task, _ = services.start_task(session=session, instruction=instruction, coworker=coworker)
    return task


def context_for(task: Task, coworker: str = "mina") -> ToolContext:
    channel = task.session.channel
    return ToolContext(
        office_id=channel.office_id,
        channel_id=channel.pk,
        session_id=task.session_id,
        task_id=task.pk,
        turn=task.turn,
        coworker=coworker,
    )


@pytest.fixture
def task(direct_channel) -> Task:
    return start(direct_channel)


@pytest.fixture
def ctx(task) -> ToolContext:
    return context_for(task)


# The specs ------------------------------------------------------------------------------


def test_every_tool_has_a_described_json_schema():
    assert [spec.name for spec in TOOL_SPECS] == [
        "list_documents", "read_document", "write_document", "remember", "forget", "search_history", "handoff",
    ]
    for spec in TOOL_SPECS:
        assert len(spec.description) > 40, spec.name
        schema = spec.parameters
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"]), spec.name
        for name, prop in schema["properties"].items():
            assert prop["type"] in ("string", "integer") and prop["description"], (spec.name, name)


# Documents --------------------------------------------------------------------------------


def test_it_writes_then_lists_then_reads_a_document(ctx, task):
    first = run_tool(ctx, "write_document", {"title": "Launch plan", "content": "Launch on May 4.", "kind": "plan"})
    second = run_tool(ctx, "write_document", {"title": "launch plan", "content": "Launch on May 11."})

    assert first == tools.ToolOutcome("Saved “Launch plan” as version 1.")
    assert second == tools.ToolOutcome("Saved “Launch plan” as version 2.")
    version = Document.objects.get().versions.first()
    assert (version.number, version.author, version.source_task) == (2, "mina", task)

    listed = run_tool(ctx, "list_documents", {})
    assert not listed.is_error
    assert listed.content.startswith("1 document:\n- Launch plan (plan, version 2, updated ")

    read = run_tool(ctx, "read_document", {"title": "LAUNCH PLAN"})
    assert not read.is_error
    assert read.content.startswith("“Launch plan” (plan), version 2 (current), by mina, ")
    assert read.content.endswith("\n\nLaunch on May 11.")
    old = run_tool(ctx, "read_document", {"title": "Launch plan", "version": 1})
    assert "version 1 of 2" in old.content and old.content.endswith("Launch on May 4.")


def test_it_says_when_a_write_changes_nothing(ctx):
    run_tool(ctx, "write_document", {"title": "Tagline", "content": "Plan less, do more."})
    again = run_tool(ctx, "write_document", {"title": "Tagline", "content": "Plan less, do more."})

    assert again == tools.ToolOutcome("“Tagline” already has exactly this text; it stays at version 1.")


def test_listing_an_empty_office_or_no_match_is_not_an_error(ctx):
    empty = run_tool(ctx, "list_documents", {})
    assert not empty.is_error and "no documents yet" in empty.content

    run_tool(ctx, "write_document", {"title": "Tagline", "content": "Plan less, do more."})
    none = run_tool(ctx, "list_documents", {"query": "pricing"})
    assert not none.is_error and none.content.startswith("No documents match “pricing”")


def test_reading_a_missing_document_suggests_the_closest_titles(ctx):
    run_tool(ctx, "write_document", {"title": "Launch plan", "content": "May 4."})

    outcome = run_tool(ctx, "read_document", {"title": "Lunch plan"})

    assert outcome.is_error
    assert outcome.content == "No document titled “Lunch plan” in this office. Did you mean: “Launch plan”?"


def test_a_document_over_the_limit_is_an_error_the_model_can_fix(ctx):
    outcome = run_tool(ctx, "write_document", {"title": "Huge", "content": "x" * 100_001})

    assert outcome.is_error and "at most 100,000" in outcome.content and "Split it" in outcome.content
    assert not Document.objects.exists()


# Arguments and failures -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("make_coffee", {}, "There is no tool called “make_coffee”. The tools are: list_documents, read_document"),
        ("read_document", {}, "read_document needs the argument “title”"),
        ("read_document", {"title": "   "}, "“title” must not be empty"),
        ("read_document", {"title": 42}, "“title” must be a string, got int"),
        ("read_document", {"title": "Plan", "version": "2"}, "“version” must be an integer, got str"),
        ("read_document", {"title": "Plan", "version": True}, "“version” must be an integer, got bool"),
        ("read_document", {"title": "Plan", "version": 0}, "“version” must be at least 1; got 0"),
        ("read_document", {"name": "Plan"}, "unexpected argument(s) name; it takes: title, version"),
        ("read_document", ["Plan"], "read_document takes an object of arguments, not list"),
        (["read_document"], {}, "There is no tool called “['read_document']”"),
        ("write_document", {"title": "T", "content": "C", "kind": "poem"}, "“kind” must be one of: draft, spec"),
        ("search_history", {"query": "price", "limit": 50}, "“limit” must be between 1 and 10; got 50"),
        ("remember", {"text": "x" * 1_001}, "A memory item is one short fact; this one has 1,001 characters"),
    ],
)
def test_bad_calls_come_back_as_errors_saying_what_to_fix(ctx, name, args, message):
    outcome = run_tool(ctx, name, args)

    assert outcome.is_error
    assert message in outcome.content


def test_an_unexpected_failure_is_an_error_result_and_is_logged(ctx, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(documents, "list_documents", broken)
    with caplog.at_level(logging.ERROR, logger="coworkers.tools"):
        outcome = run_tool(ctx, "list_documents", {})

    assert outcome.is_error
    assert "internal error (RuntimeError)" in outcome.content and "Try once more" in outcome.content
    assert "disk on fire" not in outcome.content  # internals stay in the log
    assert any("disk on fire" in (r.exc_text or "") for r in caplog.records)


def test_a_failed_write_leaves_nothing_half_done(ctx, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("audit log unavailable")

    monkeypatch.setattr(tools, "apply_decision", broken)
    outcome = run_tool(ctx, "remember", {"text": "The launch is on May 4."})

    assert outcome.is_error
    assert not MemoryItem.objects.exists()
    # The connection is still usable after the failed write.
    assert run_tool(ctx, "write_document", {"title": "Plan", "content": "Still works."}).content.startswith("Saved")


# Memory -------------------------------------------------------------------------------------


def test_remember_adds_an_item_with_its_audit_event(ctx, task, office):
    outcome = run_tool(ctx, "remember", {"text": "The user prefers short subject lines.", "kind": "preference"})

    item = MemoryItem.objects.get()
    assert outcome == tools.ToolOutcome(f"Remembered as item {item.pk} (preference): “The user prefers short subject lines.”")
    assert (item.office, item.kind, item.source_task, item.active) == (office, "preference", task, True)
    event = MemoryEvent.objects.get()
    assert (event.action, event.actor, event.item, event.source_task) == ("add", "mina", item, task)


def test_remembering_a_known_fact_changes_nothing(ctx):
    run_tool(ctx, "remember", {"text": "The launch is on May 4."})

    outcome = run_tool(ctx, "remember", {"text": "The launch is on May 4."})

    item = MemoryItem.objects.get()
    assert outcome.content == f"Already remembered as item {item.pk}, nothing changed: “The launch is on May 4.”"
    assert not outcome.is_error
    assert list(MemoryEvent.objects.order_by("created_at", "pk").values_list("action", flat=True)) == ["add", "noop"]


def test_remembering_a_new_value_updates_the_item(ctx):
    run_tool(ctx, "remember", {"text": "The Team plan costs $29 a month."})

    outcome = run_tool(ctx, "remember", {"text": "The Team plan costs $39 a month."})

    item = MemoryItem.objects.get()
    assert item.text == "The Team plan costs $39 a month."
    assert outcome.content == (
        f"Updated memory item {item.pk}: “The Team plan costs $29 a month.” is now “The Team plan costs $39 a month.”"
    )
    update = MemoryEvent.objects.get(action="update")
    assert (update.before, update.after, update.actor) == ("The Team plan costs $29 a month.", item.text, "mina")


def test_forget_deactivates_the_best_match(ctx, office):
    launch = MemoryItem.objects.create(office=office, text="The launch is on May 4.", kind="project")
    price = MemoryItem.objects.create(office=office, text="The Team plan costs $29 a month.", kind="project")

    outcome = run_tool(ctx, "forget", {"text": "the launch date"})

    assert outcome == tools.ToolOutcome(f"Forgot memory item {launch.pk}: “The launch is on May 4.”")
    launch.refresh_from_db()
    price.refresh_from_db()
    assert (launch.active, price.active) == (False, True)
    event = MemoryEvent.objects.get()
    assert (event.action, event.item, event.actor) == ("delete", launch, "mina")


def test_forget_says_when_nothing_matches_and_names_the_closest(ctx, office):
    item = MemoryItem.objects.create(office=office, text="The Team plan costs $29 a month.", kind="project")

    outcome = run_tool(ctx, "forget", {"text": "the Team plan's logo colour"})

    assert not outcome.is_error
    assert outcome.content == (
        "Nothing in memory matches “the Team plan's logo colour” closely enough, so nothing was forgotten. "
        f"The closest stored item is {item.pk}: “The Team plan costs $29 a month.”"
    )
    item.refresh_from_db()
    assert item.active
    assert MemoryEvent.objects.get().action == "noop"


# History search ------------------------------------------------------------------------------


def finish_task(channel: Channel, instruction: str, answer: str, coworker: str = "mina") -> Task:
    task = start(channel, instruction, coworker)
    services.append_message(session=task.session, turn=task.turn, role="assistant", content=answer, coworker=coworker)
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE)
    return task


def test_search_history_finds_the_older_task_that_matches(direct_channel):
    finish_task(direct_channel, "Draft a tagline for the spring campaign", "How about “Plan less, do more.”")
    finish_task(direct_channel, "What should the Team plan cost?", "We agreed the Team plan costs $29 a month. It renews yearly.")
    finish_task(direct_channel, "Write the onboarding email", "Here is the onboarding email draft.")
    current = start(direct_channel, "Remind me what we said about pricing")

    outcome = run_tool(context_for(current), "search_history", {"query": "Team plan cost"})

    assert not outcome.is_error
    lines = outcome.content.splitlines()
    assert lines[0] == "Earlier exchanges matching “Team plan cost”, best first:"
    assert lines[2].startswith("## Task 2, ")
    assert lines[3:5] == [
        "User: What should the Team plan cost?",
        "Mina: We agreed the Team plan costs $29 a month. It renews yearly.",
    ]
    assert all("Task 4" not in line for line in lines), "the current task is not history"


def test_search_history_finds_the_channel_s_earlier_conversations_too(direct_channel):
    finish_task(direct_channel, "Which venue did we pick for the offsite?", "We picked Lakeview Lodge for the offsite.")
    services.end_active_session(channel=direct_channel)
    current = start(direct_channel, "Remind me about the venue")

    outcome = run_tool(context_for(current), "search_history", {"query": "offsite venue"})

    assert "## Task 1 of an earlier conversation, " in outcome.content
    assert "We picked Lakeview Lodge for the offsite." in outcome.content


def test_search_history_returns_as_many_exchanges_as_asked_newest_first_among_equals(direct_channel):
    long_answer = "The Team plan costs $29 a month. " + "Filler sentence about nothing in particular. " * 40
    for _ in range(4):
        finish_task(direct_channel, "Team plan price?", long_answer)
    current = start(direct_channel, "price again")

    outcome = run_tool(context_for(current), "search_history", {"query": "Team plan price", "limit": 2})

    headers = [line for line in outcome.content.splitlines() if line.startswith("## ")]
    assert [line.split(",")[0] for line in headers] == ["## Task 4", "## Task 3"]  # newest first among equals
    assert outcome.content.count("$29") == 2


def test_search_history_says_so_when_nothing_matches(direct_channel):
    finish_task(direct_channel, "Draft a tagline", "Plan less, do more.")
    current = start(direct_channel, "anything about invoices?")

    outcome = run_tool(context_for(current), "search_history", {"query": "invoices"})

    assert outcome == tools.ToolOutcome("Nothing earlier in this channel mentions “invoices”. Try other words.")
    first = run_tool(context_for(Task.objects.get(turn=1, session=current.session)), "search_history", {"query": "tagline"})
    assert not first.is_error and first.content.startswith("Nothing earlier"), "what came after it is not history"


def test_search_history_stays_in_its_own_channel(office, mina, direct_channel, main_channel):
    finish_task(main_channel, "What should the Team plan cost?", "The Team plan costs $29 a month.")
    finish_task(direct_channel, "Draft a tagline", "Plan less, do more.")
    current = start(direct_channel, "pricing?")

    outcome = run_tool(context_for(current), "search_history", {"query": "Team price"})

    assert outcome.content == "Nothing earlier in this channel mentions “Team price”. Try other words."


# Handoff --------------------------------------------------------------------------------------


def test_handoff_starts_a_task_in_the_targets_direct_channel(task, ctx, theo, no_background):
    outcome = run_tool(ctx, "handoff", {"coworker": "Theo", "brief": "Set up the signup page for May 4."})

    theo_channel = Channel.objects.get(kind=Channel.Kind.DIRECT, coworker=theo)  # opened for the handoff
    handed = Task.objects.get(session__channel=theo_channel)
    assert outcome == tools.ToolOutcome(f"Handed off to Theo: [task {handed.turn} in the 1:1 with Theo](/t/{handed.pk}/).")
    assert (handed.coworker, handed.handed_off_from, handed.status) == ("theo", task, Task.Status.QUEUED)
    assert handed.origin == {"handoff_from": task.pk, "channel": task.session.channel_id, "by": "mina"}
    assert list(task.handoffs.all()) == [handed]
    instruction = services.task_messages(handed.session, turn=handed.turn).get()
    assert (instruction.role, instruction.content) == ("user", "Handoff from Mina: Set up the signup page for May 4.")
    assert no_background == [handed.pk]


def test_a_handed_off_instruction_is_shown_as_written_by_the_coworker_who_handed_it_on(ctx, theo, alice, client, no_background):
    from office.models import ChannelEvent

    run_tool(ctx, "handoff", {"coworker": "Theo", "brief": "Set up the signup page for May 4."})

    theo_channel = Channel.objects.get(kind=Channel.Kind.DIRECT, coworker=theo)
    live = ChannelEvent.objects.get(channel=theo_channel, type="message").payload["message"]
    assert live["sent_by"] == "Mina", "the open page names the sender live"
    [shown] = events.session_frame(theo_channel.pk)["messages"]
    assert shown["message"]["sent_by"] == "Mina", "and so does the snapshot a reconnecting page draws"
    client.force_login(alice)
    page = client.get(f"/c/{theo_channel.pk}/").content.decode()
    assert '<span class="who">Mina</span>' in page and '<span class="who">You</span>' not in page
    from_mina = ctx.task_id
    assert f'Handed on from <a href="/t/{from_mina}/">the 1:1 with Mina</a>' in page, "and links back to where it came from"
    found = client.get("/o/acme/search/", {"q": "signup page"}).content.decode()
    assert '"result-meta muted">Mina · ' in found and '"result-meta muted">You · ' not in found, "a search result names who wrote it too"


def test_handoff_uses_the_targets_existing_direct_channel(ctx, theo, office):
    existing = Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name="Theo (1:1)", coworker=theo)

    outcome = run_tool(ctx, "handoff", {"coworker": "@theo", "brief": "Check the DNS."})

    handed = Task.objects.get(session__channel=existing)
    assert outcome.content == f"Handed off to Theo: [task 1 in the 1:1 with Theo](/t/{handed.pk}/)."
    assert handed.coworker == "theo"


def test_a_project_name_in_the_handoff_link_is_words_not_markdown(office, mina, theo):
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="x](https://evil.example/phish) [y")
    project.members.set([mina, theo])
    current = start(project, "Plan the launch")

    outcome = run_tool(context_for(current), "handoff", {"coworker": "theo", "brief": "Build the landing page."})

    handed = Task.objects.get(handed_off_from=current)
    html = render(outcome.content)
    assert html.count("<a ") == 1 and f'href="/t/{handed.pk}/"' in html and "evil.example" not in html.split('href="')[1].split('"')[0]


def test_handoff_stays_in_the_project_channel_when_both_are_members(office, mina, theo):
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="launch")
    project.members.set([mina, theo])
    current = start(project, "Plan the launch")

    outcome = run_tool(context_for(current), "handoff", {"coworker": "theo", "brief": "Build the landing page."})

    handed = Task.objects.get(handed_off_from=current)
    assert outcome.content == f"Handed off to Theo: [task 2 in #launch](/t/{handed.pk}/)."
    assert (handed.session, handed.turn, handed.coworker) == (current.session, 2, "theo")
    assert not Channel.objects.filter(kind=Channel.Kind.DIRECT, coworker=theo).exists()


def test_handoff_goes_to_the_direct_channel_when_the_target_is_not_in_the_project(office, mina, theo):
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="campaign")
    project.members.set([mina])
    current = start(project, "Plan the campaign")

    outcome = run_tool(context_for(current), "handoff", {"coworker": "theo", "brief": "Add tracking."})

    handed = Task.objects.get(handed_off_from=current)
    assert outcome.content == f"Handed off to Theo: [task 1 in the 1:1 with Theo](/t/{handed.pk}/)."


def test_a_handoff_in_a_project_channel_lets_the_running_task_finish(office, mina, theo, frames, no_background):
    """The whole loop: the handoff's result is stored after the new task's instruction, in the same session."""
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="launch")
    project.members.set([mina, theo])
    current = posting.post_instruction(channel=project, text="Plan the launch", coworker=mina)
    call = ToolCall(id="toolu_1", name="handoff", args={"coworker": "theo", "brief": "Build the landing page."})
    provider = ScriptedProvider([CallTools((call,)), Reply("Theo is on the landing page.")])

    done = pipeline.run_task(current.pk, provider=provider)

    assert done.status == Task.Status.DONE, done.error
    result = Message.objects.get(session=current.session, role="tool")
    assert result.content == f"Handed off to Theo: [task 2 in #launch](/t/{Task.objects.get(session=current.session, turn=2).pk}/)."
    # Theo's task waited for Mina's to finish; now it runs, and its prompt sees hers complete.
    handed = Task.objects.get(session=current.session, turn=2)
    theo_provider = ScriptedProvider([Reply("Landing page is on its way.")])
    assert pipeline.run_task(handed.pk, provider=theo_provider).status == Task.Status.DONE
    assert "Theo is on the landing page." in [m.content for m in theo_provider.requests[0].messages]


@pytest.mark.parametrize(
    ("who", "message"),
    [
        ("Zed", "There is no coworker “Zed” in this office. The team: Theo (@theo, Engineer)."),
        ("mina", "You cannot hand work to yourself. Hand it to one of: Theo (@theo, Engineer)."),
        ("MINA", "You cannot hand work to yourself."),
    ],
)
def test_handoff_refuses_unknown_coworkers_and_yourself(ctx, theo, who, message):
    outcome = run_tool(ctx, "handoff", {"coworker": who, "brief": "Do it."})

    assert outcome.is_error and message in outcome.content
    assert Task.objects.count() == 1


def test_handoff_refuses_an_endless_chain(direct_channel, theo):
    previous = None
    for _ in range(tools.MAX_HANDOFF_CHAIN + 1):
        task = start(direct_channel)
        Task.objects.filter(pk=task.pk).update(handed_off_from=previous)
        previous = task

    outcome = run_tool(context_for(previous), "handoff", {"coworker": "theo", "brief": "Your turn."})

    assert outcome.is_error and "already been handed on 5 times" in outcome.content


# The office boundary -------------------------------------------------------------------------


@pytest.fixture
def globex(other_office) -> dict:
    """Another office with a coworker, a document and a memory item of its own."""
    rival = Coworker.objects.create(office=other_office, name="Theo", slug="theo", role="Spy", persona="…")
    documents.write_document(office_id=other_office.pk, title="Launch plan", content="Globex secret.", author="theo")
    item = MemoryItem.objects.create(office=other_office, text="The launch is on May 4.", kind="project")
    return {"coworker": rival, "item": item}


def test_tools_never_read_another_offices_documents(ctx, globex):
    assert "no documents yet" in run_tool(ctx, "list_documents", {}).content
    read = run_tool(ctx, "read_document", {"title": "Launch plan"})
    assert read.is_error and "Globex secret" not in read.content and "Did you mean" not in read.content

    run_tool(ctx, "write_document", {"title": "Launch plan", "content": "Ours."})

    assert documents.read_document(globex["coworker"].office_id, "Launch plan")[1].content == "Globex secret."
    assert run_tool(ctx, "read_document", {"title": "Launch plan"}).content.endswith("Ours.")


def test_tools_never_touch_another_offices_memory(ctx, office, globex):
    forgot = run_tool(ctx, "forget", {"text": "the launch date"})
    assert "nothing was forgotten" in forgot.content and "May 4" not in forgot.content

    remembered = run_tool(ctx, "remember", {"text": "The launch is on May 4."})
    assert remembered.content.startswith("Remembered as item")  # an add here, not a noop against Globex's item

    globex["item"].refresh_from_db()
    assert globex["item"].active
    assert MemoryItem.objects.filter(office=office).count() == 1
    assert not MemoryEvent.objects.filter(office=globex["item"].office).exists()


def test_handoff_never_reaches_another_offices_coworker(ctx, globex):
    outcome = run_tool(ctx, "handoff", {"coworker": "theo", "brief": "Leak it."})

    assert outcome.is_error and "no coworker “theo”" in outcome.content
    assert not Task.objects.filter(session__channel__office=globex["coworker"].office).exists()


def test_handoff_refuses_to_fan_out_past_a_few_coworkers_per_request_and_one_per_handoff(direct_channel, theo):
    request = start(direct_channel)
    for n in range(tools.MAX_HANDOFFS_PER_REQUEST):
        assert not run_tool(context_for(request), "handoff", {"coworker": "theo", "brief": f"Part {n + 1}."}).is_error

    refused = run_tool(context_for(request), "handoff", {"coworker": "theo", "brief": "One part too many."})

    assert refused.is_error and "already handed on parts of this request 3 times" in refused.content
    handed = Task.objects.filter(handed_off_from=request).order_by("pk").first()
    assert not run_tool(context_for(handed, "theo"), "handoff", {"coworker": "mina", "brief": "Over to you."}).is_error
    again = run_tool(context_for(handed, "theo"), "handoff", {"coworker": "mina", "brief": "And again."})
    assert again.is_error and "already handed on this handed-on work 1 time." in again.content
    assert Task.objects.count() == 1 + 3 + 1
