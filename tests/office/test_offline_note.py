"""The channel page says once, at the top, that answers are offline and how to connect a model."""

import pytest

pytestmark = pytest.mark.django_db


def test_offline_the_page_shows_one_notice_with_how_to_connect_a_model(client, bob, direct_channel, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client.force_login(bob)

    page = client.get(direct_channel.get_absolute_url()).content.decode()

    assert page.count('class="offline-note"') == 1
    assert "Answers are offline:" in page and "ANTHROPIC_API_KEY" in page and "ANTHROPIC_BASE_URL" in page
    assert "Ask for a draft" not in page, "the empty conversation offers what the offline coworker can do"


def test_with_a_model_connected_there_is_no_offline_notice(client, bob, direct_channel, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    client.force_login(bob)

    page = client.get(direct_channel.get_absolute_url()).content.decode()

    assert "offline-note" not in page and "Answers are offline" not in page
    assert "Ask for a draft, a plan or a second opinion." in page
