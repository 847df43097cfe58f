"""The report dialog's words agree with its bar: the plain sentence on top, what the summary held,
how the characters add up, where a remembered fact came in, and offline work shown as offline and
free. Pure wording first, then the report endpoint on prompts the app really built."""

from decimal import Decimal

import pytest
from django.urls import reverse

from coworkers.providers.offline import OfflineResponder
from office import report_text
from sessions import nudge, pipeline, posting, services
from sessions.models import MemoryItem, SummaryVersion, Task


def a_report(**layers) -> dict:
    """A report shaped like sessions.context's, with empty layers unless given."""
    base = {name: {"chars": 0, "tokens": 0} for name in ("system", "memory", "summary", "recent", "recalled", "current")}
    base["system"] = {"chars": 1_200, "tokens": 300}
    base["current"] = {"chars": 45, "tokens": 11}
    for name, values in layers.items():
        base[name] = {**base[name], **values}
    return {
        "layers": base,
        "detailed_tasks": base["recent"].get("tasks", []),
        "digested_tasks": base["summary"].get("digested_tasks", []),
        "summarized_through": base["summary"].get("summarized_through", 0),
        "total_chars": sum(layer["chars"] for layer in base.values()),
        "estimated_tokens": sum(layer["tokens"] for layer in base.values()),
        "budget": {"total": 33_000},
    }


# Plain words (pure) ---------------------------------------------------------------------------


def test_the_sentence_names_what_the_bar_shows():
    report = a_report(
        memory={"chars": 90, "items": [5]},
        summary={"chars": 805, "summarized_through": 12},
        recent={"chars": 2_000, "tasks": [13, 14]},
    )
    assert report_text.sentence(report, who="Mina") == (
        "Mina saw your last 2 tasks in full, 1 remembered fact and the summary of tasks 1–12."
    )



def test_the_sentence_tells_what_was_found_for_this_message_from_what_was_kept_for_earlier_ones():
    kept_only = a_report(recalled={"chars": 900, "exchanges": [], "kept_exchanges": 4}, recent={"chars": 900, "tasks": [7]})
    both = a_report(recalled={"chars": 900, "exchanges": [{"turn": 2}], "kept_exchanges": 3})

    assert report_text.sentence(kept_only, who="Mina") == (
        "Mina saw your last task in full and 4 earlier exchanges recalled for earlier tasks."
    )
    assert report_text.sentence(both, who="Mina") == (
        "Mina saw 1 earlier exchange recalled for what you asked and 3 exchanges recalled for earlier tasks."
    )

def test_after_a_new_conversation_the_summary_is_the_carried_note_not_no_summary():
    report = a_report(summary={"chars": 805, "carried_note": True})

    assert report_text.sentence(report, who="Mina") == "Mina saw a note carried over from your previous conversation."
    assert report_text.summary_parts(report) == ["A note carried over from your previous conversation, below."]
    # A report stored before it said so reads the same.
    del report["layers"]["summary"]["carried_note"]
    assert report_text.carried_note(report)


def test_an_empty_summary_layer_says_why():
    assert report_text.summary_parts(a_report(recent={"chars": 900, "tasks": [1]})) == [
        "No summary: every earlier task was shown in full."
    ]
    assert report_text.sentence(a_report(), who="Theo") == "Theo saw only your message: there was nothing earlier to show."


def test_the_total_adds_up_to_the_bar():
    report = a_report(memory={"chars": 90, "items": [5]}, recent={"chars": 2_000, "tasks": [1]})
    text = report_text.total(report, who="Mina")
    assert text == (
        "In all 3,335 characters, about 311 tokens. Mina's instructions took 1,200 and this task 45; "
        "memory, the summary, recent tasks and recall took the other 2,090, of the 33,000 characters they share."
    )
    assert 1_200 + 45 + 2_090 == report["total_chars"] == 3_335


def test_offline_work_reads_as_offline_and_free_even_when_stored_with_a_model_name_and_a_cost():
    stored_before = {"provider": "offline", "model": "claude-sonnet-4-6", "cost_usd": "0.005800"}
    words = report_text.describe(a_report(), who="Mina", usage=stored_before)
    assert (words["model"], words["cost"], words["offline"]) == ("offline", "$0", True)
    claude = report_text.describe(a_report(), who="Mina", usage={"provider": "claude", "model": "claude-sonnet-4-6", "cost_usd": "0.006150"})
    assert (claude["model"], claude["cost"]) == ("claude-sonnet-4-6", "$0.0062")


def test_each_fold_is_named_with_its_model():
    folds = [
        {"from_turn": 1, "through_turn": 4, "model": "offline"},
        {"from_turn": 5, "through_turn": 8, "model": "claude-haiku-4-5"},
    ]
    assert report_text.folds_line(folds) == "Written in 2 steps: tasks 1–4 by offline; tasks 5–8 by claude-haiku-4-5."
    assert report_text.folds_line(folds[:1]) == "Written by offline."


# The endpoint, on prompts the app built ---------------------------------------------------------


def report_of(client, task: Task) -> dict:
    url = reverse("task_report", args=[task.session.channel_id, task.turn])
    return client.get(f"{url}?session={task.session_id}").json()


def run(channel, text: str) -> Task:
    task = posting.post_instruction(channel=channel, text=text)
    return pipeline.run_task(task.pk, provider=OfflineResponder())


@pytest.mark.django_db
def test_a_fact_that_came_in_a_kept_tail_is_reported_as_in_the_prompt(client, bob, office, direct_channel, frames, no_background):
    run(direct_channel, "Hello Mina")
    fact = MemoryItem.objects.create(office=office, text="The launch date is May 4.", kind="project")
    run(direct_channel, "What do we know about the launch?")  # the new fact rides in this task's tail
    third = run(direct_channel, "And the launch date again?")  # that tail is kept in front of task 2
    client.force_login(bob)

    answer = report_of(client, third)

    assert answer["report"]["layers"]["recalled"]["kept_memory_items"] == [fact.pk]
    assert [(m["id"], m["layer"]) for m in answer["memory_items"]] == [(fact.pk, "kept")]
    assert "1 remembered fact" in answer["overview"]["sentence"]
    reply = services.task_messages(third.session, turn=third.turn).get(role="assistant").content
    assert "May 4 (from memory)" in reply, "the reply quotes the fact the report says was there"


@pytest.mark.django_db
def test_offline_work_is_reported_with_model_offline_and_no_cost(client, bob, direct_channel, frames, no_background):
    task = run(direct_channel, "Draft a tagline")
    client.force_login(bob)

    answer = report_of(client, task)

    assert (answer["usage"]["provider"], answer["usage"]["model"], answer["usage"]["cost_usd"]) == ("offline", "offline", "0.000000")
    assert (answer["overview"]["model"], answer["overview"]["cost"]) == ("offline", "$0")
    assert answer["overview"]["sentence"] == "Mina saw only your message: there was nothing earlier to show."


@pytest.mark.django_db
def test_after_start_a_new_conversation_the_report_shows_the_carried_note(client, bob, direct_channel, frames, no_background):
    first = run(direct_channel, "We launch on May 4.")
    SummaryVersion.objects.create(
        session=first.session, text="## Facts and numbers\n- (task 1) We launch on May 4.", from_turn=1, through_turn=1, model="offline"
    )
    nudge.start_new_conversation(channel=direct_channel)
    task = run(direct_channel, "Where were we?")
    client.force_login(bob)

    answer = report_of(client, task)

    assert answer["report"]["layers"]["summary"]["chars"] > 0
    assert answer["overview"]["sentence"] == "Mina saw a note carried over from your previous conversation."
    assert answer["overview"]["summary"] == ["A note carried over from your previous conversation, below."]
    assert "<h2>Facts and numbers</h2>" in answer["carried_note"]["html"], "rendered as it reads"


@pytest.mark.django_db
def test_the_summary_comes_rendered_with_the_model_of_each_fold(client, bob, direct_channel, frames, no_background):
    task = run(direct_channel, "Hello")
    SummaryVersion.objects.create(session=task.session, text="## Decisions\n- A", from_turn=1, through_turn=4, model="offline")
    SummaryVersion.objects.create(session=task.session, text="## Facts and numbers\n- (task 6) 41% open rate", from_turn=5, through_turn=8, model="claude-haiku-4-5")
    report = {**task.prompt_report, "summarized_through": 8}
    Task.objects.filter(pk=task.pk).update(prompt_report=report, cost_usd=Decimal("0"))
    client.force_login(bob)

    summary = report_of(client, task)["summary"]

    assert summary["text"].startswith("## Facts and numbers")
    assert "<h2>Facts and numbers</h2>" in summary["html"] and "##" not in summary["html"]
    assert summary["written_by"] == "Written in 2 steps: tasks 1–4 by offline; tasks 5–8 by claude-haiku-4-5."


# The legend, the rows and the token figures in plain words (pure) --------------------------------


def test_a_fact_shown_with_an_earlier_task_is_counted_in_the_memory_row():
    report = a_report(recent={"chars": 900, "tasks": [1, 2, 3], "kept_tails": [2]}, recalled={"chars": 199, "kept_memory_items": [7]})

    assert report_text.sentence(report, who="Mina") == "Mina saw your last 3 tasks in full and 1 remembered fact."
    assert report_text.memory_elsewhere(report) == "1 fact, shown with an earlier task"
    both = a_report(memory={"chars": 90, "items": [5]}, recalled={"chars": 300, "memory_items": [8], "kept_memory_items": [5, 7]})
    assert report_text.memory_elsewhere(both) == "2 facts: 1 shown with an earlier task and 1 shown with your message"
    assert report_text.memory_elsewhere(a_report(memory={"chars": 90, "items": [5]})) == ""


def test_tasks_kept_with_their_recall_are_said_in_plain_words():
    one = a_report(recent={"chars": 900, "tasks": [1, 2, 3], "kept_tails": [2]})
    three = a_report(recent={"chars": 900, "tasks": [1, 2, 3], "kept_tails": [1, 2, 3]})

    assert report_text.kept_recall(one) == "Task 2, still with what was recalled for it when you asked it"
    assert report_text.kept_recall(three) == "Tasks 1–3, each still with what was recalled for it when you asked it"
    assert report_text.kept_recall(a_report()) == ""


def test_the_input_tokens_say_what_they_count_beside_the_bar():
    report = a_report(recent={"chars": 274, "tokens": 122, "tasks": [1]})
    usage = {"provider": "claude", "model": "claude-sonnet-4-6", "input_tokens": 1_381, "calls": 1}

    words = report_text.describe(report, who="Mina", usage=usage)
    offline = report_text.input_tokens_line(report, who="Mina", usage={**usage, "provider": "offline", "calls": 2})

    assert "What the offline coworker was given" in offline and offline.endswith("in each of the task's 2 prompts."), (
        "offline no model was called"
    )
    assert words["input_tokens"].startswith(f"The bar counts the prompt's text: about {report['estimated_tokens']:,} tokens.")
    assert "the descriptions of the tools Mina can use." in words["input_tokens"]
    two_calls = report_text.input_tokens_line(report, who="Mina", usage={**usage, "calls": 2})
    assert two_calls.endswith("in each of the task's 2 model calls.")
