"""Property test of the channel socket: any frame a client can send (text that is not JSON, JSON of any
shape and type, huge and odd values) that is not a valid request gets an `error` frame back, the
socket stays open, and nothing is stored. One signed-in socket takes every example, as a hostile tab
would send them one after another."""

from __future__ import annotations

import json
import math

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from office.consumers import MAX_CLIENT_ID_CHARS, MAX_FRAME_CHARS
from office.ratelimit import PeopleBuckets
from sessions import posting
from sessions.models import Message, Session, Task

from .conftest import receive_until

pytestmark = pytest.mark.django_db(transaction=True)

CODES = {"bad_json", "bad_frame", "unknown_type", "empty", "too_long", "invalid", "not_found"}
TYPES = ["instruction", "task.stop", "resync", "session.new", "nudge.dismiss", "ping", "", "INSTRUCTION"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**18)  # past any database integer
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=80)
    | st.sampled_from(["", " ", "\u200b\u200d", "\x00", "\ud800", "0", "[]", "{}", "x" * (MAX_CLIENT_ID_CHARS + 1)])
    | st.integers(min_value=20_001, max_value=210_000).map(lambda n: "y" * n)  # over the text and frame limits
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
frames = st.one_of(
    # Typed frames with any fields: the shapes a buggy or hostile client gets nearly right.
    st.fixed_dictionaries(
        {"type": st.sampled_from(TYPES) | st.text(max_size=20) | scalars},
        optional={"text": values, "client_id": values, "task": values, "after": values, "extra": values},
    ).map(json.dumps),
    values.map(json.dumps),  # any JSON at all
    st.text(max_size=300),  # any text, JSON or not
    st.sampled_from(["{", "[" * 5000, '{"type": "instruction"', "NaN", "Infinity", "\ufeff{}", "{'type': 'x'}"]),
)


def acts(text: str) -> bool:
    """Would the server act on this frame (store an instruction, start a conversation, replay, or say
    nothing by design)? Those are not invalid frames; everything else must get an error."""
    if len(text) > MAX_FRAME_CHARS:
        return False
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(frame, dict):
        return False
    kind = frame.get("type")
    if kind in {"session.new", "nudge.dismiss"}:
        return True
    if kind == "resync":
        after = frame.get("after")
        return isinstance(after, int) and not isinstance(after, bool) and after >= 0
    if kind == "instruction":
        body, client_id = frame.get("text"), frame.get("client_id", "x")
        return (
            isinstance(body, str)
            and 0 < len(body.strip()) <= posting.MAX_INSTRUCTION_CHARS
            and posting.has_visible_text(body)
            and "\x00" not in body
            and not any("\ud800" <= char <= "\udfff" for char in body)
            and isinstance(client_id, str)
            and 0 < len(client_id) <= MAX_CLIENT_ID_CHARS
            and "\x00" not in client_id
            and not any("\ud800" <= char <= "\udfff" for char in client_id)
        )
    return False


def stored() -> tuple[int, int, int]:
    return Message.objects.count(), Task.objects.count(), Session.objects.count()


@pytest_asyncio.fixture
async def hostile_tab(bob, acme, enter, no_background, monkeypatch):
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)
    # Hundreds of frames on one socket, one after another: past the flood limit, which has a test of its own.
    monkeypatch.setattr("office.consumers.FRAMES_BURST", 100_000)
    monkeypatch.setattr("office.consumers.person_frames", PeopleBuckets(100_000, 1.0))
    socket = await enter(bob, acme["channel"])
    return socket, await database_sync_to_async(stored)()


@pytest.mark.asyncio
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=frames)
async def test_it_answers_any_invalid_frame_with_an_error_stores_nothing_and_stays_open(hostile_tab, text):
    assume(not acts(text))
    socket, before = hostile_tab

    await socket.send_input({"type": "websocket.receive", "text": text})  # an empty frame included
    frame = await socket.receive_json_from(timeout=10)

    assert frame["type"] == "error" and frame["code"] in CODES, (text[:80], frame)
    assert isinstance(frame["detail"], str) and 0 < len(frame["detail"]) < 300
    assert await database_sync_to_async(stored)() == before
    # Still open and still listening: the next frame is answered too.
    await socket.send_json_to({"type": "ping"})
    assert (await socket.receive_json_from(timeout=10))["code"] == "unknown_type"


@pytest.mark.asyncio
async def test_it_still_takes_a_real_instruction_after_the_junk(hostile_tab):
    socket, _ = hostile_tab
    for junk in ("{", "[]", '{"type": "instruction", "text": "\\u200b", "client_id": 0}', json.dumps({"type": math.inf})):
        await socket.send_to(text_data=junk)
        assert (await socket.receive_json_from(timeout=10))["type"] == "error"

    await socket.send_json_to({"type": "instruction", "text": "A real one", "client_id": "c-real"})

    assert (await receive_until(socket, "task"))[0]["message"]["content"] == "A real one"
