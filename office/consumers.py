"""The channel websocket (/ws/channels/<id>/): authenticate, check membership, join the channel's group,
hand each valid frame to a service, forward the group's events. No ORM on the event loop, and no
model call anywhere near it; must not import a provider.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.db import connections

from sessions import nudge, pipeline, posting
from sessions.models import Task
from sessions.senders import author

from . import events, ratelimit, reading, regenerating, unavailable
from .backlog import Backlog
from .ratelimit import Bucket, PeopleBuckets
from .models import Channel
from .origin import header

log = logging.getLogger(__name__)

# Close code for "not yours": an outsider, an anonymous visitor and a channel that does not exist
# get the same answer, so nobody can probe which channel ids exist.
REFUSED = 4403
# A frame longer than this is refused before parsing. Room for a whole instruction even when
# every character is sent as a \uXXXX escape.
MAX_FRAME_CHARS = 200_000
MAX_CLIENT_ID_CHARS = 64
# How many stored events one read replays (a resync, an acknowledgement, a catch-up).
RESYNC_PAGE = 500
# A resync replays at most this many events, then says `truncated` (the page reloads instead): a
# client that never reads would otherwise have the server buffer the whole channel, as often as asked.
RESYNC_MAX_EVENTS = 500
# And at most this many bytes of them: a stored event keeps its rendered HTML (half a megabyte for a
# long highlighted code block), and 40 sockets asking for 500 such events three times, never
# reading, took the server to 8 GB. Past it, the same `truncated` (the page reloads).
RESYNC_MAX_BYTES = 1_000_000
# Resyncs per socket: a burst of RESYNC_BURST, then one every RESYNC_EVERY_SECONDS; more are refused
# with `rate_limited` (a page sends one per reconnect).
RESYNC_BURST, RESYNC_EVERY_SECONDS = 3, 5.0
# Frames of any kind per socket: a burst of FRAMES_BURST, then FRAMES_PER_SECOND. A page sends a
# few a minute; past this, the socket is closed with FLOODED before the frame is read (20,000
# frames of nonsense once kept the server busy for two minutes). The page reconnects by itself.
FRAMES_BURST, FRAMES_PER_SECOND = 60, 10
FLOODED = 4429
# And per person, over all their sockets in this process: a person may hold 40 sockets, and 40
# sockets each sending a cheap frame at the per-socket pace (400 a second, each checked against
# the membership) took every other person's page loads from 35 ms to half a second; 40 sockets
# each resyncing at its pace pulled 500 MB in a minute. A person's dozen tabs reconnecting at
# once stay well inside both.
PERSON_FRAMES_BURST, PERSON_FRAMES_PER_SECOND = 120, 20
PERSON_RESYNC_BURST, PERSON_RESYNC_EVERY_SECONDS = 20, 1.0
person_frames = PeopleBuckets(PERSON_FRAMES_BURST, 1 / PERSON_FRAMES_PER_SECOND)
person_resyncs = PeopleBuckets(PERSON_RESYNC_BURST, PERSON_RESYNC_EVERY_SECONDS)
# Close code for a socket whose client has left too much unread (office.backlog): the page
# reconnects and resyncs, a client that never reads stops costing the server memory.
UNREAD = 4408
# Redis forgets who is in a group when it restarts, and a socket that stays open through that
# would hear nothing more: each socket joins its group again this often, then sends from the
# store what it missed.
REJOIN_SECONDS = 20
# Tries to join a group on connect before the handshake is refused.
JOIN_ATTEMPTS = 3
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The consumer's ORM calls run on the event loop's thread pool, not on Channels' one shared
# database thread (database_sync_to_async's default): each call is independent and opens its own
# connection, and on that one thread 500 sockets connecting, checking a frame's sender or closing
# at once waited behind each other (closing sockets were killed after Daphne's 10 s).
database_off_shared_thread = partial(database_sync_to_async, thread_sensitive=False)


class FrameError(Exception):
    """A frame the consumer will not act on; the client gets an `error` frame and the socket stays open."""

    def __init__(self, code: str, detail: str, client_id: str = "", **fields: Any) -> None:
        super().__init__(detail)
        # `fields` go into the frame too: what a page needs to act on it (a resync refused for
        # its pace says so, and when to ask again).
        self.code, self.detail, self.client_id, self.fields = code, detail, client_id, fields


class StaysJoined(AsyncJsonWebsocketConsumer):
    """A consumer of one group that joins it again every REJOIN_SECONDS (harmless when still in it):
    Redis forgets group members when it restarts, and a socket that stayed open would hear nothing.

    It also listens to its person's group, where an ended membership is announced
    (office/membership.py): a socket of that office closes with REFUSED at once and forwards nothing
    more. The periodic re-join checks membership again, in case that notice was lost."""

    group: str | None = None
    person_group: str | None = None
    office_id: int | None = None
    rejoining: asyncio.Task | None = None
    # Set once the person is no longer a member: nothing more is forwarded while the close goes out.
    revoked = False
    # What the client has not read (office.backlog; None where the server does not say), and
    # whether it fell too far behind: then nothing more is sent while the close goes out.
    unread: Backlog | None = None
    behind = False

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        # As UTF-8, not \uXXXX escapes: Chinese text then takes half the bytes of a frame, and a
        # frame over the server's 1 MiB limit is never sent. Text that UTF-8 cannot carry (a lone
        # surrogate in a model's stream) is escaped as before.
        text = json.dumps(content, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content)
        return text

    async def send_json(self, content: Any, close: bool = False) -> None:
        if self.behind:
            return
        text = await self.encode_json(content)
        if self.unread is not None and self.unread.behind:  # only then is the frame measured
            await asyncio.sleep(0)  # the reactor writes what the client takes before it is judged
            if self.unread.too_far_behind(len(text.encode())):
                self.behind = True
                log.warning("closed a socket of %s: its client left %d bytes unread", self.group, self.unread.unsent())
                await self.close(code=UNREAD)
                return
        try:
            await self.send(text_data=text, close=close)
        except Disconnected:
            # The browser's close handshake has begun, and Daphne has not yet told this consumer
            # (its disconnect comes next): a frame on its way has no one to go to. Not an error.
            log.debug("a frame for a closing socket of %s was dropped", self.group)

    async def __call__(self, scope, receive, send) -> None:
        self.unread = scope.get("backlog")
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Also when the consumer died (its channel layer went away): never re-join a dead channel.
            if self.rejoining is not None:
                self.rejoining.cancel()

    async def join(self, group: str) -> None:
        """Join the socket's group and its person's group (before accepting: a join that fails
        raises, and the socket is closed rather than left open and deaf)."""
        self.group = group
        self.person_group = events.person_group(self.scope["user"].pk)
        for name in (self.group, self.person_group):
            for attempt in range(JOIN_ATTEMPTS):
                try:
                    await self.channel_layer.group_add(name, self.channel_name)
                    break
                except unavailable.ERRORS as error:
                    # A socket accepted without its group would hear nothing: retry briefly, then
                    # raise, which refuses the handshake (the page reconnects by itself).
                    if attempt == JOIN_ATTEMPTS - 1:
                        raise
                    log.warning("%s: could not join (attempt %d): %s", name, attempt + 1, error)
                    await asyncio.sleep(0.2 * 2**attempt)

    async def leave(self) -> None:
        for name in (self.group, self.person_group):
            if name:
                await self.channel_layer.group_discard(name, self.channel_name)

    def start_rejoining(self) -> None:
        self.rejoining = asyncio.create_task(self.stay_joined())

    async def stay_joined(self) -> None:
        while not self.revoked:
            await asyncio.sleep(REJOIN_SECONDS)
            try:
                for name in (self.group, self.person_group):
                    await self.channel_layer.group_add(name, self.channel_name)
                if not await self.still_member():
                    await self.refuse()
                    return
                await self.rejoined()
            except unavailable.ERRORS as error:
                # Redis away: this socket's receive fails too and the page reconnects. The database
                # away: the next round catches up.
                log.warning("%s: could not re-join or catch up: %s", self.group, error)
            except Exception:
                # Anything else is a bug to see in the log, but not a reason to stop re-joining:
                # a socket that stops re-joining goes quiet for good after the next Redis restart.
                log.exception("%s: re-join or catch-up failed", self.group)

    async def rejoined(self) -> None:
        """After each re-join: send what may have been missed meanwhile."""

    async def still_member(self) -> bool:
        return await database_off_shared_thread(is_office_member)(self.scope.get("user"), self.office_id)

    async def membership_revoked(self, message: dict) -> None:
        """From the person's group: one of their memberships ended (None: some membership changed)."""
        if self.revoked:
            return
        if message.get("office") == self.office_id or (message.get("office") is None and not await self.still_member()):
            await self.refuse()

    async def refuse(self) -> None:
        self.revoked = True
        await self.close(code=REFUSED)


class ChannelConsumer(StaysJoined):
    """One browser tab watching one channel. Frames: README, "Websockets"."""

    channel_id: int
    flooded = False  # closed for sending too many frames: what is still queued is dropped

    async def connect(self) -> None:
        self.channel_id = int(self.scope["url_route"]["kwargs"]["channel_id"])
        self.language = nudge.language_from_header(header(self.scope, b"accept-language"))
        # The seq of the next persisted event this socket forwards live: each is sent once, in order.
        self.next_seq = 1
        self.resyncs = Bucket(RESYNC_BURST, RESYNC_EVERY_SECONDS)
        self.frames = Bucket(FRAMES_BURST, 1 / FRAMES_PER_SECOND)
        self.office_id = await member_office(self.scope.get("user"), self.channel_id)
        if self.office_id is None:
            await self.close(code=REFUSED)
            return
        events.remember_server_loop()
        # Join before reading the snapshot: an event committed after the read is then sure to arrive.
        await self.join(events.channel_group(self.channel_id))
        await self.accept()
        frame = await database_off_shared_thread(events.session_frame)(self.channel_id)
        # Events up to the snapshot's seq are in it, or the client's resync asks for them.
        self.next_seq = frame["seq"] + 1
        await self.send_json(frame)
        self.start_rejoining()
        try:
            await database_off_shared_thread(nudge.maybe_nudge)(frame["session"]["id"], "entry", self.language)
        except Exception:
            # The nudge is a suggestion; failing to show it must not cost the user the connection.
            log.exception("could not check the nudge on entry to channel %s", self.channel_id)

    async def disconnect(self, code: int) -> None:
        await self.leave()
        if self.group and not self.revoked and not self.behind:
            # What this tab was shown live counts as read (the sidebar's unread counts); not
            # when it stopped reading: what was sent to it then was dropped with the socket.
            await database_off_shared_thread(reading.mark_read)(
                user=self.scope.get("user"), channel_id=self.channel_id, seq=self.next_seq - 1
            )

    # From the client --------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if self.revoked or self.flooded:
            return
        if not self.frames.take() or not person_frames.take(self.scope["user"].pk):
            self.flooded = True
            log.warning("closing a socket of channel %s: too many frames at once, from it or its person", self.channel_id)
            await self.send_error("rate_limited", "Too many messages at once: this connection was closed, and the page connects again by itself.")
            await self.close(code=FLOODED)
            return
        try:
            if text_data is None:
                raise FrameError("bad_json", "Frames are JSON text.")
            if len(text_data) > MAX_FRAME_CHARS:
                raise FrameError("too_long", "This frame is too long.")
            await self.receive_json(await self.decode_json(text_data))
        except FrameError as error:
            await self.send_error(error.code, error.detail, error.client_id, **error.fields)
        except unavailable.ERRORS as error:
            # The database or Redis is away: say so, keep the socket (it works again once they are back).
            log.warning("a frame in channel %s failed, a service is unavailable: %s", self.channel_id, error)
            await self.send_error("unavailable", unavailable.DETAIL)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return json.loads(text_data)
        except (ValueError, RecursionError):
            raise FrameError("bad_json", "This frame is not valid JSON.") from None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            raise FrameError("bad_frame", "A frame is a JSON object with a type.")
        handler = self.HANDLERS.get(content["type"])
        if handler is None:
            raise FrameError("unknown_type", f"Unknown frame type: {content['type'][:40]!r}.")
        if await member_office(self.scope.get("user"), self.channel_id) is None:
            # Removed from the office while connected (and the notice has not arrived yet).
            await self.refuse()
            return
        try:
            await handler(self, content)
        except (FrameError, *unavailable.ERRORS):
            raise
        except Exception:
            log.exception("%s frame failed in channel %s", content["type"], self.channel_id)
            raise FrameError("internal", "Something went wrong on our side. Please try again.") from None

    async def on_instruction(self, content: dict) -> None:
        text = content.get("text")
        if not isinstance(text, str):
            raise FrameError("bad_frame", "An instruction needs text.")
        # One rule, no falsy shortcuts: absent means "no id"; anything present must be a real id
        # (0, false or [] read as "no id" would turn a client's resend into a second task).
        client_id = content.get("client_id", "")
        if "client_id" in content and not (isinstance(client_id, str) and 0 < len(client_id) <= MAX_CLIENT_ID_CHARS):
            raise FrameError("invalid", f"client_id is a non-empty string of at most {MAX_CLIENT_ID_CHARS} characters.")
        if not _storable(client_id):
            raise FrameError("bad_frame", "A client_id cannot contain NUL characters or unpaired surrogates.")
        try:
            await self._instruction(text, client_id)
        except FrameError as error:
            error.client_id = client_id
            raise

    async def _instruction(self, text: str, client_id: str) -> None:
        if not _storable(text):
            raise FrameError("bad_frame", "An instruction cannot contain NUL characters or unpaired surrogates.")
        if not text.strip():
            raise FrameError("empty", "An instruction needs some text.")
        if len(text.strip()) > posting.MAX_INSTRUCTION_CHARS:
            raise FrameError("too_long", f"An instruction can be at most {posting.MAX_INSTRUCTION_CHARS:,} characters.")
        if not posting.has_visible_text(text):
            raise FrameError("invalid", "An instruction needs some visible text.")
        try:
            # Not database_sync_to_async: routing (choose_responders) may call a model over the
            # network before the task is stored, and Channels' one shared database thread must
            # never wait on that, or every connected user would stall behind it. This runs on a
            # thread of its own; the reply itself is a background job, enqueued after commit.
            stored = await post_off_shared_thread(
                channel_id=self.channel_id,
                user=self.scope["user"],
                text=text,
                client_id=client_id,
                language=self.language,
                after=self.next_seq - 1,
            )
        except posting.InstructionRejected as rejected:
            raise FrameError(rejected.code, rejected.detail) from None
        # The sender's acknowledgement: its stored `message` and `task` events, read back from the
        # store, without waiting for the group (other tabs get them from the group; this one's
        # copies are then skipped by seq). A resend of a known client_id creates nothing, so this
        # sends only what this socket had not seen yet.
        await self.send_stored(stored)

    async def on_task_regenerate(self, content: dict) -> None:
        """Ask the last task's instruction again, as a new task: the old reply stays as it was."""
        turn = content.get("turn")
        if not _is_count(turn) or turn == 0:
            raise FrameError("bad_frame", "task.regenerate needs the turn of the reply to regenerate.")
        # Off Channels' shared database thread for the same reason as an instruction: routing.
        stored = await regenerate_off_shared_thread(
            channel_id=self.channel_id,
            user=self.scope["user"],
            turn=turn,
            language=self.language,
            after=self.next_seq - 1,
        )
        await self.send_stored(stored)

    async def on_session_new(self, content: dict) -> None:
        # The new `session` frame reaches every tab through the group, this one included.
        await database_off_shared_thread(start_new_conversation)(self.channel_id, self.scope["user"].pk)

    async def on_nudge_dismiss(self, content: dict) -> None:
        # "Keep going": nothing to store. The nudge is shown once per session whatever the answer.
        return None

    async def on_task_stop(self, content: dict) -> None:
        task_id = content.get("task")
        if not _is_count(task_id):
            raise FrameError("bad_frame", "task.stop needs the task's id.")
        stopped = await database_off_shared_thread(stop_task)(self.channel_id, task_id, self.scope["user"].pk)
        if stopped is None:
            raise FrameError("not_found", "There is no such task in this channel.")
        if not stopped:
            raise FrameError("not_yours", "Only the person who asked for this reply can stop it.")

    async def on_resync(self, content: dict) -> None:
        after = content.get("after")
        if not _is_count(after):
            raise FrameError("bad_frame", "resync needs `after`, the last seq the client has (0 for none).")
        if not self.resyncs.take():
            raise resync_refused("on this connection", self.resyncs.wait())
        person = person_resyncs.bucket(self.scope["user"].pk)
        # A reconnecting tab that has missed nothing costs the person nothing (each of their tabs
        # sends one when the network comes back).
        if after < self.next_seq - 1 and not person.take():
            raise resync_refused("from your connections", person.wait())
        replayed, more = await database_off_shared_thread(events.replay_after)(
            self.channel_id, after, RESYNC_MAX_EVENTS, RESYNC_MAX_BYTES
        )
        for frame in replayed:
            # Sent even if this socket sent it before: the client asked for everything after `after`.
            await self.send_json(frame)
            self.next_seq = max(self.next_seq, frame["seq"] + 1)
        if more:
            # More than one replay's worth behind: reloading the page is cheaper for both ends.
            await self.send_json(
                {
                    "type": "resync",
                    "truncated": True,
                    "after": replayed[-1]["seq"] if replayed else after,
                    "detail": "More was missed than one replay sends; reload the page to see it all.",
                }
            )

    HANDLERS = {
        "instruction": on_instruction,
        "session.new": on_session_new,
        "nudge.dismiss": on_nudge_dismiss,
        "task.stop": on_task_stop,
        "task.regenerate": on_task_regenerate,
        "resync": on_resync,
    }

    async def send_error(self, code: str, detail: str, client_id: str = "", **fields: Any) -> None:
        # An instruction's refusal names its client_id: the page gives that one back, not the last sent.
        await self.send_json(
            {"type": "error", "code": code, "detail": detail, **({"client_id": client_id} if client_id else {}), **fields}
        )

    # From the group ----------------------------------------------------------------------

    async def rejoined(self) -> None:
        if self.revoked:
            return
        await self.send_stored(
            await database_off_shared_thread(events.events_after)(self.channel_id, self.next_seq - 1, RESYNC_PAGE)
        )

    async def send_stored(self, frames: list[dict]) -> None:
        """Send stored events this socket has not sent yet, in order."""
        for frame in frames:
            if frame["seq"] >= self.next_seq:  # office_event may have sent it meanwhile
                await self.send_json(frame)
                self.next_seq = frame["seq"] + 1

    async def office_event(self, message: dict) -> None:
        if self.revoked:
            return  # closing: not one more delta to someone who is no longer a member
        frame = message["event"]
        seq = frame.get("seq")
        if seq is None:  # a delta: not stored, not numbered
            await self.send_json(frame)
            return
        if seq < self.next_seq:
            return  # already sent: in the session frame, a resync, or filled in below
        if seq > self.next_seq:
            # Events from different threads can reach the group out of order, and a full channel
            # drops some. Seqs commit in order, so the missing ones are stored by now: send them first.
            missing = await database_off_shared_thread(events.events_after)(
                self.channel_id, self.next_seq - 1, seq - self.next_seq
            )
            for earlier in missing:
                await self.send_json(earlier)
        await self.send_json(frame)
        self.next_seq = seq + 1


# Off the loop: each runs in a thread, through database_off_shared_thread or post_off_shared_thread.


@database_off_shared_thread
def member_office(user, channel_id: int) -> int | None:
    """The channel's office, if `user` may see the channel; None for anyone else."""
    if user is None or not user.is_authenticated:
        return None
    return Channel.objects.visible_to(user).filter(pk=channel_id).values_list("office_id", flat=True).first()


def is_office_member(user, office_id: int | None) -> bool:
    from .models import Membership

    if user is None or not user.is_authenticated or office_id is None:
        return False
    return Membership.objects.filter(user=user, office_id=office_id).exists()


def post_instruction(*, channel_id: int, user, text: str, client_id: str, language: str, after: int) -> list[dict]:
    """Store the instruction; return the channel's stored events after seq `after` (its acknowledgement)."""
    try:
        channel = Channel.objects.select_related("office", "coworker").get(pk=channel_id)
        # Counted only for a new instruction: a tab that reconnects and resends its
        # unacknowledged instructions is never refused for it.
        task = posting.post_instruction(
            channel=channel,
            text=text,
            client_id=client_id,
            language=language,
            person=user,
            admit=partial(check_instruction_rate, user.pk),  # how many may wait is posting's to check
        )
        return acknowledgement(events.events_after(channel_id, after, RESYNC_PAGE), task.pk)
    finally:
        # A thread of the loop's general pool, not a database thread: it must not keep a connection.
        connections.close_all()


def acknowledgement(frames: list[dict], task_id: int) -> list[dict]:
    """The stored events an instruction is acknowledged with: up to its task's first frame. What
    the worker stored after that meanwhile (on a busy machine it may have finished the task by
    the time this is read) reaches the socket through the group, in order with the task's
    deltas; sent here, it came ahead of them (a reply, then its stream, then a stray bubble)."""
    for index, frame in enumerate(frames):
        if frame.get("type") == "task" and frame.get("id") == task_id:
            return frames[: index + 1]
    return frames


def regenerate_reply(*, channel_id: int, user, turn: int, language: str, after: int) -> list[dict]:
    """Ask the last task's instruction again (office.regenerating); its acknowledgement, as for an instruction."""
    try:
        channel = Channel.objects.select_related("office", "coworker").get(pk=channel_id)
        try:
            regenerating.regenerate(
                channel=channel, turn=turn, language=language, person=user, admit=partial(check_instruction_rate, user.pk)
            )
        except posting.InstructionRejected as rejected:
            raise FrameError(rejected.code, rejected.detail) from None
        return events.events_after(channel_id, after, RESYNC_PAGE)
    finally:
        connections.close_all()


regenerate_off_shared_thread = sync_to_async(regenerate_reply, thread_sensitive=False)


def _within_rate(key: str, limit: int, doing: str, undone: str) -> None:
    """Per person, across all their tabs, channels and server processes (the cache is shared)."""
    verdict = ratelimit.hit(key, limit=limit, period=60)
    if not verdict.allowed:
        raise FrameError(
            "rate_limited",
            f"You are {doing} faster than {limit} a minute, so this one was not {undone}. "
            f"Try again in {ratelimit.wait_phrase(verdict.retry_after)}.",
        )


def resync_refused(where: str, wait: int) -> FrameError:
    """A resync refused for its pace: the frame says which it was and when to ask again, so the page
    asks again by itself (what it missed would otherwise stay missing until a reload)."""
    return FrameError(
        "rate_limited", f"Too many resyncs {where}; try again in {ratelimit.wait_phrase(wait)}.", refused="resync", retry_after=wait
    )


def check_instruction_rate(user_id: int) -> None:
    _within_rate(f"instructions:{user_id}", settings.INSTRUCTIONS_PER_MINUTE, "sending instructions", "sent")


post_off_shared_thread = sync_to_async(post_instruction, thread_sensitive=False)


def start_new_conversation(channel_id: int, user_id: int) -> None:
    # Each new conversation ends one and stores a session: counted per person like instructions,
    # so a script cannot fill the store with empty sessions.
    _within_rate(f"sessions:{user_id}", settings.NEW_SESSIONS_PER_MINUTE, "starting new conversations", "started")
    nudge.start_new_conversation(channel=Channel.objects.get(pk=channel_id))


def stop_task(channel_id: int, task_id: int, person: int) -> bool | None:
    """Stop the task for `person`: None if it is not one of this channel's (another channel's id is
    simply not found), False if someone else typed its instruction (in a shared channel one member
    must not stop another's replies); one nobody typed (a handoff, a meeting) anyone may stop."""
    task = Task.objects.select_related("session").filter(pk=task_id, session__channel_id=channel_id).first()
    if task is None:
        return None
    if author(task.origin) not in (None, person):
        return False
    pipeline.request_stop(task)
    return True


def _storable(text: str) -> bool:
    """JSON can spell a NUL and a lone surrogate; PostgreSQL refuses the first, UTF-8 cannot encode the second."""
    return not _UNSTORABLE.search(text)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
