"""A request body over MAX_REQUEST_BODY_BYTES is refused with 413 as it arrives, before the server
reads (and holds) it; a request still arriving after REQUEST_ARRIVAL_SECONDS gets 408 and its
connection is closed; ordinary forms and sockets still work. A real Daphne: the limits are in how
it reads."""

from __future__ import annotations

import socket
import time

import pytest
from django.db import connection

from benchmarks.office_client import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 1_000_000
ARRIVAL = 2  # seconds


@pytest.fixture
def server(bob):
    from tests.servers import daphne

    if connection.vendor == "sqlite":
        connection.close()  # the server's process reads the same file
    with daphne(MAX_REQUEST_BODY_BYTES=str(LIMIT), REQUEST_ARRIVAL_SECONDS=str(ARRIVAL)) as base_url:
        yield base_url


def post_head(base_url: str, headers: str) -> socket.socket:
    host, port = base_url.removeprefix("http://").split(":")
    raw = socket.create_connection((host, int(port)), timeout=5)
    raw.sendall(f"POST /accounts/login/ HTTP/1.1\r\nHost: {host}:{port}\r\n{headers}\r\n".encode())
    return raw


def answer_and_close(raw: socket.socket) -> bytes:
    """What the server answers, read until it closes the connection."""
    received = b""
    try:
        while chunk := raw.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(server):
    started = time.monotonic()
    raw = post_head(
        server,
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1500000000\r\nExpect: 100-continue\r\n",
    )
    raw.sendall(b"username=a&password=" + b"x" * 10_000)

    answer = answer_and_close(raw)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"100 Continue" not in answer, "no invitation to send the body after refusing it"
    assert b"larger than this server accepts" in answer
    assert time.monotonic() - started < 5


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server):
    raw = post_head(server, "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n")
    chunk = b"x" * 100_000
    sent = 0
    try:
        while sent < 50 * LIMIT:  # far more than the server takes
            raw.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass  # the server stopped reading and closed

    answer = answer_and_close(raw)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 50 * LIMIT, "the server went on reading"


def test_an_ordinary_form_still_signs_in(server):
    assert sign_in(server, "bob", "bob-password").session_cookie


def trickled(base_url: str, first: bytes, then: bytes) -> tuple[bytes, float]:
    """Send `first`, then `then` every 0.3 s, never finishing the request: what the server answered,
    and how long it took to close."""
    host, port = base_url.removeprefix("http://").split(":")
    raw = socket.create_connection((host, int(port)), timeout=10)
    started = time.monotonic()
    try:
        raw.sendall(first)
        for _ in range(ARRIVAL * 10):
            time.sleep(0.3)
            raw.sendall(then)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return answer_and_close(raw), time.monotonic() - started


def test_a_request_sent_a_byte_at_a_time_is_closed_at_the_deadline(server):
    answer, took = trickled(server, b"GET /accounts/login/ HTTP/1.1\r\nHost: x\r\n", b"X")  # a header never finished

    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert took < ARRIVAL * 10 * 0.3, "closed at the deadline, not when the client gave up"


def test_a_request_line_sent_a_byte_at_a_time_is_closed_at_the_deadline(server):
    """Before its line has ended a request has no request object yet: the connection's clock times it."""
    answer, took = trickled(server, b"GET /accounts/login/", b"x")  # the line never ended

    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert took < ARRIVAL * 10 * 0.3, "closed at the deadline, not when the client gave up"


def test_a_kept_alive_connection_may_wait_longer_than_the_deadline_between_requests(server):
    """The clock starts at a request's first byte, not when the connection opened or went quiet."""
    host, port = server.removeprefix("http://").split(":")
    raw = socket.create_connection((host, int(port)), timeout=10)
    request = f"GET /accounts/login/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    for _ in range(2):
        raw.sendall(request)
        answer = b""
        while b"</html>" not in answer:
            chunk = raw.recv(65536)
            assert chunk, f"closed: {answer[:200]!r}"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        time.sleep(ARRIVAL + 1)


def test_a_socket_open_past_the_deadline_stays_open(server, bob, office):
    """The deadline is for a request to arrive: a websocket's handshake is one, and the socket after it is not."""
    from websockets.sync.client import connect

    credentials = sign_in(server, "bob", "bob-password")
    url = server.replace("http://", "ws://") + f"/ws/offices/{office.pk}/"
    with connect(url, origin=server, additional_headers={"Cookie": f"sessionid={credentials.session_cookie}"}) as ws:
        ws.recv(timeout=10)
        time.sleep(ARRIVAL + 1)
        ws.ping().wait(timeout=5)  # answered: still open
