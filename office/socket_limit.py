"""How many websockets one person may hold open in one server process.

A page holds two (its channel and the sidebar), so a person with a dozen tabs holds two dozen.
Without a limit one account could open hundreds: each is a consumer, two group memberships, a
re-join every 20 seconds and a database write when it closes, and 427 sockets of one person
slowed every other person's handshakes. Past the limit the handshake is refused (the page
backs off and tries again, 1 s, 2 s, 4 s … 30 s); the person's older sockets stay open.

Handshakes are limited too, a burst of SOCKET_OPENS_BURST and then one every
SOCKET_OPEN_SECONDS per person: 30 connect-and-close loops of one account (26 handshakes a
second, each sending a session frame) slowed every other person's connects from 0.02 s to 1 s.
A page opens two sockets per load and reconnects with backoff, far below it.

Counted per process, in memory: a count that has to survive the process is not needed, since
the sockets do not either.
"""

from __future__ import annotations

import logging
from collections import Counter

from channels.security.websocket import WebsocketDenier
from django.conf import settings

from .ratelimit import PeopleBuckets

log = logging.getLogger(__name__)


SOCKET_OPENS_BURST = 30
SOCKET_OPEN_SECONDS = 1.0
_opens = PeopleBuckets(SOCKET_OPENS_BURST, SOCKET_OPEN_SECONDS)  # each person's handshakes in this process


def forget_handshakes() -> None:
    """Every person starts with a full burst again (tests: each has its own people)."""
    _opens.clear()


def _may_open(person: int) -> bool:
    return _opens.take(person)


class SocketsPerPerson:
    """ASGI middleware for websockets, inside AuthMiddlewareStack (it reads scope["user"])."""

    def __init__(self, application) -> None:
        self.application = application
        self.open: Counter[int] = Counter()

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        person = user.pk if user is not None and user.is_authenticated else None
        if person is None:  # refused by the consumer, without holding anything
            return await self.application(scope, receive, send)
        limit = settings.SOCKETS_PER_PERSON
        if self.open[person] >= limit:
            log.warning("refused a websocket of user %s: %d open in this process already", person, limit)
            return await WebsocketDenier()(scope, receive, send)
        if not _may_open(person):
            log.warning("refused a websocket of user %s: connecting faster than %d a burst", person, SOCKET_OPENS_BURST)
            return await WebsocketDenier()(scope, receive, send)
        self.open[person] += 1
        try:
            return await self.application(scope, receive, send)
        finally:
            self.open[person] -= 1
            if not self.open[person]:
                del self.open[person]
