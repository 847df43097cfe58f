"""The office websocket (/ws/offices/<id>/): keeps a page's sidebar live. Authenticate, check
membership, join the office's group, send the `sidebar` frame, then forward `activity` (a reply
landed in a channel) and `presence` (a coworker started or stopped working) for channels this
person can see. Receives nothing from the client. No ORM on the event loop; imports no provider.
"""

from __future__ import annotations

import time
from typing import Any

from channels.db import database_sync_to_async

from . import events, presence
from .consumers import REFUSED, StaysJoined

# Which channels this person can see (and whether they are still a member) is read again when an
# unknown channel id shows up, and at the first event after this many seconds: a channel that
# becomes hidden, or a membership that ends, stops the flow within that time, without a query per
# event per socket.
VISIBLE_SECONDS = 15.0


class OfficeConsumer(StaysJoined):
    """One page's sidebar. Frames (server to client only):
    `sidebar` {working: [slug], channels: [{id, unread, seq}]} on connect;
    `activity` {channel, seq}: a reply in a channel counted as unread (never the person's own words);
    `presence` {coworker, status: "working" | "idle"}: only when that changes for this person.
    """

    office_id: int
    group: str | None = None
    refused = False

    async def connect(self) -> None:
        self.office_id = int(self.scope["url_route"]["kwargs"]["office_id"])
        self.user = self.scope.get("user")
        # An outsider, an anonymous visitor and an office that does not exist get the same answer.
        if not await database_sync_to_async(presence.is_member)(self.user, self.office_id):
            await self.close(code=REFUSED)
            return
        events.remember_server_loop()
        # Join before reading the snapshot: a notice committed after the read is then sure to arrive.
        await self.join(events.office_group(self.office_id))
        await self.accept()
        frame = await database_sync_to_async(presence.sidebar_frame)(user=self.user, office_id=self.office_id)
        self.visible = {channel["id"] for channel in frame["channels"]}
        self.hidden: set[int] = set()
        self.visible_at = time.monotonic()
        self.working = set(frame["working"])
        await self.send_json(frame)
        # Notices missed while out of the group cost a badge until the next reload; the dots catch up.
        self.start_rejoining()

    async def disconnect(self, code: int) -> None:
        await self.leave()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        # The sidebar only listens; whatever a client sends is ignored (the snapshot comes on connect).
        return None

    # From the group ----------------------------------------------------------------------

    async def office_activity(self, message: dict) -> None:
        if await self.can_see(message["channel"]):
            await self.send_json({"type": "activity", "channel": message["channel"], "seq": message["seq"]})

    async def office_presence(self, message: dict) -> None:
        # A task out of this person's sight cannot change what they see: only their channels count.
        if await self.can_see(message["channel"]):
            await self.send_presence_changes()

    async def rejoined(self) -> None:
        if not self.revoked:
            await self.send_presence_changes()

    async def send_presence_changes(self) -> None:
        working = await database_sync_to_async(presence.working_coworkers)(office_id=self.office_id, user=self.user)
        for slug in sorted(working ^ self.working):
            await self.send_json({"type": "presence", "coworker": slug, "status": "working" if slug in working else "idle"})
        self.working = working

    async def can_see(self, channel_id: int) -> bool:
        if self.refused or self.revoked:
            return False
        stale = time.monotonic() - self.visible_at > VISIBLE_SECONDS
        if stale or channel_id not in self.visible | self.hidden:
            if not await database_sync_to_async(presence.is_member)(self.user, self.office_id):
                # Removed from the office while connected.
                self.refused = True
                await self.close(code=REFUSED)
                return False
            self.visible = await database_sync_to_async(presence.visible_channel_ids)(self.user, self.office_id)
            self.visible_at, self.hidden = time.monotonic(), set()
        if channel_id not in self.visible:
            self.hidden.add(channel_id)
            return False
        return True
