"""When the database or Redis is briefly away: a 503 page that says so, an `unavailable` error frame on
a socket that stays open, and a socket that finds its way back into a group Redis forgot. The same
faults against the real services are in tests/production/test_faults.py."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import OperationalError

from office import consumers, events, unavailable
from sessions.models import Task

# The protocol tests' fixtures: sockets that are always closed, signed-in entry, no real model.
from tests.office.test_consumer import enter, nudge_checks, settle, sockets  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("offline", "fresh_channel_layer")]


def test_a_page_while_the_database_is_away_is_a_503_that_says_so(client, bob, direct_channel, monkeypatch):
    client.force_login(bob)

    def away(*args, **kwargs):
        raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")

    monkeypatch.setattr("office.views._visible_channel", away)
    response = client.get(f"/c/{direct_channel.pk}/")

    assert response.status_code == 503
    assert response["Retry-After"] == str(unavailable.RETRY_AFTER_SECONDS)
    page = response.content.decode()
    assert "Briefly unavailable" in page and "try again in a moment" in page
    assert "Connection refused" not in page and "Traceback" not in page


@pytest.mark.asyncio
async def test_an_instruction_while_the_database_is_away_is_refused_in_words_and_the_socket_stays_open(
    bob, direct_channel, enter, nudge_checks, monkeypatch
):
    socket, _ = await enter(bob, direct_channel)

    async def away(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patch:
        patch.setattr(consumers, "post_off_shared_thread", away)
        await socket.send_json_to({"type": "instruction", "text": "Draft the plan", "client_id": "c1"})
        assert await socket.receive_json_from(timeout=5) == {
            "type": "error", "code": "unavailable", "detail": unavailable.DETAIL,
        }
    assert await settle(socket) == []  # still open, answering

    # Back: the same instruction, sent again, is taken.
    await socket.send_json_to({"type": "instruction", "text": "Draft the plan", "client_id": "c1"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "message"
    assert await database_sync_to_async(Task.objects.filter(client_id="c1").count)() == 1


@pytest.mark.asyncio
async def test_a_socket_whose_group_redis_forgot_joins_again_and_sends_what_it_missed(
    bob, direct_channel, enter, nudge_checks, monkeypatch, settings
):
    # Forgetting a group is played on the in-memory layer, whatever the run's layer; the real Redis
    # restart is tests/production/test_faults.py's.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.2)
    socket, frame = await enter(bob, direct_channel)
    # A restarted Redis keeps no groups: the event below reaches nobody live.
    get_channel_layer().groups.pop(events.channel_group(direct_channel.pk), None)
    seq = await database_sync_to_async(events.send_event)(direct_channel.pk, "task", id=1, status="queued")

    missed = await socket.receive_json_from(timeout=5)
    assert missed == {"type": "task", "id": 1, "status": "queued", "seq": seq}
    assert seq == frame["seq"] + 1

    # In the group again: the next event arrives live, once.
    later = await database_sync_to_async(events.send_event)(direct_channel.pk, "task", id=1, status="running")
    assert (await socket.receive_json_from(timeout=5))["seq"] == later
    assert await socket.receive_nothing(timeout=0.5)


@pytest.mark.asyncio
async def test_a_socket_keeps_re_joining_after_an_unexpected_error(
    bob, direct_channel, enter, nudge_checks, monkeypatch, settings
):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.2)
    real_catch_up = consumers.ChannelConsumer.rejoined
    failures = []

    async def fails_once(self):
        if not failures:
            failures.append("boom")
            raise RuntimeError("a bug in the catch-up")
        await real_catch_up(self)

    monkeypatch.setattr(consumers.ChannelConsumer, "rejoined", fails_once)
    socket, frame = await enter(bob, direct_channel)
    get_channel_layer().groups.pop(events.channel_group(direct_channel.pk), None)
    seq = await database_sync_to_async(events.send_event)(direct_channel.pk, "task", id=1, status="queued")

    # The first round fails; a later one joins again and sends what was missed.
    missed = await socket.receive_json_from(timeout=5)
    assert failures and missed["seq"] == seq
