"""`make run` stopped with SIGTERM while replies are queued and one is streaming: the process is
gone within seconds, the reply in hand finishes (or is left to be resumed), nothing is marked
failed, no traceback is logged, and after a restart the queued ones are answered.

A real Daphne subprocess on the embedded default (SQLite, in-memory layer, the in-process pool),
with the paced provider, talked to over a real websocket as a signed-in browser would."""

from __future__ import annotations

import asyncio
import os
import signal
import socket as sockets
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from benchmarks.office_client import ChannelSocket, sign_in

ROOT = Path(__file__).resolve().parents[2]
DAPHNE = Path(sys.executable).with_name("daphne")
# 2,000 characters in 20-character chunks every 30 ms: about 3 s of streaming a reply.
PACE = {"MODEL_PROVIDER": "paced", "PACED_REPLY_CHARS": "2000", "PACED_CHUNK_MS": "30"}
EXIT_WITHIN = 15  # seconds: the reply in hand's grace, and then some


def free_port() -> int:
    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def embedded(tmp_path):
    """The environment `make run` has (none of the production variables), on a database of its own."""
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL", "BACKGROUND_WORK", "SECRET_KEY", "DEBUG", "HTTPS"}}
    env.update(PACE, SQLITE_PATH=str(tmp_path / "office.sqlite3"), LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
    for command in (["migrate", "--verbosity", "0"], ["seed_demo"]):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
    return env


class Server:
    def __init__(self, env: dict, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.process = subprocess.Popen(
            [str(DAPHNE), "-b", "127.0.0.1", "-p", str(self.port), "office.asgi:application"],
            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                sockets.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.process.kill()
        raise AssertionError("daphne never listened:\n" + log.read_text())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self, timeout: float) -> float:
        """SIGTERM; the seconds it took to exit (it is killed after `timeout`, and the test fails)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"still running {timeout} s after SIGTERM:\n" + self.log.read_text()[-3000:]) from None
        return time.monotonic() - started


def tasks(env: dict) -> list[tuple[int, str, str]]:
    with sqlite3.connect(env["SQLITE_PATH"]) as db:
        return db.execute("SELECT turn, status, error FROM work_sessions_task ORDER BY turn").fetchall()


def replies(env: dict) -> list[int]:
    """The turns that have an assistant reply stored (more than one would be a reply stored twice)."""
    with sqlite3.connect(env["SQLITE_PATH"]) as db:
        return [row[0] for row in db.execute("SELECT turn FROM work_sessions_message WHERE role = 'assistant' AND content != '' ORDER BY turn")]


def direct_channel(env: dict) -> int:
    with sqlite3.connect(env["SQLITE_PATH"]) as db:
        return db.execute("SELECT id FROM office_channel WHERE kind = 'direct' ORDER BY id LIMIT 1").fetchone()[0]


async def send_instructions(url: str, channel: int, texts: list[str], *, wait_for_delta: bool) -> None:
    socket = ChannelSocket(sign_in(url, "demo", "demo"), channel)
    await socket.open()
    for text in texts:
        await socket.send({"type": "instruction", "text": text, "client_id": uuid.uuid4().hex})
    # Acknowledged: the last one is stored.
    await socket.wait_for(lambda frame: frame["type"] == "message" and frame["message"]["content"] == texts[-1], timeout=10)
    if wait_for_delta:
        await socket.wait_for(lambda frame: frame["type"] == "delta", timeout=20)
    await socket.close()


@pytest.mark.parametrize(
    "grace, in_hand",
    [("10", "done"), ("1", "running")],
    ids=["the reply in hand finishes within the grace", "the reply in hand is left to resume"],
)
def test_it_stops_within_seconds_on_sigterm_and_fails_nothing_then_answers_the_queued_after_a_restart(embedded, tmp_path, grace, in_hand):
    channel = direct_channel(embedded)
    server = Server({**embedded, "SHUTDOWN_GRACE_SECONDS": grace}, tmp_path / "first.log")
    asyncio.run(send_instructions(server.url, channel, [f"Instruction {n}" for n in range(1, 5)], wait_for_delta=True))
    time.sleep(0.5)  # mid-stream

    took = server.stop(timeout=EXIT_WITHIN)

    output = (tmp_path / "first.log").read_text()
    assert took < EXIT_WITHIN
    assert [row for row in tasks(embedded) if row[1] == "failed"] == []
    assert "Traceback" not in output and " ERROR " not in output, output[-3000:]
    statuses = [status for _, status, _ in tasks(embedded)]
    assert statuses[0] == in_hand, statuses
    assert set(statuses[1:]) <= {"queued"}, statuses
    assert replies(embedded) == ([1] if in_hand == "done" else []), "a reply cut short stores nothing"

    # Restarted: the next instruction to the same conversation sends the queued ones (and one left
    # running, whose lease it gave up) again.
    again = Server(embedded, tmp_path / "second.log")
    try:
        asyncio.run(send_instructions(again.url, channel, ["Instruction 5"], wait_for_delta=False))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and {status for _, status, _ in tasks(embedded)} - {"done"}:
            time.sleep(0.5)
    finally:
        again.stop(timeout=EXIT_WITHIN)
    done = tasks(embedded)
    assert [status for _, status, _ in done] == ["done"] * len(done), done
    assert len(done) >= 5
    assert replies(embedded) == list(range(1, len(done) + 1)), "every task answered once, none twice"
