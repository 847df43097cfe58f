"""The largest request body the server takes: past it, 413 and the connection closed, unread.

Daphne (through Twisted) receives a request's whole body before the app sees the request, and
then queues all of it for the app at once: three anonymous 1.5 GB POSTs to the sign-in page took
3 GB of memory and froze every other person's pages for 12 to 30 seconds. Django's own limit
(DATA_UPLOAD_MAX_MEMORY_SIZE) is checked only after that, when the form is read. No page of the
office sends more than a form (instructions go over the websocket), so the server refuses a
body over settings.MAX_REQUEST_BODY_BYTES as it arrives: a declared length at once, a chunked
body as soon as it has passed the limit. Daphne has no setting for this; its request class is
replaced by one that counts (`limit_requests`, called when Daphne serves the app).

A request has settings.REQUEST_ARRIVAL_SECONDS to arrive whole, from its first byte to its last.
Twisted's idle timeout starts again with every byte, so a client sending a header a byte a second
held its connection for good: 3,000 of them held 3,000 of the server's file descriptors, and
enough of them would refuse every new visitor. The clock is the connection's, not the request
object's, because Twisted makes that object only once the request line has ended: a line trickled
a byte every 59 s (it may be 16 kB long) would otherwise never be timed at all. Past the deadline
the request gets 408 and the connection is closed. A kept-alive connection waiting with nothing
sent is Twisted's idle timeout's to close, as before.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

TOO_SLOW = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
TOO_LARGE_BODY = b"The request is larger than this server accepts.\n"
TOO_LARGE = (
    b"HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(TOO_LARGE_BODY)
) + TOO_LARGE_BODY


def limit_requests(max_bytes: int, arrival_seconds: float) -> None:
    """Make Daphne refuse request bodies over `max_bytes`, and requests still arriving after
    `arrival_seconds` (for every connection made after this)."""
    from daphne import http_protocol
    from twisted.web import http

    class LimitedRequest(http_protocol.WebRequest):
        refused = False
        received = 0

        def gotLength(self, length):
            if length is not None and length > max_bytes:
                self.refuse(length)
            super().gotLength(0 if self.refused else length)  # nothing to keep: no file

        def handleContentChunk(self, data):
            if self.refused:
                return
            self.received += len(data)
            if self.received > max_bytes:
                self.refuse(self.received)
                return
            super().handleContentChunk(data)

        def process(self):
            if not self.refused:
                return super().process()

        def refuse(self, size: int) -> None:
            """Answer 413 and close: the rest of the body is never read (Twisted stops reading)."""
            self.refused = True
            log.warning("refused a request body of %d bytes or more from %s", size, self.getClientAddress())
            # No "100 Continue" after the refusal (Twisted sends one for `Expect` once the length is read).
            self.requestHeaders.removeHeader(b"expect")
            self.channel.transport.write(TOO_LARGE)
            # The channel's own close: it unregisters itself as the transport's producer first,
            # without which a TLS connection stayed open and went on reading.
            self.channel.loseConnection()

    class TimedChannel(http.HTTPChannel):
        """An HTTP connection whose requests each have `arrival_seconds` from first byte to last."""

        deadline = None  # the running clock of the request arriving, if one is
        timed_out = False

        def dataReceived(self, data):
            # The first byte of a request, or of its line. Bytes read ahead while the app answers
            # the last request wait unparsed, and are timed when the channel reads them again.
            if self.timed_out:
                return  # closing (over TLS the close waits for the client's): nothing more is read
            # Blank lines before a request are not one (Twisted skips one; a browser may send it).
            if self.deadline is None and not self._handlingRequest and data.strip():
                self.deadline = self.callLater(arrival_seconds, self.too_slow)
            super().dataReceived(data)

        def allContentReceived(self):
            self.stop_clock()  # arrived; what the app then takes is not the client's doing
            super().allContentReceived()

        def connectionLost(self, reason):
            self.stop_clock()
            super().connectionLost(reason)

        def stop_clock(self) -> None:
            if self.deadline is not None:
                if self.deadline.active():
                    self.deadline.cancel()
                self.deadline = None

        def too_slow(self) -> None:
            """Still arriving at the deadline: 408, and the connection closed."""
            self.deadline, self.timed_out = None, True
            for request in self.requests:
                request.refused = True  # the part that did arrive is never served
            log.warning("closed a request still arriving after %s s from %s", arrival_seconds, self.transport.getPeer())
            self.transport.write(TOO_SLOW)
            # Twisted's own close for an idle client: it aborts the connection if the client has
            # not let it go after `abortTimeout` (over TLS a close waits for the client's).
            self.timeoutConnection()

    def timed_channel(factory) -> http._GenericHTTPChannelProtocol:
        # What Twisted's own `HTTPFactory.protocol` makes (the wrapper that can switch to
        # HTTP/2), around our channel instead of its plain one.
        return http._GenericHTTPChannelProtocol(TimedChannel())

    http_protocol.WebRequest = LimitedRequest  # HTTPFactory.buildProtocol reads the module's name
    http_protocol.HTTPFactory.protocol = timed_channel
