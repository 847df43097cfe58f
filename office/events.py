"""Events to the people watching a channel: every persisted event goes through send_event, is stored
with the channel's next `seq` and is sent after commit; events_after replays them; session_frame is
what a watcher sees first.

Imports models only inside functions (the pipeline imports this module early). In the embedded
default, background jobs run on pool threads while consumers live on the server's event loop; the
in-memory channel layer's queues are not thread-safe, so sends from other threads are handed to
that loop (the consumer registers it on connect).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from . import markdown

log = logging.getLogger(__name__)

# The event type consumers handle (`office_event`); the frame itself is in "event".
LAYER_TYPE = "office.event"
# The session frame shows this many of the newest messages; older ones are on the page or in resync.
SESSION_MESSAGES = 50

_server_loop: asyncio.AbstractEventLoop | None = None


def channel_group(channel_id: int) -> str:
    return f"channel-{channel_id}"


def remember_server_loop() -> None:
    """Called from a consumer on the server's event loop."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def send_event(channel_id: int, event_type: str, **payload: Any) -> int:
    """Store `{"type": event_type, **payload}` with the channel's next seq and send it, with its
    `seq`, once the transaction commits. Returns the seq.

    Runs inside the caller's transaction, so the event exists exactly when the change it reports
    does. A `message` event also gets `html`: the message rendered once, here, so every frame of
    it, live or replayed, carries the same sanitized markup.
    """
    from .models import Channel, ChannelEvent

    if event_type == "message" and "html" not in payload:
        payload["html"] = markdown.render((payload.get("message") or {}).get("content") or "")
    # Through JSON once, so the live frame is exactly what resync later reads back.
    payload = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))
    with transaction.atomic():
        # The row lock serializes writers per channel until commit (SQLite: the IMMEDIATE write
        # lock does the same), so seqs are gap-free and commit in the order they were given out.
        locked = Channel.objects.select_for_update().filter(pk=channel_id)
        seq = locked.values_list("last_event_seq", flat=True).get() + 1
        Channel.objects.filter(pk=channel_id).update(last_event_seq=seq)
        ChannelEvent.objects.create(channel_id=channel_id, seq=seq, type=event_type, payload=payload)
        frame = {"type": event_type, **payload, "seq": seq}
        transaction.on_commit(lambda: send_now(channel_id, frame))
    return seq


def events_after(channel_id: int, after: int, limit: int = 500) -> list[dict]:
    """The channel's stored events with seq > `after`, oldest first, as they were sent: at most `limit`."""
    from .models import ChannelEvent

    rows = ChannelEvent.objects.filter(channel_id=channel_id, seq__gt=after).order_by("seq")[:limit]
    return [{"type": row.type, **row.payload, "seq": row.seq} for row in rows]


def last_seq(channel_id: int) -> int:
    from .models import Channel

    return Channel.objects.filter(pk=channel_id).values_list("last_event_seq", flat=True).get()


def session_frame(channel_id: int, *, limit: int = SESSION_MESSAGES) -> dict:
    """The `session` frame: the active session (opened if there is none), its newest messages, oldest
    first, each with the seq of the event that carried it (null for imported ones), and the channel's
    last seq: the point a client resyncs from.

    The seq is read first. A message whose event came later is left out: it reaches the client as
    that event. A message stored but whose event is not yet committed is in both, under one id.
    """
    from sessions import services
    from sessions.jsonl import record_to_dict
    from sessions.models import Message, Task

    from .models import Channel, ChannelEvent

    seq = last_seq(channel_id)
    session = services.get_active_session(channel=Channel.objects.get(pk=channel_id))
    rows = list(Message.objects.filter(session=session).order_by("-position")[:limit])[::-1]
    # Messages reach the channel one event each, in chain order: the newest message events are these rows'.
    carried = dict(
        ChannelEvent.objects.filter(channel_id=channel_id, type="message")
        .order_by("-seq")
        .values_list("payload__message__id", "seq")[: 2 * limit]
    )
    messages = []
    for row in rows:
        message_seq = carried.get(str(row.pk))
        if message_seq is not None and message_seq > seq:
            continue
        messages.append(
            {
                "message": record_to_dict(services.record_from_row(row)),
                "html": markdown.render(row.content),
                "seq": message_seq,
            }
        )
    return {
        "type": "session",
        "session": session_json(session, tasks=Task.objects.filter(session=session).count()),
        "messages": messages,
        "seq": seq,
    }


def session_json(session, *, tasks: int) -> dict:
    return {
        "id": session.pk,
        "tasks": tasks,
        "started_at": session.started_at.isoformat(),
        "nudged": session.nudged_at is not None,
    }


def send_now(channel_id: int, frame: dict) -> None:
    """Send outside any transaction bookkeeping (streamed deltas are not stored)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": LAYER_TYPE, "event": frame}
    send = layer.group_send(channel_group(channel_id), message)
    loop = _server_loop
    try:
        if loop is not None and loop.is_running() and not _on_loop(loop):
            # Wait, so events from one thread arrive in the order they were sent.
            asyncio.run_coroutine_threadsafe(send, loop).result(timeout=10)
        else:
            send.close()
            async_to_sync(layer.group_send)(channel_group(channel_id), message)
    except Exception:
        # A watcher missing an event must never fail the work; resync replays stored ones.
        log.exception("could not send %s to channel %s", frame.get("type"), channel_id)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
