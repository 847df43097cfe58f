"""Events to the people watching a channel: every persisted event goes through send_event, is stored
with the channel's next `seq` and is sent after commit; events_after replays them; session_frame is
what a watcher sees first. send_event also tells the office's sidebars (office_group) when a reply
lands or a task starts or ends; those notices are not stored (the sidebar frame recomputes them).

Imports models only inside functions (the pipeline imports this module early). In the embedded
default, background jobs run on pool threads while consumers live on the server's event loop; the
in-memory channel layer's queues are not thread-safe, so sends from other threads are handed to
that loop (the consumer registers it on connect). With Redis, every thread sends through one
long-lived loop of the process's own (_sender_loop), which keeps its Redis connections.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import DEFAULT_CHANNEL_LAYER, InMemoryChannelLayer, channel_layers, get_channel_layer
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from . import markdown

log = logging.getLogger(__name__)

# The event type consumers handle (`office_event`); the frame itself is in "event".
LAYER_TYPE = "office.event"
# Notices to the office's sidebars (OfficeConsumer.office_activity, .office_presence).
ACTIVITY_TYPE, PRESENCE_TYPE = "office.activity", "office.presence"
# To one person's sockets: a membership of theirs ended (office.membership), close those of that office.
REVOKED_TYPE = "membership.revoked"
# Task states that may change who is at work (queued does not: nobody has started).
PRESENCE_STATUSES = frozenset({"running", "done", "failed", "stopped"})
# The session frame shows this many of the newest messages; older ones are on the page or in resync.
SESSION_MESSAGES = 50
# …and at most this many bytes of them: the server sends no frame over 1 MiB, and a snapshot of 50
# long Chinese replies was more, so every connect to that channel failed, for everyone in it.
SESSION_FRAME_BYTES = 512 * 1024

_server_loop: asyncio.AbstractEventLoop | None = None


def channel_group(channel_id: int) -> str:
    return f"channel-{channel_id}"


def office_group(office_id: int) -> str:
    return f"office-{office_id}"


def person_group(user_id: int) -> str:
    return f"person-{user_id}"


def remember_server_loop() -> None:
    """Called from a consumer on the server's event loop."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def send_event(channel_id: int, event_type: str, **payload: Any) -> int:
    """Store `{"type": event_type, **payload}` with the channel's next seq and send it, with its
    `seq`, once the transaction commits. Returns the seq.

    Runs inside the caller's transaction, so the event exists exactly when the change it reports
    does, and without a savepoint of its own: a caller that catches its failure and goes on
    must open a savepoint (an inner `atomic()`) around the call.

    A `message` event also gets `html`: the message's stored HTML (rendered when it was stored,
    before this transaction began), so every frame of it, live or replayed, carries the same
    sanitized markup and nothing is rendered while the channel row is locked.
    """
    from .models import Channel, ChannelEvent

    if event_type == "message" and "html" not in payload:
        payload["html"] = _stored_html(payload.get("message") or {})
    # Through JSON once, so the live frame is exactly what resync later reads back.
    payload = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))
    # No savepoint inside the caller's transaction: nobody recovers from a failed event and goes
    # on, and the two statements it would cost are on every instruction's acknowledgement path.
    with transaction.atomic(savepoint=False):
        # The row lock serializes writers per channel until commit (SQLite: the IMMEDIATE write
        # lock does the same), so seqs are gap-free and commit in the order they were given out.
        # Every writer that also locks a session's row takes it first (storing a message, a
        # nudge, an exchange's vectors): in the other order two of them can deadlock in PostgreSQL.
        locked = Channel.objects.select_for_update().filter(pk=channel_id)
        last, office_id = locked.values_list("last_event_seq", "office_id").get()
        seq = last + 1
        Channel.objects.filter(pk=channel_id).update(last_event_seq=seq)
        ChannelEvent.objects.create(channel_id=channel_id, seq=seq, type=event_type, payload=payload)
        frame = {"type": event_type, **payload, "seq": seq}
        transaction.on_commit(lambda: send_now(channel_id, frame))
        notice = office_notice(channel_id, frame)
        if notice is not None:
            transaction.on_commit(lambda: send_to_office(office_id, notice))
    return seq


def _stored_html(message: dict) -> str:
    from .models import RenderedMessage

    try:
        message_id = uuid.UUID(str(message.get("id")))
    except ValueError:
        message_id = None  # not a stored message's id
    if message_id is not None:
        stored = RenderedMessage.objects.filter(message_id=message_id).values_list("html", flat=True).first()
        if stored is not None:
            return stored
    # Only a message stored without going through sessions.services gets here (tests, old code).
    return markdown.render(message.get("content") or "")


def office_notice(channel_id: int, frame: dict) -> dict | None:
    """What the office's sidebars hear of a channel event: a reply that counts as unread (the same
    roles reading.unread_counts counts) or a task that started or ended. Nothing for the rest."""
    from .reading import UNCOUNTED_ROLES

    if frame["type"] == "message":
        if (frame.get("message") or {}).get("role") in UNCOUNTED_ROLES:
            return None
        return {"type": ACTIVITY_TYPE, "channel": channel_id, "seq": frame["seq"]}
    if frame["type"] == "task" and frame.get("status") in PRESENCE_STATUSES:
        # Which coworkers that makes working is for each sidebar to work out: it depends on what its person sees.
        return {"type": PRESENCE_TYPE, "channel": channel_id}
    return None


def events_after(channel_id: int, after: int, limit: int = 500) -> list[dict]:
    """The channel's stored events with seq > `after`, oldest first, as they were sent: at most `limit`."""
    from .models import ChannelEvent

    rows = ChannelEvent.objects.filter(channel_id=channel_id, seq__gt=after).order_by("seq")[:limit]
    return [_as_sent(row) for row in rows]


def _as_sent(row) -> dict:
    return {"type": row.type, **row.payload, "seq": row.seq}


# How far the stored JSON's length may undercount the bytes sent (three bytes per CJK character
# stored raw on PostgreSQL) before replay_after stops loading rows to cut from.
STORED_SIZE_SLACK = 3


def replay_after(channel_id: int, after: int, max_events: int, max_bytes: int) -> tuple[list[dict], bool]:
    """What a resync replays: the oldest events with seq > `after` that fit in `max_events` and in
    `max_bytes` as sent, and whether more are stored past them.

    The rows' stored sizes are read first, so a channel of large events never loads more than about
    STORED_SIZE_SLACK times the budget: the stored JSON is only an estimate of the bytes sent (ASCII
    escapes on SQLite, raw characters on PostgreSQL), and the exact cut is made on what is loaded.
    """
    from django.db.models import TextField
    from django.db.models.functions import Cast, Length

    from .models import ChannelEvent

    stored = ChannelEvent.objects.filter(channel_id=channel_id, seq__gt=after).order_by("seq")
    sizes = list(stored.annotate(size=Length(Cast("payload", TextField()))).values_list("seq", "size")[: max_events + 1])
    last, used = after, 0
    for seq, size in sizes[:max_events]:
        used += size or 0
        if used > max_bytes * STORED_SIZE_SLACK:
            break
        last = seq
    rows = stored.filter(seq__lte=last)
    frames = oldest_within([_as_sent(row) for row in rows], max_bytes)
    return frames, len(frames) < len(sizes)


def last_seq(channel_id: int) -> int:
    from .models import Channel

    return Channel.objects.filter(pk=channel_id).values_list("last_event_seq", flat=True).get()


def oldest_within(items: list[dict], budget: int) -> list[dict]:
    """The oldest of these (oldest first) whose JSON fits in `budget` bytes together, as sent."""
    return items[: _fitting(items, budget)]


def newest_within(items: list[dict], budget: int) -> list[dict]:
    """The newest of these (oldest first) whose JSON fits in `budget` bytes together, as sent."""
    return items[len(items) - _fitting(reversed(items), budget) :]


def _fitting(items, budget: int) -> int:
    """How many of `items`, taken in the order given, fit in `budget` bytes as sent."""
    kept, used = 0, 0
    for item in items:
        used += len(json.dumps(item, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if used > budget:
            break
        kept += 1
    return kept


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
    from sessions.senders import coworker_names, needs_coworker_names, person_names, with_sender

    from .models import Channel, ChannelEvent
    from .rendering import html_of

    seq = last_seq(channel_id)
    channel = Channel.objects.get(pk=channel_id)
    session = services.get_active_session(channel=channel)
    rows = list(Message.objects.filter(session=session).order_by("-position")[:limit])[::-1]
    # Messages reach the channel one event each, in chain order: the newest message events are these rows'.
    carried = dict(
        ChannelEvent.objects.filter(channel_id=channel_id, type="message")
        .order_by("-seq")
        .values_list("payload__message__id", "seq")[: 2 * limit]
    )
    # Stored HTML: rendering the newest messages again on every connect held Channels' one
    # database thread for as long as the slowest of them took.
    html = html_of(rows)
    # An instruction the person did not type names who wrote it, as its live event did.
    asked = {row.turn for row in rows if row.role == Message.Role.USER}
    origins = dict(Task.objects.filter(session=session, turn__in=asked).values_list("turn", "origin")) if asked else {}
    names = coworker_names(channel.office_id) if needs_coworker_names(origins.values()) else {}
    people = person_names(origins.values())
    messages = []
    for row in rows:
        message_seq = carried.get(str(row.pk))
        if message_seq is not None and message_seq > seq:
            continue
        messages.append(
            {
                "message": with_sender(record_to_dict(services.record_from_row(row)), origins.get(row.turn), names, people),
                "html": html[str(row.pk)],
                "seq": message_seq,
            }
        )
    messages = newest_within(messages, SESSION_FRAME_BYTES)
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
        # What "Start a new conversation" carried over from the one before, shown at its top.
        "carried_note_html": carried_note_html(session),
    }


def carried_note_html(session) -> str:
    """The carried note as safe HTML ("" for none). A few hundred characters of the summary, so
    rendering it when a frame is built costs nothing worth storing."""
    return markdown.render(session.carried_note) if session.carried_note.strip() else ""


def send_now(channel_id: int, frame: dict) -> None:
    """Send outside any transaction bookkeeping (streamed deltas are not stored)."""
    try:
        _group_send(channel_group(channel_id), {"type": LAYER_TYPE, "event": frame})
    except Exception:
        # A watcher missing an event must never fail the work; resync replays stored ones.
        log.exception("could not send %s to channel %s", frame.get("type"), channel_id)


def send_to_office(office_id: int, notice: dict) -> None:
    """Tell the office's sidebars (an office_notice). Losing one costs a badge or a dot until the
    page reconnects or reloads, never the work."""
    try:
        _group_send(office_group(office_id), notice)
    except Exception:
        log.exception("could not send %s to office %s", notice.get("type"), office_id)


def send_to_person(user_id: int, message: dict) -> None:
    """Tell every open socket of one person (a membership ended). Losing one is caught by the
    sockets' periodic membership check."""
    try:
        _group_send(person_group(user_id), message)
    except Exception:
        log.exception("could not send %s to person %s", message.get("type"), user_id)


_layer_lock = threading.Lock()


def _channel_layer():
    """get_channel_layer, built once per process even when hundreds of reply threads first ask at
    the same moment (a burst right after the worker starts). Channels builds the layer on first
    use without a lock, so a burst built several; each new one replaced the sender
    (_GroupSender.of), and a barrier or stored event then went through a sender whose queues did
    not hold the deltas handed to the one before: sent_out no longer meant "the deltas are out"."""
    layer = channel_layers.backends.get(DEFAULT_CHANNEL_LAYER)
    if layer is not None:
        return layer
    with _layer_lock:
        return get_channel_layer()


def _group_send(group: str, message: dict) -> None:
    layer = _channel_layer()
    if layer is None:
        return
    in_memory = isinstance(layer, InMemoryChannelLayer)
    if in_memory and _server_loop is not None and _server_loop.is_closed():
        # The server has stopped: every in-memory listener lived on that loop, so nobody can hear
        # this (a reply finishing during shutdown). Not an error.
        return
    if not in_memory:
        loop = _sender_loop()
        if not _on_loop(loop):
            sent = _GroupSender.of(loop, layer).submit(group, message)
            if is_delta(message):
                return
            if getattr(_sending, "unawaited", False):
                sent.add_done_callback(partial(_log_unsent, group))
                return
            # A stored event waits for its turn (and so for every delta sent before it): a
            # reply's stream then never outlives its task, and a failure reaches the caller.
            sent.result(timeout=10)
            return
        async_to_sync(layer.group_send)(group, message)
        return
    send = layer.group_send(group, message)
    loop = _server_loop
    if loop is not None and loop.is_running() and not _on_loop(loop):
        # Wait, so events from one thread arrive in the order they were sent.
        asyncio.run_coroutine_threadsafe(send, loop).result(timeout=10)
    else:
        send.close()
        async_to_sync(layer.group_send)(group, message)


_sending = threading.local()


@contextmanager
def unawaited() -> Iterator[None]:
    """Events this thread sends meanwhile (with Redis) are handed to the sender without waiting for
    them to reach Redis: still in order with everything else sent to the channel, and a failure
    is logged. For a caller that holds what others queue for while it waits: a task's claim holds
    one of the pool's few connections, and in a burst of replies the sender loop is busy with
    other streams' deltas (its "running" event waited 0.17 s p50, 0.56 s p95, at 100 at once).
    An event whose send comes after the block (an outer transaction committing later) waits."""
    before = getattr(_sending, "unawaited", False)
    _sending.unawaited = True
    try:
        yield
    finally:
        _sending.unawaited = before


def _log_unsent(group: str, done: concurrent.futures.Future) -> None:
    if done.exception() is not None:
        log.warning("could not send an event to %s: %s", group, done.exception())


def sent_out(channel_id: int) -> None:
    """Wait until everything handed to the sender for this channel has reached the channel layer.
    A stream calls it before its reply is stored: a stored event must never be readable (a
    socket's catch-up reads the store) while deltas before it are still on their way."""
    layer = _channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return  # sent in place, nothing waits
    loop = _sender_loop()
    if _on_loop(loop):
        return
    try:
        _GroupSender.of(loop, layer).submit(channel_group(channel_id), BARRIER).result(timeout=10)
    except Exception:
        log.exception("deltas to channel %s may still be on their way", channel_id)


# A delta whose send failed goes again this many times (its group's next sends wait meanwhile).
DELTA_RETRIES = 3
# Queued like a message, sent as nothing: done once everything before it in its group is sent.
BARRIER: dict = {}


def is_delta(message: dict) -> bool:
    return message.get("type") == LAYER_TYPE and (message.get("event") or {}).get("type") == "delta"


def merged_delta(earlier: dict, later: dict) -> dict | None:
    """One layer message for two deltas of the same task and coworker, in order; None otherwise."""
    if not (is_delta(earlier) and is_delta(later)):
        return None
    first, second = earlier["event"], later["event"]
    if (first.get("task"), first.get("coworker")) != (second.get("task"), second.get("coworker")):
        return None
    return {**earlier, "event": {**first, "text": (first.get("text") or "") + (second.get("text") or "")}}


class _GroupSender:
    """Sends to Redis for every thread of the process, on the sender loop: per group, one message
    at a time and in the order given, so nobody waits for another channel's round trips; and the
    deltas that pile up behind a message in flight go as one (a busy machine sends fewer, larger
    deltas instead of falling behind). A streaming thread hands its delta over and goes on."""

    _instances: dict[int, _GroupSender] = {}
    _lock = threading.Lock()

    def __init__(self, loop: asyncio.AbstractEventLoop, layer) -> None:
        self.loop, self.layer = loop, layer
        self.queues: dict[str, deque] = {}

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop, layer) -> _GroupSender:
        with cls._lock:
            sender = cls._instances.get(id(loop))
            if sender is None or sender.layer is not layer:
                sender = cls._instances[id(loop)] = cls(loop, layer)
            return sender

    def submit(self, group: str, message: dict) -> concurrent.futures.Future:
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.add_done_callback(partial(_log_failure, group, message))
        self.loop.call_soon_threadsafe(self._enqueue, group, message, done)
        return done

    def _enqueue(self, group: str, message: dict, done: concurrent.futures.Future) -> None:
        queue = self.queues.get(group)
        if queue is None:
            queue = self.queues[group] = deque()
            self.loop.create_task(self._drain(group, queue))
        if queue:
            merged = merged_delta(queue[-1][0], message)
            if merged is not None:
                queue[-1] = (merged, [*queue[-1][1], done])
                return
        queue.append((message, [done]))

    async def _drain(self, group: str, queue: deque) -> None:
        failures = 0  # in a row, of this group's deltas
        try:
            while queue:
                message, waiting = queue.popleft()
                try:
                    if message is not BARRIER:
                        await self.layer.group_send(group, message)
                except Exception as error:
                    if is_delta(message) and failures < DELTA_RETRIES:
                        # Nobody waits on a delta, and a dropped one is a hole in the reply for as
                        # long as it streams: in a burst of 500 a send waited past the pool's
                        # timeout for one of its connections ("No connection available"). It goes
                        # again first, with whatever piled up behind it, so the order holds.
                        failures += 1
                        merged = merged_delta(message, queue[0][0]) if queue else None
                        if merged is not None:
                            queue[0] = (merged, [*waiting, *queue[0][1]])
                        else:
                            queue.appendleft((message, waiting))
                        continue
                    failures = 0
                    for one in waiting:
                        one.set_exception(error)
                else:
                    failures = 0
                    for one in waiting:
                        one.set_result(None)
        finally:
            del self.queues[group]


def _log_failure(group: str, message: dict, done: concurrent.futures.Future) -> None:
    # Only for deltas (nobody waits on them); a stored event's caller gets the error itself.
    if done.exception() is not None and is_delta(message):
        log.warning("could not send a delta to %s: %s", group, done.exception())


_sender: tuple[int, asyncio.AbstractEventLoop] | None = None
_sender_lock = threading.Lock()


def _sender_loop() -> asyncio.AbstractEventLoop:
    """One event loop per process, on a thread of its own, that sends to Redis for every other
    thread. async_to_sync would start a loop per call, and channels_redis a connection per loop:
    a new Redis connection for every event and every streamed delta. Made again after a fork
    (Celery's prefork children), since a thread does not survive one."""
    global _sender
    with _sender_lock:
        if _sender is None or _sender[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="channel-layer-sender", daemon=True).start()
            _sender = (os.getpid(), loop)
        return _sender[1]


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
