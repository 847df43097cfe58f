"""The load tool against the production topology (`make prod`, paced replies): CI's small run,
20 clients x 5 instructions, fails on any loss or duplication; what the tool counts is what the
people would see, live and after a reload, and what the database holds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from benchmarks.office_client import ChannelSocket, sign_in

from .conftest import needs_services
from .topology import ROOT

CLIENTS, INSTRUCTIONS = 20, 5

STORED = """
import json
from sessions.models import Message, Task
tasks = Task.objects.filter(client_id__startswith="load-")
messages = Message.objects.filter(session__channel__office__slug__startswith="load-")
print(json.dumps({
    "tasks": tasks.count(),
    "done": tasks.filter(status="done").count(),
    "client_ids": tasks.values("client_id").distinct().count(),
    "user_messages": messages.filter(role="user").count(),
    "replies": messages.filter(role="assistant").count(),
}))
"""


async def stays_open_while_quiet(credentials, channel_id: int, seconds: float) -> bool:
    socket = ChannelSocket(credentials, channel_id)
    await socket.open()
    await asyncio.sleep(seconds)
    still_open = not socket.closed
    await socket.close()
    return still_open


@needs_services
def test_twenty_clients_times_five_instructions_lose_and_duplicate_nothing(start_topology, tmp_path):
    topology = start_topology(env={"MODEL_PROVIDER": "paced"})
    accounts = json.loads(topology.manage("prepare_load", "--clients", str(CLIENTS)))
    (tmp_path / "accounts.json").write_text(json.dumps(accounts))

    # A tab left open on a quiet channel stays connected: the channel layer's blocking wait
    # (5 s) must not outlast its Redis read timeout.
    first = accounts["accounts"][0]
    credentials = sign_in(topology.base_url, first["username"], accounts["password"])
    assert asyncio.run(stays_open_while_quiet(credentials, first["channel"], seconds=8))

    done = subprocess.run(
        [
            sys.executable, "-m", "benchmarks.load", "--url", topology.base_url,
            "--clients", str(CLIENTS), "--instructions", str(INSTRUCTIONS),
            "--accounts", str(tmp_path / "accounts.json"), "--results", str(tmp_path / "results"),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr + topology.log()[-5000:]
    assert "lost 0, duplicated 0, delivered twice live 0, incomplete replays 0" in done.stdout

    [written] = (tmp_path / "results").glob("load-20x5-*.json")
    report = json.loads(written.read_text())
    counts = report["counts"]
    sent = CLIENTS * INSTRUCTIONS
    assert (counts["sent"], counts["acknowledged"], counts["done"]) == (sent, sent, sent)
    assert (counts["failed"], counts["rejected"], counts["lost"], counts["duplicated"]) == (0, 0, 0, 0)
    assert counts["live_duplicates"] == counts["incomplete_replays"] == 0
    # Every instruction was shown back once, streamed before its end, and is stored once with one reply.
    for item in report["instructions_detail"]:
        assert item["ack"] is not None and item["first_delta"] is not None
        assert item["ack"] <= item["first_delta"] < item["done"]
        assert (item["stored_instructions"], item["stored_replies"]) == (1, 1)
    assert {measure: report["latency_ms"][measure]["n"] for measure in ("ack", "first_delta", "done")} == {
        "ack": sent, "first_delta": sent, "done": sent
    }

    # What a reload shows comes from the database: one task, one instruction and one reply each.
    stored = json.loads(topology.manage("shell", "--verbosity", "0", "-c", STORED))
    assert stored == {"tasks": sent, "done": sent, "client_ids": sent, "user_messages": sent, "replies": sent}
