"""Pages a member sees, and the 404 everyone else gets."""

import pytest
from django.urls import reverse

from sessions import services


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_login_page_signs_a_member_in(client, alice):
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b"Sign in" in page.content

    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-password"}, follow=True)

    assert response.status_code == 200
    assert b"Acme" in response.content


def test_the_login_page_says_when_the_password_is_wrong(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert b"do not match" in response.content


def test_a_member_with_one_office_lands_in_it(client, alice, direct_channel, main_channel):
    client.force_login(alice)
    response = client.get("/", follow=True)

    assert response.redirect_chain[-1][0] == reverse("office", args=["acme"])
    assert b"Mina" in response.content and b"# main" in response.content


def test_a_member_sees_a_channel_and_its_conversation(client, bob, direct_channel):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Draft the <b>launch</b> email")
    services.append_message(session=session, turn=1, role="assistant", content="Here is a draft.", coworker="mina")
    client.force_login(bob)

    response = client.get(f"/c/{direct_channel.pk}/")

    assert response.status_code == 200
    assert b"Draft the &lt;b&gt;launch&lt;/b&gt; email" in response.content  # user text is never raw HTML
    assert b"1 task in this conversation" in response.content
    assert b'<span class="who">Mina</span>' in response.content
    assert b'<div class="text md"><p>Here is a draft.</p></div>' in response.content


def test_an_outsider_gets_404_for_another_offices_pages(client, charlie, direct_channel):
    client.force_login(charlie)

    assert client.get(f"/c/{direct_channel.pk}/").status_code == 404
    assert client.get(reverse("office", args=["acme"])).status_code == 404
    # Indistinguishable from a channel that does not exist at all.
    assert client.get("/c/987654/").status_code == 404


def test_a_member_does_not_see_other_offices_in_the_sidebar(client, alice, direct_channel, outsider_channel):
    client.force_login(alice)
    response = client.get(f"/c/{direct_channel.pk}/")
    assert b"globex-main" not in response.content


@pytest.mark.parametrize("path", ["/c/1/", "/o/acme/"])
def test_pages_require_login(client, path, db):
    assert client.get(path).status_code == 302


def test_the_sidebar_lists_projects_by_name_whatever_their_case(client, alice, direct_channel):
    from office.models import Channel

    for name in ("beta", "Alpha", "Gamma", "alpha launch"):
        Channel.objects.create(office=direct_channel.office, kind=Channel.Kind.PROJECT, name=name)
    client.force_login(alice)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    positions = [page.index(f">{name}<") if f">{name}<" in page else page.index(name) for name in ("Alpha", "alpha launch", "beta", "Gamma")]
    assert positions == sorted(positions)
