"""What the fault tests (test_faults.py) break and how they watch: a TCP proxy that can be cut
(PostgreSQL going away), a private redis-server that can be restarted, a fake Messages API with an
outage switch, a tab that behaves like static/js/channel.js, and read-only looks at the store.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import websockets

from benchmarks.office_client import Credentials, sign_in
from tests.coworkers.fake_anthropic import Error, FakeAnthropic, Recorded, Reply, Step

from .topology import Topology, free_port, wait_for_port

# Services ------------------------------------------------------------------------------------------


class TcpProxy:
    """Forwards 127.0.0.1:port to 127.0.0.1:target. cut() drops every connection and refuses new
    ones (the server is gone, as far as clients can tell); restore() listens again on the same port."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True, name="proxy-accept").start()
        return self

    restore = start

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)

    stop = cut

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # cut while connecting
                    _close(client), _close(server)
                    return
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True, name="proxy-pump").start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(source), _close(sink)
            with self._lock:
                self._open -= {source, sink}


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@dataclass
class RedisServer:
    """A redis-server of the test's own on a free port, keeping nothing on disk: a restart
    forgets every queue, group and cache entry, as a production Redis without persistence does."""

    run_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.run_dir)],
            stdout=open(self.run_dir / "redis.log", "ab"), stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, 10, process=self.process)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)  # gone at once, as a crashed or rebooted host is
            self.process.wait(10)


class FlakyAnthropic(FakeAnthropic):
    """The fake Messages API with an outage switch: while `outage` is set, every request gets that
    error; otherwise the scripted steps play, then `usual` (a plain streamed reply) for the rest."""

    outage: Error | None = None
    usual: Reply = Reply("Back at work: here is the plan you asked for.", chunk_size=8)

    def _next(self, recorded: Recorded) -> Step | None:
        if self.outage is not None:
            self._record(recorded)
            return self.outage
        return super()._next(recorded) or self.usual


# The office ------------------------------------------------------------------------------------------

SETUP = """
import json
from django.contrib.auth.models import User
from django.core.management import call_command
from office.models import Channel
call_command("seed_demo", verbosity=0)
User.objects.create_user({username!r}, password={password!r})
call_command("add_member", {username!r}, "acme", verbosity=0)
print(json.dumps({{"main": Channel.objects.get(kind="main").pk,
                  "direct": Channel.objects.filter(kind="direct").order_by("pk").values_list("pk", flat=True)[0]}}))
"""


@dataclass(frozen=True)
class Office:
    username: str
    password: str
    main: int  # the main channel's id
    direct: int  # a 1:1 channel's id


def set_up_office(topology: Topology, username: str = "op", password: str = "op-pass-123") -> Office:
    """The demo office with a member of our own (the demo user exists only with DEBUG on)."""
    out = topology.manage("shell", "--verbosity", "0", "-c", SETUP.format(username=username, password=password))
    ids = json.loads(out.strip().splitlines()[-1])  # after what the commands say
    return Office(username=username, password=password, **ids)


def sign_in_when_ready(topology: Topology, office: Office) -> Credentials:
    """Sign in once the web process answers (supervisord listens before Daphne has started)."""

    def answers() -> bool:
        try:
            return get(topology.base_url + "/accounts/login/", timeout=30)[0] == 200
        except OSError:
            return False

    wait_until(answers, 90, what="the login page")
    return sign_in(topology.base_url, office.username, office.password)


def get(url: str, credentials: Credentials | None = None, timeout: float = 10) -> tuple[int, str]:
    """GET a page as the signed-in person: (status, body), errors included."""
    headers = {"Cookie": f"sessionid={credentials.session_cookie}"} if credentials else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_until(condition: Callable[[], Any], timeout: float, interval: float = 0.25, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:.0f} s: {what or condition}")
        time.sleep(interval)


# A tab ---------------------------------------------------------------------------------------------------


class Tab:
    """A channel page, as static/js/channel.js behaves on the wire: it shows each message once (by
    id), skips events it has seen (by seq), reconnects by itself with backoff, resyncs from the last
    seq it saw, and resends what the server never confirmed with the same client_id. The page
    reconnects after 1, 2, 4 … 30 s; this tab waits at most 2 s, to keep the tests short."""

    def __init__(self, credentials: Credentials, channel_id: int) -> None:
        self.credentials, self.channel_id = credentials, channel_id
        self.shown: dict[str, dict] = {}  # message id -> message, in the order they appeared
        self.tasks: dict[int, dict] = {}  # task id -> its latest `task` frame
        self.streamed: dict[int, str] = {}  # task id -> the text of its deltas
        self.errors: list[dict] = []
        self.pending: dict[str, str] = {}  # client_id -> text: sent, not yet shown as stored
        self.last_seq, self.know_seq = 0, False
        self.connections = 0  # how many times it connected (reconnects = connections - 1)
        self.socket: Any = None
        self._changed = asyncio.Condition()
        self._stopping = False
        self._runner: asyncio.Task | None = None

    async def open(self, timeout: float = 15) -> Tab:
        self._runner = asyncio.create_task(self._run())
        await self.wait_until(lambda: self.connected, timeout, "the first connection")
        return self

    async def close(self) -> None:
        self._stopping = True
        if self.socket is not None:
            await self.socket.close()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)

    @property
    def connected(self) -> bool:
        return self.socket is not None and self.know_seq

    async def send_instruction(self, text: str, client_id: str | None = None) -> str:
        """What the composer does: the instruction is pending until the stored message arrives.
        Sent now if the socket is open, else on the next connection (the page keeps it too)."""
        client_id = client_id or uuid.uuid4().hex
        self.pending[client_id] = text
        await self._send({"type": "instruction", "text": text, "client_id": client_id})
        return client_id

    async def wait_until(self, condition: Callable[[], Any], timeout: float, what: str = "") -> Any:
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(condition), timeout)
            except TimeoutError:
                raise TimeoutError(
                    f"the tab did not see {what or condition} within {timeout:.0f} s; it saw seq {self.last_seq}, "
                    f"{len(self.shown)} messages, tasks {self.tasks}, errors {self.errors}, {self.connections} connections"
                ) from None
        return condition()

    def messages(self, role: str | None = None) -> list[dict]:
        return [m for m in self.shown.values() if role is None or m["role"] == role]

    async def _send(self, frame: dict) -> bool:
        if self.socket is None:
            return False
        try:
            await self.socket.send(json.dumps(frame))
            return True
        except websockets.ConnectionClosed:
            return False

    async def _run(self) -> None:
        delay = 0.25
        while not self._stopping:
            try:
                async with websockets.connect(
                    self.credentials.websocket_url(self.channel_id), origin=self.credentials.origin,
                    additional_headers={"Cookie": f"sessionid={self.credentials.session_cookie}"},
                    open_timeout=5, max_size=None,
                ) as connection:
                    self.socket, delay = connection, 0.25
                    self.connections += 1
                    if self.know_seq:
                        await self._send({"type": "resync", "after": self.last_seq})
                    for client_id, text in list(self.pending.items()):
                        await self._send({"type": "instruction", "text": text, "client_id": client_id})
                    async for text in connection:
                        async with self._changed:
                            self._handle(json.loads(text))
                            self._changed.notify_all()
            except (OSError, TimeoutError, websockets.WebSocketException):
                pass
            async with self._changed:
                self.socket = None
                self._changed.notify_all()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _handle(self, frame: dict) -> None:
        kind, seq = frame["type"], frame.get("seq")
        if kind == "session":
            if not self.know_seq:
                self.last_seq, self.know_seq = frame["seq"], True
            for item in frame["messages"]:
                self._show(item["message"])
            return
        if kind == "delta":
            self.streamed[frame["task"]] = self.streamed.get(frame["task"], "") + frame["text"]
            return
        if kind == "error":
            self.errors.append(frame)
            return
        if isinstance(seq, int):
            if seq <= self.last_seq:
                return
            self.last_seq = seq
        if kind == "message":
            self._show(frame["message"])
        elif kind == "task":
            self.tasks[frame["id"]] = frame

    def _show(self, message: dict) -> None:
        if message["id"] in self.shown:
            return
        self.shown[message["id"]] = message
        if message["role"] == "user":
            # The page matches a stored instruction to its pending copy by text.
            for client_id, text in list(self.pending.items()):
                if text.strip() == message["content"].strip():
                    del self.pending[client_id]
                    break


# The store, read directly (never through the proxy) ----------------------------------------------------


class Store:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url

    def rows(self, sql: str, *params: Any) -> list[tuple]:
        with psycopg.connect(self.database_url, autocommit=True) as connection:
            return connection.execute(sql, params).fetchall()

    def tasks(self, channel_id: int) -> list[dict]:
        rows = self.rows(
            "SELECT t.id, t.turn, t.status, t.error, t.client_id, t.attempts FROM work_sessions_task t "
            "JOIN work_sessions_session s ON s.id = t.session_id WHERE s.channel_id = %s ORDER BY t.id",
            channel_id,
        )
        return [dict(zip(("id", "turn", "status", "error", "client_id", "attempts"), row)) for row in rows]

    def messages(self, channel_id: int) -> list[dict]:
        rows = self.rows(
            "SELECT m.id::text, m.session_id, m.turn, m.role, m.content FROM work_sessions_message m "
            "JOIN work_sessions_session s ON s.id = m.session_id WHERE s.channel_id = %s ORDER BY m.session_id, m.position",
            channel_id,
        )
        return [dict(zip(("id", "session", "turn", "role", "content"), row)) for row in rows]

    def half_written(self) -> list[str]:
        """Everything that would show a half-written change, across the whole database: a task
        without exactly one instruction, a message without its task, a gap in a channel's seqs."""
        problems = [
            f"task {task} has {count} user messages"
            for task, count in self.rows(
                "SELECT t.id, count(m.id) FROM work_sessions_task t LEFT JOIN work_sessions_message m "
                "ON m.session_id = t.session_id AND m.turn = t.turn AND m.role = 'user' GROUP BY t.id HAVING count(m.id) <> 1"
            )
        ]
        problems += [
            f"message {message} (turn {turn}) has no task"
            for message, turn in self.rows(
                "SELECT m.id::text, m.turn FROM work_sessions_message m LEFT JOIN work_sessions_task t "
                "ON t.session_id = m.session_id AND t.turn = m.turn WHERE t.id IS NULL"
            )
        ]
        problems += [
            f"channel {channel}: {count} events up to seq {last}, max stored {top}"
            for channel, last, count, top in self.rows(
                "SELECT c.id, c.last_event_seq, count(e.id), coalesce(max(e.seq), 0) FROM office_channel c "
                "LEFT JOIN office_channelevent e ON e.channel_id = c.id GROUP BY c.id, c.last_event_seq "
                "HAVING count(e.id) <> c.last_event_seq OR coalesce(max(e.seq), 0) <> c.last_event_seq"
            )
        ]
        return problems
