"""A client that never reads what it is sent cannot make the server hold it: once more than
office.backlog.MAX_UNREAD_BYTES waits unread, the server closes the socket and drops it. One that
reads is never closed for it, however much it is sent at once.

A real Daphne (the backlog is Twisted's write buffer, which only a running server has) and a raw
websocket whose side never reads, with a small receive buffer so that what it does not take
stays on the server."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time

import pytest
from django.db import connection

from office.backlog import MAX_UNREAD_BYTES
from office.models import Channel, ChannelEvent

pytestmark = pytest.mark.django_db(transaction=True)

EVENT_BYTES = 300_000  # a long highlighted code block's stored HTML is about this size


def fill_with_large_events(channel: Channel, count: int) -> None:
    ChannelEvent.objects.bulk_create(
        ChannelEvent(channel=channel, seq=seq, type="task", payload={"id": seq, "status": "done", "html": "x" * EVENT_BYTES})
        for seq in range(1, count + 1)
    )
    Channel.objects.filter(pk=channel.pk).update(last_event_seq=count)


def open_raw_socket(base_url: str, path: str, session_cookie: str) -> socket.socket:
    """A websocket handshake by hand, on a socket that takes at most a few kB at a time."""
    host, port = base_url.removeprefix("http://").split(":")
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays small
    raw.connect((host, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    raw.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {base_url}\r\n"
            f"Cookie: sessionid={session_cookie}\r\n\r\n"
        ).encode()
    )
    answer = raw.recv(1024)
    assert answer.startswith(b"HTTP/1.1 101"), answer[:200]
    return raw


def send_text(raw: socket.socket, text: str) -> None:
    """One masked text frame, as a browser sends it."""
    payload, mask = text.encode(), os.urandom(4)
    header = bytes([0x81]) + (bytes([0x80 | len(payload)]) if len(payload) < 126 else bytes([0x80 | 126]) + struct.pack("!H", len(payload)))
    raw.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def test_a_socket_that_never_reads_is_closed_once_its_backlog_passes_the_limit(bob, direct_channel, cookie):
    from tests.servers import daphne

    fill_with_large_events(direct_channel, 10)  # each resync replays 1 MB of them
    if connection.vendor == "sqlite":
        connection.close()  # the server's process reads the same file
    asked, dropped = 0, False
    with daphne() as base_url:
        raw = open_raw_socket(base_url, f"/ws/channels/{direct_channel.pk}/", cookie(bob))
        # Resyncs at the pace a socket is allowed (3 at once, then one every 5 s), never reading:
        # the kernel's buffers take the first few MB, then the server would hold the rest.
        deadline = time.monotonic() + 60
        while not dropped and time.monotonic() < deadline:
            try:
                send_text(raw, json.dumps({"type": "resync", "after": 0}))
                asked += 1
                time.sleep(0.3 if asked < 3 else 5.2)
            except (ConnectionResetError, BrokenPipeError):
                dropped = True
        raw.close()

    assert dropped, f"after {asked} resyncs of 1 MB that were never read, the server still held the socket open"
    assert asked <= 3 + (MAX_UNREAD_BYTES + 4_200_000) // 900_000, "the kernel's buffers and the limit, no more"


def test_a_socket_that_reads_is_kept_open_through_bursts_larger_than_the_limit(bob, direct_channel, cookie):
    from websockets.sync.client import connect

    from tests.servers import daphne

    fill_with_large_events(direct_channel, 10)
    if connection.vendor == "sqlite":
        connection.close()
    with daphne() as base_url:
        url = base_url.replace("http://", "ws://") + f"/ws/channels/{direct_channel.pk}/"
        with connect(url, origin=base_url, additional_headers={"Cookie": f"sessionid={cookie(bob)}"}, max_size=None) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "session"
            for _ in range(3):  # 3 MB asked for at once, more than the limit
                ws.send(json.dumps({"type": "resync", "after": 0}))
            frames = [json.loads(ws.recv(timeout=10)) for _ in range(3 * 4)]  # 3 events and a notice each

            ws.send(json.dumps({"type": "ping"}))
            answer = json.loads(ws.recv(timeout=10))

    assert [f["type"] for f in frames].count("resync") == 3 and [f.get("seq") for f in frames[:3]] == [1, 2, 3]
    assert answer["code"] == "unknown_type", "the socket is still open and answers"
