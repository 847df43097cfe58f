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
