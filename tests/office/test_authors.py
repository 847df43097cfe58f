"""In a channel several people share, each sees "You" on their own instructions and the others'
names on theirs: live (the `message` frame's `author`), on connect, on the page, in search."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from sessions import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer", "no_background")]


@pytest.fixture
def people(alice, bob, mina, main_channel):
    alice.first_name, alice.last_name = "Alice", "Ng"
    alice.save()
    return alice, bob


def page_of(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


async def receive_until(socket, wanted) -> dict:
    while True:
        frame = await socket.receive_json_from(timeout=5)
        if wanted(frame):
            return frame


@pytest.mark.asyncio
async def test_everyone_in_a_shared_channel_sees_who_asked(people, main_channel, open_websocket, cookie):
    alice, bob = people
    sockets = {}
    for user in (alice, bob):
        sockets[user] = open_websocket(f"/ws/channels/{main_channel.pk}/", session_key=await sync_to_async(cookie)(user))
        assert (await sockets[user].connect())[0]
        assert (await sockets[user].receive_json_from(timeout=5))["type"] == "session"

    await sockets[alice].send_json_to({"type": "instruction", "text": "Book the offsite venue", "client_id": "c-1"})

    live = await receive_until(sockets[bob], lambda f: f["type"] == "message" and f["message"]["role"] == "user")
    assert live["message"]["author"] == {"id": alice.pk, "name": "Alice Ng"}
    assert "sent_by" not in live["message"], "a person's words are not shown as handed on"
    # A tab opened later gets the same in its session frame.
    late = open_websocket(f"/ws/channels/{main_channel.pk}/", session_key=await sync_to_async(cookie)(bob))
    assert (await late.connect())[0]
    snapshot = await late.receive_json_from(timeout=5)
    assert [m["message"].get("author") for m in snapshot["messages"] if m["message"]["role"] == "user"] == [
        {"id": alice.pk, "name": "Alice Ng"}
    ]

    url = reverse("channel", args=[main_channel.pk])
    bobs, alices = await sync_to_async(page_of)(bob, url), await sync_to_async(page_of)(alice, url)
    assert '<span class="who">Alice Ng</span>' in bobs and '<span class="who">You</span>' not in bobs
    assert '<span class="who">You</span>' in alices and "Alice Ng</span>" not in alices


def test_search_results_name_who_asked(people, office, main_channel):
    alice, bob = people
    session = services.get_active_session(channel=main_channel)
    services.start_task(session=session, instruction="Book the offsite venue", coworker="mina", origin={"person": alice.pk})
    services.start_task(session=session, instruction="Which offsite dates work?", coworker="mina", origin={"person": bob.pk})

    html = page_of(bob, reverse("office_search", args=[office.slug]) + "?q=offsite")

    assert "Alice Ng ·" in html and "You ·" in html
