"""A member removed while their sockets are open: both sockets close with 4403 at once, and not one
more instruction, delta or reply reaches them meanwhile."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from office import events
from office.models import Membership

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]


@pytest.fixture
def connect(open_websocket, cookie):
    async def connect_as(user, path: str):
        socket = open_websocket(path, session_key=await sync_to_async(cookie)(user))
        connected, _ = await socket.connect()
        assert connected
        assert (await socket.receive_json_from(timeout=5))["type"] in {"session", "sidebar"}
        return socket

    return connect_as


def remove_then_stream(user, office, channel_id: int) -> None:
    """Remove the membership, then stream as a running task would, right after the commit."""
    Membership.objects.filter(user=user, office=office).delete()
    for n in range(5):
        events.send_now(channel_id, {"type": "delta", "task": 1, "text": f"secret {n}"})


async def closed_with(socket, timeout: float = 2) -> tuple[int, list]:
    """The close code, and whatever came before it."""
    before = []
    while True:
        output = await socket.receive_output(timeout=timeout)
        if output["type"] == "websocket.close":
            return output.get("code"), before
        before.append(output)


async def test_it_closes_a_removed_members_channel_socket_at_once_and_leaks_no_delta(office, bob, alice, direct_channel, connect):
    socket = await connect(bob, f"/ws/channels/{direct_channel.pk}/")
    colleague = await connect(alice, f"/ws/channels/{direct_channel.pk}/")
    started = time.monotonic()

    await database_sync_to_async(remove_then_stream)(bob, office, direct_channel.pk)
    code, before = await closed_with(socket)

    assert code == 4403
    assert before == [], "nothing may reach a removed member"
    assert time.monotonic() - started < 2
    # Everyone else still hears the channel, every delta in order (deltas that pile up arrive merged).
    heard = ""
    while len(heard) < len("secret 0secret 1secret 2secret 3secret 4"):
        heard += (await colleague.receive_json_from(timeout=2))["text"]
    assert heard == "secret 0secret 1secret 2secret 3secret 4"


async def test_it_closes_a_removed_members_sidebar_socket_at_once(office, bob, direct_channel, connect):
    socket = await connect(bob, f"/ws/offices/{office.pk}/")

    await database_sync_to_async(Membership.objects.filter(user=bob, office=office).delete)()

    code, before = await closed_with(socket)
    assert (code, before) == (4403, [])


async def test_it_refuses_the_removed_member_when_the_page_reconnects(office, bob, direct_channel, connect, open_websocket, cookie):
    socket = await connect(bob, f"/ws/channels/{direct_channel.pk}/")
    await database_sync_to_async(Membership.objects.filter(user=bob, office=office).delete)()
    assert (await closed_with(socket))[0] == 4403

    again = open_websocket(f"/ws/channels/{direct_channel.pk}/", session_key=await sync_to_async(cookie)(bob))
    assert await again.connect() == (False, 4403)


async def test_it_leaves_a_member_of_another_office_connected(office, other_office, bob, direct_channel, connect):
    await database_sync_to_async(Membership.objects.create)(user=bob, office=other_office)
    socket = await connect(bob, f"/ws/channels/{direct_channel.pk}/")

    await database_sync_to_async(Membership.objects.filter(user=bob, office=other_office).delete)()
    await asyncio.sleep(0.3)
    await database_sync_to_async(events.send_now)(direct_channel.pk, {"type": "delta", "task": 1, "text": "still yours"})

    assert (await socket.receive_json_from(timeout=2))["text"] == "still yours"


async def test_it_closes_the_socket_at_the_periodic_check_when_the_notice_was_lost(office, bob, direct_channel, connect, monkeypatch):
    monkeypatch.setattr("office.consumers.REJOIN_SECONDS", 0.2)
    monkeypatch.setattr("office.membership.revoke", lambda **kwargs: None)  # the notice never goes out
    socket = await connect(bob, f"/ws/channels/{direct_channel.pk}/")

    await database_sync_to_async(Membership.objects.filter(user=bob, office=office).delete)()

    assert (await closed_with(socket, timeout=3))[0] == 4403
