"""Monthly spending limits: a coworker who reached theirs says so in plain words instead of answering,
without calling the model; other coworkers, and next month, are not affected."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from coworkers.providers import Completion, Usage
from coworkers.providers.offline import OfflineResponder
from coworkers.providers.scripted import Reply, ScriptedProvider
from sessions import pipeline, posting, services, spending
from sessions.models import Message, ModelCall, Task

pytestmark = pytest.mark.django_db

# $0.069 on Sonnet 4.6's list prices.
CACHED = Usage(input_tokens=10_000, cache_read_tokens=30_000, output_tokens=2_000)


def spend(channel, text="Draft the launch email") -> Task:
    provider = ScriptedProvider([lambda request: Completion(text="Done.", usage=CACHED, model="claude-sonnet-4-6")])
    task = posting.post_instruction(channel=channel, text=text, provider=provider)
    return pipeline.run_task(task.pk, provider=provider)


def said(task: Task) -> list[tuple[str, str, str]]:
    return list(services.task_messages(task.session, turn=task.turn).values_list("role", "coworker", "content"))


def test_a_coworker_over_the_limit_says_so_and_the_model_is_not_called(direct_channel, mina, frames, no_background):
    spend(direct_channel)
    mina.monthly_limit_usd = Decimal("0.05")
    mina.save()
    untouched = ScriptedProvider([])  # any model call would fail the test: the script has no steps

    task = posting.post_instruction(channel=direct_channel, text="One more email, please", provider=untouched)
    done = pipeline.run_task(task.pk, provider=untouched)

    assert untouched.requests == []
    assert done.status == Task.Status.DONE and done.error == ""
    (role, coworker, text), = [m for m in said(done) if m[0] != "user"]
    assert (role, coworker) == ("notice", "mina")
    assert text.startswith("Mina has reached this month's spending limit ($0.07 of $0.05)")
    assert "Admin → Coworkers" in text
    # The page shows it live, as a message under the instruction.
    assert any(f["type"] == "message" and f["message"]["content"] == text for f in frames)
    assert ModelCall.objects.filter(coworker=mina).count() == 1, "the refusal itself costs nothing"


def test_under_the_limit_the_coworker_answers(direct_channel, mina, frames, no_background):
    mina.monthly_limit_usd = Decimal("1.00")
    mina.save()

    done = spend(direct_channel)

    assert [role for role, _, _ in said(done)] == ["user", "assistant"]
    assert spending.spent_this_month(mina) == Decimal("0.069")


def test_last_months_spending_does_not_count(direct_channel, mina, frames, no_background):
    spend(direct_channel)
    ModelCall.objects.update(created_at=spending.month_start() - timedelta(minutes=1))
    mina.monthly_limit_usd = Decimal("0.05")
    mina.save()

    done = spend(direct_channel, "A fresh month")

    assert [role for role, _, _ in said(done)] == ["user", "assistant"]


def test_only_the_coworker_over_the_limit_stays_quiet(main_channel, mina, theo, frames, no_background):
    ModelCall.objects.create(
        office=main_channel.office, coworker=mina, coworker_slug="mina", provider="claude", cost_usd=Decimal("5")
    )
    mina.monthly_limit_usd = Decimal("5")
    mina.save()
    provider = ScriptedProvider([Reply("Deploy is green.")])

    task = posting.post_instruction(channel=main_channel, text="@mina @theo status?", provider=provider)
    done = pipeline.run_task(task.pk, provider=provider)

    assert done.status == Task.Status.DONE
    assert [(role, who) for role, who, _ in said(done)] == [("user", ""), ("notice", "mina"), ("assistant", "theo")]
    assert len(provider.requests) == 1


def test_offline_work_costs_nothing_and_never_reaches_a_limit(direct_channel, mina, frames, no_background):
    mina.monthly_limit_usd = Decimal("0.01")
    mina.save()

    for text in ("Any news on the launch?", "What did we decide?"):
        task = posting.post_instruction(channel=direct_channel, text=text, provider=OfflineResponder())
        pipeline.run_task(task.pk, provider=OfflineResponder())

    calls = ModelCall.objects.filter(coworker=mina)
    assert calls.count() == 2 and all(c.cost_usd == 0 and c.input_tokens > 0 for c in calls)
    assert not Message.objects.filter(role=Message.Role.NOTICE, content__contains="spending limit").exists()


def test_a_meeting_still_ends_with_its_notes_when_a_participant_is_over_the_limit(office, mina, theo, frames, no_background):
    from sessions import meetings

    ModelCall.objects.create(office=office, coworker=mina, coworker_slug="mina", provider="claude", cost_usd=Decimal("9"))
    mina.monthly_limit_usd = Decimal("5")
    mina.save()
    provider = ScriptedProvider([Reply("I'll fix the invite link by Friday."), Reply("## Decisions\n- (task 1, Theo) Ship on Friday.\n")])
    channel, task = meetings.start_meeting(
        office=office, title="Sync", agenda="The invite link.", participants=[mina, theo], rounds=1, provider=provider
    )

    done = pipeline.run_task(task.pk, provider=provider)

    notices = [text for role, _, text in said(done) if role == "notice"]
    assert len(notices) == 2
    assert notices[0].startswith("Mina has reached this month's spending limit")
    assert notices[1].startswith("Meeting notes") and "Ship on Friday" in notices[1]
    assert len(provider.requests) == 2, "Theo's turn and the notes; none for Mina"


def test_a_fold_and_a_memory_extraction_count_for_the_coworker_whose_conversation_it_was(direct_channel, mina, frames, no_background):
    from sessions import folding, memory

    task = spend(direct_channel, "Remember that the launch is on May 4")
    upkeep = ScriptedProvider(
        [
            lambda request: Completion(text='[{"text": "The launch is on May 4.", "kind": "project"}]', usage=CACHED, model="claude-haiku-4-5"),
            lambda request: Completion(text="## Facts and numbers\n- (task 1) The launch is on May 4.", usage=CACHED, model="claude-haiku-4-5"),
        ]
    )
    memory.extract_memory(task_id=task.pk, provider=upkeep)
    folding.fold_summary(session_id=task.session_id, through_turn=task.turn, provider=upkeep)

    calls = list(ModelCall.objects.filter(coworker=mina).order_by("pk").values_list("model", "task_id"))
    assert calls == [("claude-sonnet-4-6", task.pk), ("claude-haiku-4-5", task.pk), ("claude-haiku-4-5", None)]
    # Haiku 4.5's list prices: 10k in at $1, 30k cache reads at $0.10, 2k out at $5 a million tokens.
    assert spending.spent_this_month(mina) == Decimal("0.069") + 2 * Decimal("0.023")
