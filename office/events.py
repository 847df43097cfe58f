"""Events to the people watching a channel. Every event goes through send_event, after commit.

Must not import models. In the embedded default, background jobs run on pool
threads while consumers live on the server's event loop; the in-memory channel
layer's queues are not thread-safe, so sends from other threads are handed to
that loop (the consumer registers it on connect).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

# The event type consumers handle (`office_event`); the frame itself is in "event".
LAYER_TYPE = "office.event"

_server_loop: asyncio.AbstractEventLoop | None = None


def channel_group(channel_id: int) -> str:
    return f"channel-{channel_id}"


def remember_server_loop() -> None:
    """Called from a consumer on the server's event loop."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def send_event(channel_id: int, event_type: str, **payload: Any) -> None:
    """Send `{"type": event_type, **payload}` to the channel's watchers once the transaction commits."""
    frame = {"type": event_type, **payload}
    transaction.on_commit(lambda: send_now(channel_id, frame))


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
