"""Small things a newcomer notices on the pages: where admin is, how a channel is named, what a tab is called."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_staff_member_finds_admin_in_the_sidebar(client, alice, direct_channel):
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    client.force_login(alice)

    page = client.get(reverse("office", args=["acme"])).content.decode()

    assert f'href="{reverse("admin:index")}" data-admin' in page


def test_a_member_who_is_not_staff_sees_no_admin_link(client, bob, direct_channel):
    client.force_login(bob)

    page = client.get(reverse("office", args=["acme"])).content.decode()

    assert "data-admin" not in page and reverse("admin:index") not in page


def chat_title(page: str) -> str:
    start = page.index('<div class="chat-title">')
    return page[start:page.index("</h1>", start)]


def test_a_channel_header_shows_its_hash_once(client, bob, main_channel):
    client.force_login(bob)

    page = client.get(main_channel.get_absolute_url()).content.decode()

    title = chat_title(page)
    assert title.count("#") == 1, title
    assert title.endswith(f"<h1>{main_channel.name}")


def test_every_office_page_is_titled_page_then_office(client, bob, main_channel, direct_channel):
    client.force_login(bob)
    pages = {
        reverse("office", args=["acme"]): "Overview · Acme",
        reverse("memory", args=["acme"]): "Memory · Acme",
        reverse("usage", args=["acme"]): "Usage · Acme",
        main_channel.get_absolute_url(): f"# {main_channel.name} · Acme",
        direct_channel.get_absolute_url(): "Mina · Acme",
    }
    for url, title in pages.items():
        assert f"<title>{title}</title>" in client.get(url).content.decode(), url
