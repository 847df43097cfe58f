"""The usage page: tokens, cache-read share and cost per coworker and per day, from the tasks the
pipeline really ran and recorded; members only."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from coworkers.providers import Completion, Usage
from coworkers.providers.offline import OfflineResponder
from coworkers.providers.scripted import ScriptedProvider
from office.models import Channel
from sessions import pipeline, posting
from sessions.models import ModelCall

pytestmark = pytest.mark.django_db

# 40,000 prompt tokens of which 30,000 read from the cache, on Sonnet 4.6's list prices:
# 10,000 × $3 + 30,000 × $0.30 + 2,000 × $15 (per million) = $0.069.
CACHED = Usage(input_tokens=10_000, cache_read_tokens=30_000, output_tokens=2_000)


def answer_with(usage: Usage, model: str = "claude-sonnet-4-6") -> ScriptedProvider:
    return ScriptedProvider([lambda request: Completion(text="Done.", usage=usage, model=model)])


def run(channel: Channel, text: str, provider) -> None:
    task = posting.post_instruction(channel=channel, text=text, provider=provider)
    pipeline.run_task(task.pk, provider=provider)


@pytest.fixture
def worked(direct_channel, main_channel, mina, theo, frames, no_background) -> None:
    """Mina answered once on Claude with most of her prompt from the cache; Theo once offline."""
    run(direct_channel, "Draft the launch email", answer_with(CACHED))
    run(main_channel, "@theo how is the deploy?", OfflineResponder())


def page(client, user, **params):
    client.force_login(user)
    return client.get(reverse("usage", args=["acme"]), params)


def row(response, coworker: str) -> str:
    html = response.content.decode()
    start = html.index(f'<tr data-coworker="{coworker}"')
    return html[start : html.index("</tr>", start)]


def test_it_shows_each_coworkers_tokens_cache_share_and_cost(client, alice, worked):
    response = page(client, alice)

    assert response.status_code == 200
    mina = row(response, "mina")
    assert 'data-col="tokens">42k<' in mina
    assert 'data-col="share">75%<' in mina
    assert 'data-col="cost">$0.07<' in mina
    theo = row(response, "theo")
    assert 'data-col="cost">$0.00<' in theo, "offline work costs nothing"
    assert ModelCall.objects.get(coworker_slug="theo").cost_usd == Decimal("0")


def test_it_adds_up_the_office_and_each_day(client, alice, worked, mina):
    # A second call of Mina's, three days ago: the last 30 days hold both, on their own days.
    earlier = ModelCall.objects.get(coworker_slug="mina")
    earlier.pk = None
    earlier.created_at = timezone.now() - timedelta(days=3)
    earlier.save()

    response = page(client, alice, range="30d")

    html = response.content.decode()
    today, three_days_ago = timezone.localdate(), timezone.localdate() - timedelta(days=3)
    assert 'data-col="cost">$0.14<' in row(response, "mina")
    day = html[html.index(f'data-day="{three_days_ago:%Y-%m-%d}"') :]
    assert 'data-col="cost">$0.07<' in day[: day.index("</tr>")]
    assert f'data-day="{today:%Y-%m-%d}"' in html
    assert 'data-total="cost">$0.14<' in html


def test_it_counts_only_the_range_chosen(client, alice, worked):
    ModelCall.objects.filter(coworker_slug="mina").update(created_at=timezone.now() - timedelta(days=20))

    this_week = page(client, alice)
    last_30_days = page(client, alice, range="30d")

    assert 'data-col="cost">$0.00<' in row(this_week, "mina")
    assert 'data-col="cost">$0.07<' in row(last_30_days, "mina")
    assert 'aria-current="true">Last 30 days<' in last_30_days.content.decode()


def test_it_draws_the_days_as_an_svg_chart_with_escaped_names(client, alice, worked, mina):
    mina.name = "<b>Mina</b>"
    mina.save()

    html = page(client, alice).content.decode()

    assert html.count('<svg class="chart"') == 2
    assert "&lt;b&gt;Mina&lt;/b&gt;" in html and "<b>Mina</b>" not in html
    assert '<rect x="' in html, "the day Mina worked has a bar"


def test_it_is_for_members_only(client, charlie, worked):
    assert page(client, charlie).status_code == 404
    client.logout()
    anonymous = client.get(reverse("usage", args=["acme"]))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_the_sidebar_links_to_it(client, alice, office):
    client.force_login(alice)
    html = client.get(reverse("office", args=["acme"])).content.decode()
    assert f'href="{reverse("usage", args=["acme"])}"' in html


def test_a_meetings_notes_are_a_row_of_their_own_named_as_such(client, alice, office):
    from sessions import spending

    ModelCall.objects.create(
        office=office, coworker_slug=spending.MEETING_NOTES, provider="claude", model="claude-haiku-4-5",
        input_tokens=1_000, output_tokens=200, cost_usd=Decimal("0.002"),
    )

    notes = row(page(client, alice), spending.MEETING_NOTES)

    assert "Meeting notes" in notes and "no longer in this office" not in notes


def test_it_says_when_no_model_answered_in_the_range(client, alice, direct_channel, no_background, frames):
    run(direct_channel, "How is the deploy?", OfflineResponder())
    offline = page(client, alice).content.decode()
    assert 'data-notice="offline-usage"' in offline and "nothing was cached or billed" in offline

    run(direct_channel, "Draft the launch email", answer_with(CACHED))
    assert 'data-notice="offline-usage"' not in page(client, alice).content.decode(), "a model answered too"
