"""The task pipeline with the scripted provider: store first, stream, tools, stop, failures, redelivery."""

from datetime import timedelta

import pytest
from django.utils import timezone

from coworkers.providers import ProviderError
from coworkers.providers.scripted import CallTools, Fail, Reply, ScriptedProvider
from coworkers.routing import choose_responders, mentioned_slugs
from coworkers.providers.offline import OfflineResponder
from office.models import Channel
from sessions import pipeline, posting, services
from sessions.history import ToolCall, find_faults, rebuild_messages
from sessions.models import Message, Task


def roles(task: Task) -> list[str]:
    return list(services.task_messages(task.session, turn=task.turn).values_list("role", flat=True))


def test_the_instruction_is_stored_before_any_model_is_called(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Draft the launch email", provider=ScriptedProvider([]))

    assert task.status == Task.Status.QUEUED and task.coworker == "mina"
    assert roles(task) == ["user"]
    assert no_background == [task.pk]
    assert [f["type"] for f in frames] == ["message", "task"]
    assert frames[0]["message"]["content"] == "Draft the launch email"


def test_a_reply_streams_in_batched_deltas_and_is_stored(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Draft the launch email")
    reply = "Here is a draft. " * 40
    provider = ScriptedProvider([Reply(reply, chunk_size=4)])

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    assert roles(done) == ["user", "assistant"]
    deltas = [f for f in frames if f["type"] == "delta"]
    assert "".join(d["text"] for d in deltas) == reply
    assert len(deltas) < len(reply) // 4, "batched, not one event per chunk"
    assert [f["status"] for f in frames if f["type"] == "task"] == ["queued", "running", "done"]
    assert done.prompt_report["layers"]["current"]["chars"] == len("Draft the launch email")
    assert done.output_tokens > 0 and done.provider == "scripted"


def test_a_tool_call_runs_and_its_result_is_stored_before_the_answer(office, direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Save the tagline as a draft")
    call = ToolCall(id="toolu_1", name="write_document", args={"title": "Tagline", "content": "Plan less, do more."})
    provider = ScriptedProvider([CallTools((call,)), Reply("Saved it as “Tagline”.")])

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    assert roles(done) == ["user", "assistant", "tool", "assistant"]
    result = services.task_messages(done.session, turn=done.turn).get(role="tool")
    assert result.tool_call_id == "toolu_1" and "version 1" in result.content
    assert office.documents.get().title == "Tagline"
    # The second model call saw the tool result, in a valid sequence.
    second = provider.requests[1]
    assert second.messages[-1].type == "tool" and find_faults(list(second.messages)) == []


def test_a_failing_tool_comes_back_to_the_model_as_an_error_not_a_crash(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Read the roadmap")
    call = ToolCall(id="toolu_1", name="read_document", args={"title": "Roadmap that does not exist"})
    provider = ScriptedProvider([CallTools((call,)), Reply("I could not find it.")])

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    # The record format has no error flag: the model reads the failure in the result's text.
    result = provider.requests[1].messages[-1]
    assert result.type == "tool" and result.content.startswith("Error: No document titled")


def test_stop_ends_the_work_on_the_server_and_keeps_what_was_said(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Write a long essay")

    def start_then_get_stopped(request):
        assert pipeline.request_stop(Task.objects.get(pk=task.pk))
        return Reply("word " * 200, chunk_size=5, delay=0.02)

    done = pipeline.run_task(task.pk, provider=ScriptedProvider([start_then_get_stopped]))

    assert done.status == Task.Status.STOPPED
    kept = services.task_messages(done.session, turn=done.turn).get(role="assistant").content
    assert 0 < len(kept) < len("word " * 200)



def test_a_stop_that_comes_once_the_reply_is_whole_leaves_it_done(direct_channel, frames, no_background):
    """Stop clicked as the last words arrive: the whole reply is there, so the task is done, not
    "Stopped" over a finished reply."""
    task = posting.post_instruction(channel=direct_channel, text="Name our launch")
    provider = ScriptedProvider([Reply("Call it Spring Forward.")])
    streamed = provider.complete

    def then_stop_clicked(request, *, on_text=None, should_stop=None):
        completion = streamed(request, on_text=on_text, should_stop=should_stop)
        assert pipeline.request_stop(Task.objects.get(pk=task.pk))
        return completion

    provider.complete = then_stop_clicked
    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    assert services.task_messages(done.session, turn=done.turn).get(role="assistant").content == "Call it Spring Forward."

def test_a_model_failure_fails_the_task_with_a_message_the_user_understands(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Hello")
    failure = ProviderError("Claude is overloaded right now. Try again shortly.", retryable=True)

    done = pipeline.run_task(task.pk, provider=ScriptedProvider([Fail(failure)]))

    assert done.status == Task.Status.FAILED
    assert done.error == "Claude is overloaded right now. Try again shortly."
    assert frames[-1] == {"type": "task", "id": done.pk, "turn": 1, "status": "failed", "error": done.error, "coworker": "mina"}


def new_conversation_during_the_call(provider, channel):
    """The provider, with "New conversation" pressed (in another tab) while its first reply is asked for."""
    complete = provider.complete

    def complete_after_a_new_conversation(request, **kwargs):
        if not provider.requests:
            services.start_session(channel=channel)
        return complete(request, **kwargs)

    provider.complete = complete_after_a_new_conversation
    return provider


def test_a_new_conversation_started_while_a_reply_runs_stops_it_and_says_why(direct_channel, frames, no_background, caplog):
    task = posting.post_instruction(channel=direct_channel, text="Hello")
    provider = new_conversation_during_the_call(ScriptedProvider([Reply("Hi there")]), direct_channel)

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.STOPPED and done.error == pipeline.CONVERSATION_ENDED
    assert not [r for r in caplog.records if r.levelname == "ERROR"], "not a failure with a traceback"


def test_what_was_queued_in_an_ended_conversation_stops_without_a_model_call_and_the_paid_call_is_counted(
    direct_channel, frames, no_background, monkeypatch
):
    from sessions import tasks

    first, second, third = (posting.post_instruction(channel=direct_channel, text=f"Step {n}") for n in (1, 2, 3))
    provider = new_conversation_during_the_call(ScriptedProvider([Reply("one"), Reply("two"), Reply("three")]), direct_channel)
    monkeypatch.setattr(pipeline, "get_provider", lambda: provider)
    no_background.clear()

    tasks.run_task(first.pk)
    for following in no_background:  # each delivery as the queue hands it on (the list grows as they run)
        tasks.run_task(following)

    first, second, third = (Task.objects.get(pk=t.pk) for t in (first, second, third))
    assert len(provider.requests) == 1, "only the reply already under way was asked for"
    assert (first.status, first.error) == (Task.Status.STOPPED, pipeline.CONVERSATION_ENDED)
    assert first.output_tokens > 0, "its model call was paid for, and is counted though its text had nowhere to go"
    assert [(t.status, t.error) for t in (second, third)] == [(Task.Status.STOPPED, pipeline.ENDED_BEFORE)] * 2
    assert no_background == [second.pk, third.pk], "each passed the turn on"
    assert {"type": "task", "id": third.pk, "turn": 3, "status": "stopped", "error": pipeline.ENDED_BEFORE, "coworker": "mina"} in frames


def test_the_partial_reply_of_a_broken_stream_is_kept(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Hello")
    broken = ProviderError("Could not reach Claude.", retryable=True)
    broken.partial_text = "Here is the start of"

    done = pipeline.run_task(task.pk, provider=ScriptedProvider([Fail(broken)]))

    assert done.status == Task.Status.FAILED
    assert services.task_messages(done.session, turn=1).get(role="assistant").content == "Here is the start of"


def test_a_resend_with_the_same_client_id_is_the_same_task(direct_channel, frames, no_background):
    first = posting.post_instruction(channel=direct_channel, text="Hi", client_id="c-1")
    again = posting.post_instruction(channel=direct_channel, text="Hi", client_id="c-1")

    assert again.pk == first.pk
    assert Task.objects.count() == 1 and Message.objects.count() == 1


@pytest.mark.parametrize("text, code", [("   ", "empty"), ("x" * 20_001, "too_long")])
def test_bad_instructions_are_refused_with_a_code(direct_channel, frames, no_background, text, code):
    with pytest.raises(posting.InstructionRejected) as refused:
        posting.post_instruction(channel=direct_channel, text=text)
    assert refused.value.code == code
    assert not Task.objects.exists()


def test_a_second_delivery_leaves_a_live_task_to_its_worker_and_a_done_one_alone(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Hi")
    assert pipeline.claim(task.pk) is not None

    with pytest.raises(pipeline.TaskBusy):
        pipeline.claim(task.pk)

    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE)
    assert pipeline.claim(task.pk) is None


def test_a_task_whose_worker_died_is_resumed_and_its_interrupted_tool_call_repaired(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Check the numbers")
    pipeline.claim(task.pk)
    call = ToolCall(id="toolu_1", name="list_documents", args={})
    services.append_message(session=task.session, turn=1, role="assistant", tool_calls=[call], coworker="mina")
    # The worker dies here: its lease runs out.
    Task.objects.filter(pk=task.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    provider = ScriptedProvider([Reply("Done checking.")])
    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE and done.attempts == 2
    sent = provider.requests[0].messages
    assert sent[-1].type == "tool" and sent[-1].status == "error", "the interrupted call is answered with an error"
    assert roles(done) == ["user", "assistant", "assistant"], "nothing duplicated, nothing lost"
    assert find_faults(rebuild_messages(services.load_records(done.session)).messages) == []


def test_mentions_pick_who_answers_in_a_shared_channel(office, mina, theo, main_channel):
    team = [mina, theo]
    assert mentioned_slugs("@theo can you check, and @Mina too?", team) == ["theo", "mina"]
    assert mentioned_slugs("email me at a@theo.com", team) == []
    assert mentioned_slugs("Why does `@mina.task` fail?\n```\n@theo.route('/')\n```\n@Mina look", team) == ["mina"]
    # Code is what the message shows as code: double backticks, a span across a line, an indented block.
    assert mentioned_slugs("See ``@theo`` and `x =\n@theo`, then:\n\n    @theo (a log line)\n\n@Mina look", team) == ["mina"]
    # Emphasis and a link's words are prose.
    assert mentioned_slugs("**@theo** and [@mina](https://example.com)", team) == ["theo", "mina"]

    picked = choose_responders(main_channel, "@theo how long will the export fix take?", OfflineResponder())
    assert [c.slug for c in picked] == ["theo"]
    # With no mention the router decides, and a name in quoted code is not one it is given.
    for quoted in ("Remember that `@theo` is the handle of our bot", "Note this:\n```\ncc theo\n```"):
        assert [c.slug for c in choose_responders(main_channel, quoted, OfflineResponder())] == ["mina"], quoted



def test_an_instruction_that_mentions_only_someone_outside_the_project_is_refused_with_who_is_in_it(office, mina, theo):
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="website")
    project.members.set([theo])

    with pytest.raises(posting.InstructionRejected) as refused:
        posting.post_instruction(channel=project, text="@mina can you review the copy?")

    assert refused.value.code == "not_member"
    assert refused.value.detail == "Mina is not in #website. Ask Theo here, or Mina in their 1:1."
    assert not Task.objects.filter(session__channel=project).exists(), "nothing stored"
    # Someone of the project mentioned beside her answers, as does a message that mentions nobody.
    assert [c.slug for c in choose_responders(project, "@theo and @mina: thoughts?", OfflineResponder())] == ["theo"]
    assert [c.slug for c in choose_responders(project, "Thoughts on the copy?", OfflineResponder())] == ["theo"]

def test_a_coworker_taken_off_a_project_does_not_answer_what_waited_for_them(office, mina, theo, no_background):
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="website")
    project.members.set([mina, theo])
    task = posting.post_instruction(channel=project, text="@theo can you check the build?")
    project.members.set([mina])  # edited while the instruction waited
    provider = ScriptedProvider([Reply("Checked: all green.")])

    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.STOPPED and done.error == "Stopped: Theo left #website before this was answered."
    assert provider.requests == [], "no model call"
    assert not Message.objects.filter(session=done.session, role="assistant").exists()


def test_without_a_mention_the_router_picks_by_role_and_skills(office, mina, theo, main_channel):
    picked = choose_responders(main_channel, "Our python infrastructure keeps timing out, can someone look?", OfflineResponder())
    assert [c.slug for c in picked] == ["theo"]


def test_in_all_hands_nobody_has_to_answer(office, mina, theo):
    all_hands = Channel.objects.create(office=office, kind=Channel.Kind.ALL_HANDS, name="all-hands")
    assert choose_responders(all_hands, "Reminder: the office is closed Friday.", OfflineResponder()) == []


def test_a_second_instruction_waits_for_the_first_and_both_finish_in_order(direct_channel, frames, no_background):
    first = posting.post_instruction(channel=direct_channel, text="Draft the email")
    pipeline.claim(first.pk)
    second = posting.post_instruction(channel=direct_channel, text="And a subject line")

    with pytest.raises(pipeline.TaskBusy):
        pipeline.claim(second.pk)

    services.append_message(session=first.session, turn=1, role="assistant", content="Here is the email.", coworker="mina")
    pipeline.finish(Task.objects.get(pk=first.pk), Task.Status.DONE)
    provider = ScriptedProvider([Reply("Subject: Plan less, do more.")])
    assert pipeline.run_task(second.pk, provider=provider).status == Task.Status.DONE
    assert provider.requests[0].messages[-2].content == "Here is the email."



def test_a_burst_in_one_conversation_waits_without_holding_a_reply_thread_and_passes_the_turn_on(
    direct_channel, frames, no_background
):
    """Twelve instructions sent at once held the embedded server's reply threads asleep in
    retries, and other offices' replies waited minutes. A delivery that must wait ends at once;
    each task sends the next when it ends."""
    from sessions import tasks

    first, second, third = (posting.post_instruction(channel=direct_channel, text=f"Step {n}") for n in (1, 2, 3))
    pipeline.claim(first.pk)
    no_background.clear()
    waits = []

    tasks.run_task.run_here(second.pk, sleep=waits.append)

    assert waits == [] and Task.objects.get(pk=second.pk).status == Task.Status.QUEUED, "no thread kept waiting"
    Task.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timedelta(seconds=1))  # resumed, finished
    tasks.run_task(first.pk)
    assert Task.objects.get(pk=first.pk).status == Task.Status.DONE
    assert no_background == [second.pk], "the first sends the next, not the third"
    pipeline.request_stop(Task.objects.get(pk=second.pk))  # stopped while queued
    tasks.run_task(second.pk)
    assert no_background == [second.pk, third.pk], "a stopped one passes the turn on too"

def test_a_task_whose_worker_died_in_a_conversation_since_ended_is_stopped_by_the_sweep_with_no_model_call(
    direct_channel, frames, no_background, monkeypatch
):
    from sessions import tasks

    first, second = (posting.post_instruction(channel=direct_channel, text=f"Step {n}") for n in (1, 2))
    pipeline.claim(first.pk)
    Task.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timedelta(seconds=5))  # the worker died
    Task.objects.filter(pk=second.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    services.start_session(channel=direct_channel)  # then "New conversation"
    provider = ScriptedProvider([])
    monkeypatch.setattr(pipeline, "get_provider", lambda: provider)

    swept = pipeline.stalled_tasks(timezone.now(), queued_for=timedelta(seconds=60))
    for task_id in swept:
        tasks.run_task(task_id)

    assert set(swept) == {first.pk, second.pk}
    assert provider.requests == [], "no model call for a reply with nowhere to go"
    assert [(t.status, t.error) for t in Task.objects.filter(pk__in=swept).order_by("turn")] == [
        (Task.Status.STOPPED, pipeline.CONVERSATION_ENDED), (Task.Status.STOPPED, pipeline.ENDED_BEFORE)
    ]


def test_a_later_task_never_overtakes_one_whose_worker_died(direct_channel, frames, no_background):
    first, second = (posting.post_instruction(channel=direct_channel, text=f"Step {n}") for n in (1, 2))
    pipeline.claim(first.pk)
    Task.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timedelta(seconds=5))  # the worker died

    with pytest.raises(pipeline.TaskBusy):
        pipeline.claim(second.pk)  # the sweep may send it before the first

    assert pipeline.claim(first.pk) is not None, "the first is resumed"
    assert Task.objects.get(pk=second.pk).status == Task.Status.QUEUED


def test_a_failure_after_the_reply_is_whole_leaves_it_done_and_passes_the_turn_on(direct_channel, frames, no_background, monkeypatch):
    from sessions import tasks

    first, second = (posting.post_instruction(channel=direct_channel, text=f"Step {n}") for n in (1, 2))
    monkeypatch.setattr(pipeline, "get_provider", lambda: ScriptedProvider([Reply("Done.")]))

    def broken_listener(sender, task, **kwargs):
        raise RuntimeError("a listener of finished tasks failed")

    pipeline.task_finished.connect(broken_listener, dispatch_uid="broken-listener")
    try:
        no_background.clear()
        tasks.run_task(first.pk)
    finally:
        pipeline.task_finished.disconnect(dispatch_uid="broken-listener")

    assert Task.objects.get(pk=first.pk).status == Task.Status.DONE, "not turned into a failure afterwards"
    assert no_background == [second.pk]


def test_a_task_abandoned_by_a_restarted_server_is_sent_again_with_the_next_instruction(
    direct_channel, frames, no_background, settings
):
    settings.BACKGROUND_WORK = "inprocess"  # the embedded runner (with Celery, beat's sweeper re-sends)
    first = posting.post_instruction(channel=direct_channel, text="Draft the email")
    pipeline.claim(first.pk)
    Task.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timedelta(seconds=5))  # the server died
    no_background.clear()

    second = posting.post_instruction(channel=direct_channel, text="And a subject line")

    assert no_background == [first.pk, second.pk]


def test_a_long_stream_keeps_renewing_its_lease_so_no_second_worker_takes_the_task(
    direct_channel, frames, no_background, settings
):
    settings.TASK_LEASE_SECONDS = 1  # renewed every third of it while streaming
    task = posting.post_instruction(channel=direct_channel, text="Write the long report")
    second_delivery = []

    # A 2.5 s stream, far past the 1 s lease; half way through, another delivery arrives.
    provider = ScriptedProvider([Reply("word " * 50, chunk_size=25, delay=0.25)])
    original_complete = provider.complete

    def complete(request, *, on_text=None, should_stop=None):
        def on_text_and_redeliver(text):
            on_text(text)
            if len(second_delivery) == 0 and Task.objects.get(pk=task.pk).started_at < timezone.now() - timedelta(seconds=1.5):
                try:
                    pipeline.claim(task.pk)
                    second_delivery.append("took it")
                except pipeline.TaskBusy:
                    second_delivery.append("busy")

        return original_complete(request, on_text=on_text_and_redeliver, should_stop=should_stop)

    provider.complete = complete
    done = pipeline.run_task(task.pk, provider=provider)

    assert second_delivery == ["busy"], "the live attempt still held the task"
    assert done.status == Task.Status.DONE and done.attempts == 1
    assert roles(done) == ["user", "assistant"]


def test_an_attempt_that_was_taken_over_stores_and_finishes_nothing(direct_channel, frames, no_background):
    task = posting.post_instruction(channel=direct_channel, text="Summarize the week")

    def taken_over_while_streaming(request):
        # This worker stalled past its lease and another delivery claimed the task (attempt 2).
        Task.objects.filter(pk=task.pk).update(attempts=2, lease_until=timezone.now() + timedelta(seconds=60))
        return Reply("A stale answer " * 10, chunk_size=10)

    result = pipeline.run_task(task.pk, provider=ScriptedProvider([taken_over_while_streaming]))

    assert result is None
    task.refresh_from_db()
    assert task.status == Task.Status.RUNNING and task.attempts == 2, "left to the attempt that holds it"
    assert roles(task) == ["user"], "the stale attempt stored no reply"
    assert "done" not in [f.get("status") for f in frames if f["type"] == "task"]
