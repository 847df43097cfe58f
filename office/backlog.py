"""What a websocket's client has been sent and has not read: the server holds it in memory.

A client that never reads what it is sent (and sends a frame now and then, so the server never
pings it and never finds it gone) makes the server keep every frame meant for it: 35 such
sockets of one person, asking for resyncs at the allowed pace, grew the server by 6 MB a
second. So each socket watches its own backlog and is closed once too much waits unread.

Twisted tells a registered streaming producer to pause when more than its write buffer (64 kB)
waits to be sent, and to resume once everything is written. A `Backlog` is such a producer that
produces nothing; while the client is behind, the socket asks it before each frame how much
still waits in the transport, and closes itself when that would pass MAX_UNREAD_BYTES (the
server yields to the reactor first, so a burst of frames is written as far as the client takes
it before it is judged). A page that reads, even slowly, drains it; one that does not is
closed, and the server drops what it held.

`WatchesBacklog`, the outermost middleware for websockets, puts each socket's Backlog in its
scope (`scope["backlog"]`), where the consumers find it. Daphne only: its websocket protocol is
the one argument bound into the ASGI `send` it gives the application
(`partial(server.handle_reply, protocol)`; inner middleware wraps that `send`), and the protocol
(autobahn's) registers producers on its transport. Anywhere else (tests' communicators, another
server) there is nothing to watch, and the scope says None. The HTTP connection a websocket was
upgraded from stays registered as the transport's producer (Daphne hands the transport over
without unregistering it): it no longer reads or writes that transport, so the Backlog takes
its place.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

# Beyond Twisted's own 64 kB: a whole resync (1 MB at most) and the events of a busy minute fit.
MAX_UNREAD_BYTES = 2_000_000


@implementer(IPushProducer)
class Backlog:
    """A socket's unsent frames, looked at while its client is behind."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.behind = False
        self.counted = 0  # bytes given to send since the client fell behind

    def pauseProducing(self) -> None:  # Twisted: more than its buffer waits to be sent
        self.behind = True

    def resumeProducing(self) -> None:  # Twisted: everything has been sent
        self.behind = False
        self.counted = 0

    def stopProducing(self) -> None:  # Twisted: the connection is gone
        self.behind = False

    def unsent(self) -> int:
        """Bytes waiting to be sent: Twisted's TCP transport says (under TLS, the one it wraps);
        another counts what it was given since the client fell behind."""
        inner = self.transport
        while not hasattr(inner, "dataBuffer") and getattr(inner, "transport", None) is not None:
            inner = inner.transport
        try:
            return len(inner.dataBuffer) - inner.offset + inner._tempDataLen
        except (AttributeError, TypeError):
            return self.counted

    def too_far_behind(self, size: int) -> bool:
        """Whether a frame of `size` bytes would leave more than MAX_UNREAD_BYTES unsent."""
        if not self.behind:
            return False
        self.counted += size
        return self.unsent() + size > MAX_UNREAD_BYTES


def watch(send: Any) -> Backlog | None:
    """A Backlog registered on the Daphne socket behind this ASGI `send`, or None."""
    protocol = send.args[0] if isinstance(send, partial) and len(send.args) == 1 else None
    transport = getattr(protocol, "transport", None)
    if transport is None or not hasattr(protocol, "registerProducer"):
        return None
    if getattr(transport, "producer", None) is not None:
        protocol.unregisterProducer()
    backlog = Backlog(transport)
    protocol.registerProducer(backlog, True)
    return backlog


class WatchesBacklog:
    """ASGI middleware, outermost for websockets: each socket's Backlog in `scope["backlog"]`."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        return await self.application({**scope, "backlog": watch(send)}, receive, send)
