"""Hostile input the protocol must hold against: ids that are not ids, text nobody can see, a reused
client_id, new conversations by the hundred, sockets at paths that do not exist."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from sessions.models import Message, Session

from .conftest import receive_until, snapshot

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def quiet(no_background, monkeypatch):
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)


async def answer(socket, frame) -> dict:
    await socket.send_json_to(frame)
    return await socket.receive_json_from(timeout=10)


@pytest.mark.parametrize("client_id", [0, False, [], {}, None, 12345, "", "x" * 65, 1.5])
async def test_it_refuses_any_client_id_that_is_not_a_short_string(bob, acme, enter, client_id):
    socket = await enter(bob, acme["channel"])
    before = await database_sync_to_async(snapshot)()

    frame = await answer(socket, {"type": "instruction", "text": "Draft the plan", "client_id": client_id})

    assert (frame["type"], frame["code"]) == ("error", "invalid")
    assert "client_id" in frame["detail"]
    assert await database_sync_to_async(snapshot)() == before


async def test_it_takes_an_instruction_without_a_client_id_and_one_with_a_64_character_id(bob, acme, enter):
    socket = await enter(bob, acme["channel"])

    await socket.send_json_to({"type": "instruction", "text": "No id"})
    assert (await receive_until(socket, "task"))[0]["message"]["content"] == "No id"
    await socket.send_json_to({"type": "instruction", "text": "Long id", "client_id": "x" * 64})
    assert (await receive_until(socket, "task"))[0]["message"]["content"] == "Long id"


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d\u2060\ufeff", " \u200b \n\u200e\t", "\u2800", "\u3164 \u115f\u034f", "\u17b4\u180e"])
async def test_it_refuses_text_made_only_of_invisible_characters(bob, acme, enter, text):
    socket = await enter(bob, acme["channel"])
    before = await database_sync_to_async(snapshot)()

    frame = await answer(socket, {"type": "instruction", "text": text, "client_id": "c-zw"})

    assert (frame["type"], frame["code"]) == ("error", "invalid")
    assert await database_sync_to_async(snapshot)() == before


async def test_it_says_so_when_a_client_id_is_reused_for_other_words(bob, acme, enter):
    socket = await enter(bob, acme["channel"])
    await socket.send_json_to({"type": "instruction", "text": "First words", "client_id": "c-1"})
    await receive_until(socket, "task")

    frame = await answer(socket, {"type": "instruction", "text": "Other words", "client_id": "c-1"})

    assert (frame["type"], frame["code"]) == ("error", "conflict")
    assert "already used" in frame["detail"]
    contents = await database_sync_to_async(lambda: list(Message.objects.values_list("content", flat=True)))()
    assert "Other words" not in contents
    # The same words again are still just a resend: nothing new, no error.
    await socket.send_json_to({"type": "instruction", "text": "First words", "client_id": "c-1"})
    await socket.send_json_to({"type": "ping"})
    assert (await socket.receive_json_from(timeout=10))["code"] == "unknown_type"


async def test_it_rate_limits_new_conversations(bob, acme, enter, settings):
    settings.NEW_SESSIONS_PER_MINUTE = 3
    socket = await enter(bob, acme["channel"])
    sessions_before = await database_sync_to_async(Session.objects.count)()

    for _ in range(3):
        await socket.send_json_to({"type": "session.new"})
        assert (await receive_until(socket, "session"))[-1]["type"] == "session"
    # Other frames may come first: the fixture's queued task, in a conversation now ended, is
    # stopped whenever a worker gets to it.
    await socket.send_json_to({"type": "session.new"})
    frame = (await receive_until(socket, "error"))[-1]

    assert (frame["type"], frame["code"]) == ("error", "rate_limited")
    assert "Try again in" in frame["detail"]
    assert await database_sync_to_async(Session.objects.count)() == sessions_before + 3


@pytest.mark.parametrize("path", ["/ws/nowhere/", "/ws/channels/abc/", "/", "/ws/channels/1/extra/"])
async def test_it_closes_a_socket_at_an_unknown_path_without_a_server_error(bob, sockets, cookie, path, caplog):
    socket = sockets(path, await sync_to_async(cookie)(bob))

    connected, _ = await socket.connect(timeout=5)

    assert not connected
    assert not [r for r in caplog.records if r.levelname in {"ERROR", "CRITICAL"}]

