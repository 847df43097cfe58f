"""The largest request body the server takes: past it, 413 and the connection closed, unread.

Daphne (through Twisted) receives a request's whole body before the app sees the request, and
then queues all of it for the app at once: three anonymous 1.5 GB POSTs to the sign-in page took
3 GB of memory and froze every other person's pages for 12 to 30 seconds. Django's own limit
(DATA_UPLOAD_MAX_MEMORY_SIZE) is checked only after that, when the form is read. No page of the
office sends more than a form (instructions go over the websocket), so the server refuses a
body over settings.MAX_REQUEST_BODY_BYTES as it arrives: a declared length at once, a chunked
body as soon as it has passed the limit. Daphne has no setting for this; its request class is
replaced by one that counts (`limit_request_bodies`, called when Daphne serves the app).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

TOO_LARGE_BODY = b"The request is larger than this server accepts.\n"
TOO_LARGE = (
    b"HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(TOO_LARGE_BODY)
) + TOO_LARGE_BODY


def limit_request_bodies(max_bytes: int) -> None:
    """Make Daphne refuse request bodies over `max_bytes` (for every connection made after this)."""
    from daphne import http_protocol

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

    http_protocol.WebRequest = LimitedRequest  # HTTPFactory.buildProtocol reads the module's name
