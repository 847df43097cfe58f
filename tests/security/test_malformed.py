"""Malformed and oversized input, over HTTP and the websocket: a clear error, and nothing changes."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from sessions.models import MemoryEvent, MemoryItem

from .conftest import receive_until, snapshot

HUGE = 10**30


def as_bob(bob) -> Client:
    client = Client()
    client.force_login(bob)
    return client


# HTTP forms --------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "A memory needs some text. To remove it, use Delete."),
        ({"text": "", "kind": "rule"}, "A memory needs some text. To remove it, use Delete."),
        ({"text": "x" * 1001, "kind": "rule"}, "Keep a memory under 1,000 characters (it is 1001)."),
        ({"text": "x" * 200_000, "kind": "rule"}, "Keep a memory under 1,000 characters (it is 200000)."),
        ({"text": "Fine", "kind": "gossip"}, "Pick one of the listed kinds."),
        ({"text": "Fine"}, "This field is required."),
        ({"text": "Nul\x00byte", "kind": "rule"}, "Null characters are not allowed."),
        ({"text": ["One", "Two"], "kind": ["rule", "company"], "other": "junk"}, None),
    ],
)
def test_a_malformed_memory_edit_gets_a_clear_error_and_changes_nothing(bob, acme, fields, message):
    item = acme["item"]
    data = {f"item{item.pk}-{name}": value for name, value in fields.items()}
    before = snapshot()

    response = as_bob(bob).post(f"/o/acme/memory/{item.pk}/edit/", data)

    if message is None:  # repeated fields: the last value counts, and it is valid
        assert response.status_code == 302
        item.refresh_from_db()
        assert (item.text, item.kind) == ("Two", "company")
        return
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page and 'role="alert"' in page
    assert snapshot() == before


@pytest.mark.django_db
@pytest.mark.parametrize("pinned", [None, "", "yes", "true", "2", "1 "])
def test_a_pin_that_says_neither_pin_nor_unpin_changes_nothing(bob, acme, pinned):
    item = acme["item"]
    MemoryItem.objects.filter(pk=item.pk).update(pinned=True)
    before = snapshot()

    response = as_bob(bob).post(f"/o/acme/memory/{item.pk}/pin/", {} if pinned is None else {"pinned": pinned})

    assert response.status_code == 400
    assert "Pin or unpin: the request said neither, so nothing changed." in response.content.decode()
    assert snapshot() == before
    assert MemoryItem.objects.get(pk=item.pk).pinned, "still pinned"


@pytest.mark.django_db
def test_a_request_body_over_the_upload_limit_is_refused(bob, acme, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    item = acme["item"]
    before = snapshot()

    response = as_bob(bob).post(
        f"/o/acme/memory/{item.pk}/edit/", {f"item{item.pk}-text": "x" * 20_000, f"item{item.pk}-kind": "rule"}
    )

    assert response.status_code == 400
    assert snapshot() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        f"/c/{HUGE}/",
        "/c/{channel}/sessions/" + str(HUGE) + "/",
        "/c/{channel}/tasks/" + str(HUGE) + "/report/",
        "/c/{channel}/tasks/1/report/?session=" + str(HUGE),
        "/c/{channel}/tasks/1/report/?session=abc",
        "/c/{channel}/tasks/1/report/?session=-1",
        "/c/{channel}/tasks/1/report/?session=1e3",
        "/c/{channel}/tasks/1/report/?session=%00",
        "/c/{channel}/tasks/1/report/?session=%C2%B2",  # '²': str.isdigit() says yes, int() says no
        "/o/acme/memory/" + str(HUGE) + "/edit/",
        "/o/" + "a" * 5000 + "/",
    ],
)
def test_malformed_ids_are_not_found_rather_than_a_server_error(bob, acme, url):
    client = as_bob(bob)
    url = url.format(channel=acme["channel"].pk)
    before = snapshot()

    response = client.post(url) if url.endswith("/edit/") else client.get(url)

    assert response.status_code == 404, url
    assert snapshot() == before


# The websocket ------------------------------------------------------------------------------------------------------


BAD_FRAMES = [
    ("x" * 200_001, "too_long"),
    (json.dumps({"type": "instruction", "text": "x" * 199_000}), "too_long"),
    ("{" * 50_000, "bad_json"),
    ("[" * 100_000 + "]" * 100_000, "bad_json"),  # nested too deep to parse
    ('{"type": "instruction", "text": "hi", "client_id": "' + "x" * 65 + '"}', "invalid"),
    ('{"type": "instruction", "text": ["hi"]}', "bad_frame"),
    ('{"type": "instruction", "text": {"$gt": ""}}', "bad_frame"),
    ('{"type": "instruction", "text": null}', "bad_frame"),
    ('{"type": "instruction", "text": "hi", "client_id": ["a"]}', "invalid"),
    ('{"type": "instruction", "text": "nul \\u0000 inside"}', "bad_frame"),
    ('{"type": "instruction", "text": "lone \\ud800 surrogate"}', "bad_frame"),
    ('{"type": "instruction", "text": "hi", "client_id": "nul\\u0000"}', "bad_frame"),
    ('{"type": "' + "t" * 10_000 + '"}', "unknown_type"),
    ('{"type": "task.stop", "task": ' + str(HUGE) + "}", "not_found"),
    ('{"type": "task.stop", "task": 1e400}', "bad_frame"),
    ('{"type": "resync", "after": "0"}', "bad_frame"),
    ('{"type": "resync", "after": null}', "bad_frame"),
    ("NaN", "bad_frame"),
    ("null", "bad_frame"),
]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_every_malformed_frame_gets_a_clear_error_changes_nothing_and_the_socket_stays_open(
    bob, acme, enter, no_background, monkeypatch
):
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)
    socket = await enter(bob, acme["channel"])
    before = await database_sync_to_async(snapshot)()

    for text, code in BAD_FRAMES:
        await socket.send_to(text_data=text)
        frame = await socket.receive_json_from(timeout=10)
        assert (frame["type"], frame["code"]) == ("error", code), (text[:60], frame)
        assert frame["detail"] and len(frame["detail"]) < 300, "a sentence, not an echo of the frame"
    for data in (b"\xff\xfe", b"x" * 300_000):
        await socket.send_to(bytes_data=data)
        assert (await socket.receive_json_from(timeout=10))["code"] == "bad_json"
    await socket.send_input({"type": "websocket.receive", "text": ""})  # an empty text frame
    assert (await socket.receive_json_from(timeout=10))["code"] == "bad_json"

    assert await database_sync_to_async(snapshot)() == before
    # Still open, still working.
    await socket.send_json_to({"type": "instruction", "text": "A real one", "client_id": "c-ok"})
    frames = await receive_until(socket, "task")
    assert frames[0]["message"]["content"] == "A real one"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_resync_from_beyond_the_end_replays_nothing(bob, acme, enter):
    socket = await enter(bob, acme["channel"])

    await socket.send_json_to({"type": "resync", "after": HUGE})
    await socket.send_json_to({"type": "ping"})

    assert (await socket.receive_json_from(timeout=5))["code"] == "unknown_type", "no error, no frames before it"
    assert await MemoryEvent.objects.acount() == 0
