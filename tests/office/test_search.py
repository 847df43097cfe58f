"""People's search box: members find what was said in the conversations they can see, highlighted,
and open the conversation at that message; an outsider gets nothing and cannot tell what exists."""

import types

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from office.search_views import highlighted
from sessions import services

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()  # the per-person counters live in the cache, which outlives a test
    yield
    cache.clear()


def said(channel, instruction: str, reply: str, coworker: str = "mina"):
    session = services.get_active_session(channel=channel)
    task, _ = services.start_task(session=session, instruction=instruction, coworker=coworker)
    return services.append_message(session=session, turn=task.turn, role="assistant", content=reply, coworker=coworker)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def search(client: Client, office, q: str):
    return client.get(reverse("office_search", args=[office.slug]), {"q": q})


def test_it_finds_an_old_decision_in_a_past_conversation_with_the_words_marked(alice, office, direct_channel):
    decision = said(direct_channel, "Which venue did we pick for the offsite?", "We decided on Lakeview Lodge for the offsite.")
    services.end_active_session(channel=direct_channel)  # "Start a new conversation"
    said(direct_channel, "Draft the newsletter", "Here is the draft.")

    page = search(signed_in(alice), office, "what did we decide about the offsite venue?")

    assert page.status_code == 200
    html = page.content.decode()
    ended = decision.session
    # The time the conversation began, for the page to give in the reader's own zone.
    assert f'Mina · conversation of <time datetime="{ended.started_at.isoformat()}" data-with-day>{ended.started_at:%b} {ended.started_at.day},' in html
    assert "<mark>decided</mark> on Lakeview Lodge for the <mark>offsite</mark>" in html
    link = reverse("message_in_context", args=[direct_channel.pk, decision.pk])
    query = "what%20did%20we%20decide%20about%20the%20offsite%20venue%3F"
    assert f'href="{link}?q={query}#m-{decision.pk}"' in html
    opened = signed_in(alice).get(f"{link}?q={query}")
    assert opened.status_code == 200
    found = opened.content.decode().split('id="found"', 1)[1].split("</article>", 1)[0]
    assert f'id="m-{decision.pk}"' in found
    # Opened at the message, with the words searched for marked there too.
    assert "<p>We <mark>decided</mark> on Lakeview Lodge for the <mark>offsite</mark>.</p>" in found
    assert "<mark>" not in opened.content.decode().split('id="found"', 1)[0], "only in the message found"


def test_it_finds_chinese_words(alice, office, direct_channel):
    said(direct_channel, "我們的團隊旅遊要去哪裡？", "我們決定在湖景小屋舉辦團隊旅遊。")

    html = search(signed_in(alice), office, "湖景小屋").content.decode()

    assert "<mark>湖景小屋</mark>" in html


def test_a_member_sees_results_from_every_channel_of_the_office_and_nothing_else(
    bob, office, direct_channel, main_channel, outsider_channel
):
    said(direct_channel, "What does the Team plan cost?", "The Team plan costs $29 a month.")
    said(main_channel, "Team plan pricing for the launch?", "Launch price for the Team plan stays at $29.")
    said(outsider_channel, "Team plan?", "Another office's Team plan is $99.", coworker="")

    html = search(signed_in(bob), office, "Team plan price").content.decode()

    assert "$29 a month" in html and "stays at $29" in html
    assert "$99" not in html


def test_an_outsider_gets_nothing_and_cannot_tell_what_exists(charlie, office, direct_channel):
    message = said(direct_channel, "Secret plan", "The acquisition closes in May.")
    client = signed_in(charlie)

    assert search(client, office, "acquisition").status_code == 404
    assert client.get(reverse("message_in_context", args=[direct_channel.pk, message.pk])).status_code == 404
    assert Client().get(reverse("office_search", args=[office.slug]), {"q": "acquisition"}).status_code == 302


def test_no_match_says_so(alice, office, direct_channel):
    said(direct_channel, "Draft a tagline", "Plan less, do more.")

    html = search(signed_in(alice), office, "invoices").content.decode()

    assert "Nothing in your conversations matches “invoices”" in html


def test_a_snippet_is_escaped_around_its_marks():
    snippet = highlighted("<script>alert(1)</script> the venue is Lakeview", ["venu"])

    assert "<script>" not in snippet
    assert "&lt;script&gt;" in snippet and "<mark>venue</mark>" in snippet


def test_a_snippet_reads_as_plain_words_with_its_marks_kept(alice, office, direct_channel):
    said(direct_channel, "When is the launch?", "Here's what I have on that:\n\n- The **launch** date is May 4 (from memory)\n- `<b>` stays text")

    html = search(signed_in(alice), office, "launch date").content.decode()

    assert "Here&#x27;s what I have on that: The <mark>launch</mark> <mark>date</mark> is May 4 (from memory) &lt;b&gt; stays text" in html
    assert "- The" not in html and "**" not in html


def test_a_result_is_titled_by_its_channel_and_which_conversation(alice, office, direct_channel, main_channel):
    found = said(main_channel, "Where is the offsite?", "The offsite is at Lakeview Lodge.")
    client = signed_in(alice)

    html = search(client, office, "offsite").content.decode()
    opened = client.get(reverse("message_in_context", args=[main_channel.pk, found.pk])).content.decode()

    assert f'<span class="result-where">{main_channel.name} · current conversation</span>' in html
    assert f"<h1>{main_channel.name} · current conversation</h1>" in opened
    assert "Earlier in the conversation with" not in opened and "# " not in opened.split("<h1>")[1].split("</h1>")[0]


def test_a_person_searching_in_a_burst_is_told_to_wait_and_others_are_not(alice, bob, office, direct_channel, monkeypatch):
    from office import ratelimit, search_views

    said(direct_channel, "Where is the offsite?", "The offsite is at Lakeview Lodge.")
    # The limiter's minute is a fixed window: a burst that straddles two would pass.
    monkeypatch.setattr(ratelimit, "time", types.SimpleNamespace(time=lambda: 60 * 16_000 + 20.0))
    monkeypatch.setattr(search_views, "SEARCHES_PER_MINUTE", 3)
    client = signed_in(alice)
    for _ in range(3):
        assert "Lakeview" in search(client, office, "offsite").content.decode()

    refused = search(client, office, "offsite")

    assert refused.status_code == 429 and refused["Retry-After"] == "40"
    html = refused.content.decode()
    assert "You have searched 3 times in the last minute. Try again in 40 seconds." in html
    assert "Lakeview" not in html
    assert "Lakeview" in search(signed_in(bob), office, "offsite").content.decode()


def test_each_result_marks_the_searched_words_it_says_and_no_others(alice, office, direct_channel):
    said(direct_channel, "Which venue for the offsite?", "Lakeview Lodge, booked for the offsite.")
    said(direct_channel, "Any venue ideas?", "The Harbour Loft is a good venue.")

    html = search(signed_in(alice), office, "offsite venue").content.decode()

    assert "Lakeview Lodge, booked for the <mark>offsite</mark>." in html
    assert "The Harbour Loft is a good <mark>venue</mark>." in html
    assert "<mark>Lakeview" not in html and "<mark>Harbour" not in html


def test_marking_the_words_found_leaves_tags_attributes_and_entities_alone():
    from office.search_views import marked

    html = '<p>The <a href="https://example.com/venue" title="venue">venue</a> &amp; venue&#39;s <code>venue()</code></p>'

    assert marked(html, ["venu"]) == (
        '<p>The <a href="https://example.com/venue" title="venue"><mark>venue</mark></a> &amp; <mark>venue</mark>&#39;s '
        "<code><mark>venue</mark>()</code></p>"
    )


def test_a_message_too_large_to_mark_quickly_is_shown_as_it_is():
    from office.search_views import MARKED_HTML_CHARS, marked

    html = "<pre><code>" + "venue = 1\n" * (MARKED_HTML_CHARS // 10) + "</code></pre>"

    assert marked(html, ["venu"]) == html
    assert "<mark>" in marked("<p>the venue</p>", ["venu"]), "a message of ordinary size is marked"


def test_a_query_of_only_common_words_is_told_so_not_that_nothing_matches(alice, office, direct_channel):
    for query in ("what is it", "可以嗎"):
        html = search(signed_in(alice), office, query).content.decode()

        assert "only words too common to search for" in html and "Nothing in your conversations matches" not in html


def test_a_result_among_large_messages_opens_with_the_nearest_that_fit(alice, office, direct_channel, monkeypatch):
    """40 long code messages around a result made a 19 MB page: it shows what fits, nearest first."""
    from office import views
    from sessions import services

    session = services.get_active_session(channel=direct_channel)
    for n in range(12):
        services.start_task(session=session, instruction=f"Code {n}:\n```python\n" + "x = 1\n" * 500 + "```", coworker="mina")
    found = session.messages.get(content__startswith="Code 6:")
    one = len(found.content) + len(found.rendered.html)
    monkeypatch.setattr(views, "PAGE_CHARS", int(4.5 * one))  # room for four of them and a half

    page = signed_in(alice).get(reverse("message_in_context", args=[direct_channel.pk, found.pk])).content.decode()

    shown = page.count('class="msg user')
    assert shown == 4 and all(f"Code {n}:" in page for n in (5, 6, 7)) and "Code 0:" not in page and "Code 11:" not in page
