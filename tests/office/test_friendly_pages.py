"""The office's own 404 and 500 pages, and past conversations listed by title and preview."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from office.views import plain_words, shorten
from sessions import nudge, services


@pytest.mark.parametrize("debug", [True, False])
def test_a_missing_or_foreign_channel_is_the_friendly_404_even_with_debug_on(client, charlie, direct_channel, settings, debug):
    settings.DEBUG = debug
    client.force_login(charlie)  # an outsider: another office's channel does not exist for them

    for url in (
        "/c/987654/",
        f"/c/{direct_channel.pk}/",
        f"/c/{direct_channel.pk}/sessions/123/",
        reverse("office", args=["acme"]),
        reverse("memory", args=["acme"]),
        "/o/acme/search/?q=venue",
        "/no/such/address/",
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "404.html" in [t.name for t in response.templates], url
        page = response.content.decode()
        assert "This page isn't here" in page and "Back to the office" in page
        assert "URLconf" not in page and "urlpatterns" not in page, "no URL patterns for anyone"


def test_a_server_error_is_the_friendly_500_page(alice, settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(alice)

    with mock.patch("office.views.offices_of", side_effect=RuntimeError("boom")):
        response = client.get("/")

    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b"boom" not in response.content


def test_past_conversations_are_listed_by_their_first_instruction_with_a_preview(client, bob, direct_channel):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Which   venue did we pick for the **spring** launch party?")
    services.append_message(session=session, turn=1, role="assistant", content="", coworker="mina")
    services.append_message(
        session=session, turn=1, role="assistant", content="## Venue\n\n- We picked **the Boathouse**, for May 4.", coworker="mina"
    )
    nudge.start_new_conversation(channel=direct_channel)
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()
    past = client.get(f"/c/{direct_channel.pk}/sessions/{session.pk}/").content.decode()

    assert '<span class="past-title">Which venue did we pick for the **spring** launch party?</span>' in page
    assert '<span class="past-preview">Venue We picked the Boathouse, for May 4.</span>' in page
    assert '<h1 title="Which venue did we pick for the **spring** launch party?">' in past
    # Times are <time> elements the page shows in the reader's zone, not the server's.
    assert '<time datetime="' in past.split("<h1", 1)[1].split("</header>")[0]


def test_a_title_is_one_line_cut_at_a_word():
    assert shorten("Plan\nthe   launch", 70) == "Plan the launch"
    assert shorten("Draft three taglines for the spring launch of the planner app", 30) == "Draft three taglines for the…"
    assert shorten("x" * 50, 10) == "xxxxxxxxx…"
    assert plain_words("## Plan\n\n- **Ship** `it`,\n1. then read_file\n> rest") == "Plan Ship it, then read_file rest"
    assert plain_words("`return n * 12` and 2 ** 3") == "return n * 12 and 2 ** 3", "arithmetic keeps its stars"
    assert plain_words("> first\n>\n> second\n-\n#\nend") == "first second end", "a mark alone on its line"
    assert plain_words("| Budget | Owner |\n|---|:-:|\n| Email | $2,000 |\n\n```python\nroi = x * 12\n```\nOK?") == (
        "Budget Owner Email $2,000 roi = x * 12 OK?"
    ), "a table's rules and a code fence are marks too"


def test_the_favicon_browsers_ask_for_on_admin_and_json_pages_is_there(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg")
