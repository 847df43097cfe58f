"""The cache lifetime end to end: a person who pauses gets the hour-long cache, through the real SDK
(the fake Messages API records what was asked), priced, recorded, and said in the report and on the
usage page; an admin's policy overrides the pace."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from office.models import Channel
from sessions import pipeline, posting
from sessions.models import ContextPolicy, ModelCall, Task
from tests.coworkers.fake_anthropic import Reply

HOUR = {"type": "ephemeral", "ttl": "1h"}
FIVE_MINUTES = {"type": "ephemeral"}


def run(channel: Channel, text: str) -> Task:
    task = posting.post_instruction(channel=channel, text=text)
    return pipeline.run_task(task.pk)


def paused(task: Task, minutes: float) -> None:
    """As if the task ended `minutes` ago: the next instruction comes after that pause."""
    ended = timezone.now() - timedelta(minutes=minutes)
    Task.objects.filter(pk=task.pk).update(created_at=ended - timedelta(seconds=20), finished_at=ended)


def breakpoints(request) -> list[dict]:
    blocks = [*request.body["system"], *(b for turn in request.body["messages"] for b in turn["content"])]
    return [block["cache_control"] for block in blocks if "cache_control" in block]


@pytest.fixture
def replies(fake_anthropic):
    """A first task writes its whole prompt to the cache; the later ones find most of it there."""
    fake_anthropic.add(Reply("Done.", input_tokens=40, cache_write_tokens=3_000, output_tokens=10))
    for _ in range(2):
        fake_anthropic.add(Reply("Done.", input_tokens=40, cache_write_tokens=400, cache_read_tokens=3_600, output_tokens=10))
    return fake_anthropic


def test_a_person_who_pauses_gets_the_hour_long_cache_and_sees_it(
    replies, client, alice, office, mina, direct_channel, frames, no_background, settings
):
    first = run(direct_channel, "Draft the launch email.")
    assert first.status == Task.Status.DONE, first.error
    # The first task has no pause to go on: the 5-minute cache, sent as the API's default.
    assert set(map(str, breakpoints(replies.requests[0]))) == {str(FIVE_MINUTES)}

    paused(first, minutes=20)  # reading the draft, thinking, typing
    second = run(direct_channel, "Make it shorter and friendlier.")

    assert second.status == Task.Status.DONE, second.error
    assert breakpoints(replies.requests[1]) and all(b == HOUR for b in breakpoints(replies.requests[1]))
    call = ModelCall.objects.get(task=second)
    assert call.cache_ttl == "1h" and ModelCall.objects.get(task=first).cache_ttl == "5m"
    # Its writes were billed at the hour's price: 2x the input price, not 1.25x.
    price = settings.MODEL_PRICES["claude-haiku-4-5"]  # the model the fake answers as
    expected = (40 * price["input"] + 400 * 2 * price["input"] + 3_600 * price["cache_read"] + 10 * price["output"]) / 1e6
    assert float(call.cost_usd) == pytest.approx(expected, abs=1e-6)
    assert float(second.cost_usd) == pytest.approx(expected, abs=1e-6)

    client.force_login(alice)
    report = client.get(reverse("task_report", args=[direct_channel.pk, second.turn])).json()
    assert report["usage"]["cache_ttl"] == ["1h"]
    assert report["overview"]["cache_lifetime"] == "1 hour"
    assert "your last pause here lasted 20 minutes" in report["overview"]["cache"]
    assert report["report"]["cache"]["lifetime"] == "1h"

    page = client.get(reverse("usage", args=["acme"])).content.decode()
    row = page[page.index('<tr data-coworker="mina"') :]
    assert 'data-col="kept">1 hour for 1 of 2 calls<' in row[: row.index("</tr>")]


def test_an_admins_policy_overrides_the_pace(replies, office, mina, direct_channel, frames, no_background):
    ContextPolicy.objects.filter(channel_kind=Channel.Kind.DIRECT).update(cache_lifetime="5m")
    first = run(direct_channel, "Draft the launch email.")
    paused(first, minutes=20)
    second = run(direct_channel, "Make it shorter.")

    assert all(b == FIVE_MINUTES for b in breakpoints(replies.requests[1]))
    assert second.prompt_report["cache"] == {
        "lifetime": "5m", "chosen_by": "policy", "pauses": 0, "typical_pause_seconds": None,
        "within_5m": None, "within_1h": None, "written_share": None, "first_read_share": None,
    }

    ContextPolicy.objects.create(coworker=mina, cache_lifetime="1h")  # a coworker's override wins over the kind
    third = run(direct_channel, "Send it.")
    assert all(b == HOUR for b in breakpoints(replies.requests[2]))
    assert ModelCall.objects.get(task=third).cache_ttl == "1h"
