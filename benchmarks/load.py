"""The load tool: N clients, each signed in as its own person in its own office, send M instructions
over the channel websocket against a running office (`make prod`), and the tool reports how long
acknowledgement, first delta and done took, and whether anything was lost or duplicated.

    .venv/bin/python -m benchmarks.load --url http://127.0.0.1:8000 --clients 100 --instructions 10

Accounts come from `manage.py prepare_load` (run here with this environment's DATABASE_URL, or
beforehand with --accounts FILE). Exit status: 0 when nothing was lost, duplicated, failed or
refused; 1 otherwise; 2 when the run could not start. The accounting is in benchmarks.load_stats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import time
import urllib.parse
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import websockets

from benchmarks.load_stats import (
    FINISHED,
    Instruction,
    Report,
    build_report,
    count_stored,
    follow,
    is_user_message,
    live_duplicates,
    render,
    stored_events,
)
from benchmarks.office_client import ChannelSocket, Credentials, SignInFailed, sign_in
from benchmarks.processes import Sampler, by_role

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


class TimedFrames(list):
    """A socket's `frames` that also notes when each frame arrived (the socket only appends)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []

    def append(self, frame: dict[str, Any]) -> None:
        self.arrived.append(time.perf_counter())
        super().append(frame)


def timed_socket(credentials: Credentials, channel_id: int) -> ChannelSocket:
    socket = ChannelSocket(credentials, channel_id)
    socket.frames = TimedFrames()
    return socket


@dataclass
class LoadPlan:
    url: str
    clients: int
    instructions: int
    ack_timeout: float = 30.0
    done_timeout: float = 300.0
    # Each sign-in costs the server a password hash (about half a second of CPU): two at a time.
    sign_in_concurrency: int = 2
    # The clients' first instructions are spread evenly over this many seconds, as people arriving;
    # 0 sends them all in the same instant (a burst no office sees from people).
    ramp: float = 10.0
    sessions_file: Path | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])


# Accounts -------------------------------------------------------------------------------


def prepare_accounts(clients: int, prefix: str) -> dict[str, Any]:
    """Run `manage.py prepare_load` with this environment (its DATABASE_URL is the office's)."""
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit(
            "prepare the accounts in the office's database: set DATABASE_URL (as the server has it), "
            "or pass --accounts FILE made by `manage.py prepare_load --clients N > FILE`"
        )
    done = subprocess.run(
        [sys.executable, "manage.py", "prepare_load", "--clients", str(clients), "--prefix", prefix],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    if done.returncode:
        raise SystemExit(f"manage.py prepare_load failed:\n{done.stderr}")
    return json.loads(done.stdout)


async def sign_in_all(url: str, accounts: dict[str, Any], clients: int, concurrency: int) -> list[Credentials]:
    """Sign every client in through the login form, a few at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(account: dict) -> Credentials:
        async with gate:
            try:
                return await asyncio.to_thread(sign_in, url, account["username"], accounts["password"], timeout=120)
            except (SignInFailed, OSError) as error:
                raise SystemExit(f"{account['username']} could not sign in at {url}: {error}") from None

    return list(await asyncio.gather(*(one(account) for account in accounts["accounts"][:clients])))


async def signed_in(plan: LoadPlan, accounts: dict[str, Any]) -> list[Credentials]:
    """Every client's session cookie: from --sessions FILE when it holds this many for this
    office (a rerun then skips the sign-ins, minutes of password hashing at 500 clients), else
    through the login form, saved to that file for the next run."""
    usernames = [account["username"] for account in accounts["accounts"][: plan.clients]]
    saved = load_sessions(plan.sessions_file, plan.url, usernames)
    if saved is not None:
        say(f"{plan.clients} clients signed in already ({plan.sessions_file})")
        return saved
    say(f"signing in {plan.clients} clients…")
    credentials = await sign_in_all(plan.url, accounts, plan.clients, plan.sign_in_concurrency)
    if plan.sessions_file is not None:
        plan.sessions_file.write_text(json.dumps(
            {"url": plan.url, "sessions": {name: c.session_cookie for name, c in zip(usernames, credentials)}}
        ))
    return credentials


def load_sessions(path: Path | None, url: str, usernames: list[str]) -> list[Credentials] | None:
    if path is None or not path.exists():
        return None
    saved = json.loads(path.read_text())
    cookies = saved.get("sessions", {})
    if saved.get("url") != url or any(name not in cookies for name in usernames):
        return None
    return [Credentials(base_url=url, session_cookie=cookies[name]) for name in usernames]


# One client ----------------------------------------------------------------------------


async def drive(socket: ChannelSocket, client: int, plan: LoadPlan) -> list[tuple[Instruction, int, float]]:
    """Send the client's instructions one after another, each once the previous one has finished
    (or timed out). Returns each with the index of its first frame and the time it was sent."""
    sent_items: list[tuple[Instruction, int, float]] = []
    await asyncio.sleep(plan.ramp * (client - 1) / plan.clients)
    for index in range(1, plan.instructions + 1):
        item = Instruction(
            client=client,
            index=index,
            client_id=f"load-{plan.run_id}-{client}-{index}",
            text=f"Load run {plan.run_id}, client {client}, instruction {index}: outline the launch plan.",
        )
        start, sent = len(socket.frames), time.perf_counter()
        sent_items.append((item, start, sent))
        if socket.closed:
            continue  # recorded, never acknowledged: lost
        try:
            await socket.send({"type": "instruction", "text": item.text, "client_id": item.client_id})
            answer = await socket.wait_for(
                lambda f: is_user_message(f, item.text) or f.get("type") == "error", timeout=plan.ack_timeout, start=start
            )
            if answer["type"] == "message":
                turn = answer["message"].get("turn")
                await socket.wait_for(
                    lambda f: f.get("type") == "task" and f.get("turn") == turn and f.get("status") in FINISHED,
                    timeout=plan.done_timeout,
                    start=start,
                )
        except (TimeoutError, ConnectionError, OSError):
            pass  # follow() below records what did arrive; the rest counts as lost
    return sent_items


async def open_socket(credentials: Credentials, channel_id: int) -> tuple[ChannelSocket, int]:
    """An open socket, and the seq its session frame says the channel was at."""
    socket = timed_socket(credentials, channel_id)
    return socket, (await socket.open(timeout=60))["seq"]


async def open_all(credentials: list[Credentials], channels: list[int], *, at_once: int = 8, attempts: int = 3):
    """Open every client's socket, a few at a time, as tabs coming back one by one would: Daphne
    drops a handshake its application has not accepted within 5 s, and a connect is several reads
    of the database. A refused handshake is tried again; returns the sockets and how many retries."""
    gate = asyncio.Semaphore(at_once)
    retries = 0

    async def one(c: Credentials, channel: int) -> tuple[ChannelSocket, int]:
        nonlocal retries
        for attempt in range(1, attempts + 1):
            async with gate:
                try:
                    return await open_socket(c, channel)
                except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.InvalidMessage) as error:
                    if attempt == attempts:
                        raise SystemExit(
                            f"could not open channel {channel}'s socket: {error} (signed in with an old --sessions file? delete it)"
                        ) from None
                    retries += 1
            await asyncio.sleep(attempt)
        raise AssertionError("unreachable")

    opened = await asyncio.gather(*(one(c, channel) for c, channel in zip(credentials, channels)))
    return opened, retries


def outcome(socket: ChannelSocket, sent_items: list[tuple[Instruction, int, float]]) -> tuple[list[Instruction], int]:
    """Each instruction read from the frames that came between it and the next; and how many
    messages the socket was sent twice."""
    frames, arrived = list(socket.frames), list(socket.frames.arrived)
    items = []
    for position, (item, start, sent) in enumerate(sent_items):
        end = sent_items[position + 1][1] if position + 1 < len(sent_items) else len(frames)
        items.append(follow(item, frames[start:end], arrived[start:end], sent))
    return items, live_duplicates(frames[1:])  # frames[0] is the session frame


async def check_stored(credentials: Credentials, channel_id: int, after: int, items: list[Instruction]) -> bool:
    """The final state, as a reloaded tab sees it: a new socket's session frame, then a resync of
    everything stored after `after` (where this client started). Sets each item's stored counts;
    False if the replay left out some stored event."""
    try:
        replay, last = await open_socket(credentials, channel_id)
    except (OSError, TimeoutError, websockets.InvalidHandshake):
        return False
    try:
        if last <= after:
            return True
        start = len(replay.frames)
        await replay.send({"type": "resync", "after": after})
        try:
            await replay.wait_for(lambda f: f.get("seq") == last and f.get("type") != "session", timeout=60, start=start)
        except (TimeoutError, ConnectionError):
            pass
        events, missing = stored_events(replay.frames[start:], after=after, through=last)
        count_stored(items, events)
        return not missing
    finally:
        await replay.close()


# The run -------------------------------------------------------------------------------


async def run(plan: LoadPlan, accounts: dict[str, Any]) -> tuple[Report, list[Instruction]]:
    if len(accounts["accounts"]) < plan.clients:
        raise SystemExit(f"{plan.clients} clients need {plan.clients} accounts; there are {len(accounts['accounts'])}")
    channels = [account["channel"] for account in accounts["accounts"][: plan.clients]]
    credentials = await signed_in(plan, accounts)
    # Every socket is open before the first instruction, so connecting is not measured.
    opened, open_retries = await open_all(credentials, channels)
    say(f"{plan.clients} sockets open; each sends {plan.instructions} instructions, the next once the previous is done…")
    started_at, cpu_before = datetime.now(timezone.utc), resource.getrusage(resource.RUSAGE_SELF)
    load_samples: list[float] = []
    sampling = asyncio.create_task(sample_load(load_samples))
    processes = watch_processes(plan.url)
    began = time.perf_counter()
    sent = await asyncio.gather(*(drive(socket, n + 1, plan) for n, (socket, _) in enumerate(opened)))
    seconds = time.perf_counter() - began
    sampling.cancel()
    usages = processes.stop()
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.sleep(1.0)  # time for a late duplicate to show up before the sockets close
    dropped = sum(socket.closed for socket, _ in opened)  # closed by the server, not by us
    await asyncio.gather(*(socket.close() for socket, _ in opened))
    outcomes = [outcome(socket, sent_items) for (socket, _), sent_items in zip(opened, sent)]

    say("checking the stored state (a new socket and a resync per client)…")
    gate = asyncio.Semaphore(8)

    async def check(c: Credentials, channel: int, first_seq: int, items: list[Instruction]) -> bool:
        async with gate:
            return await check_stored(c, channel, first_seq, items)

    complete = await asyncio.gather(
        *(check(c, channel, first_seq, items)
          for c, channel, (_, first_seq), (items, _) in zip(credentials, channels, opened, outcomes))
    )
    items = [item for client_items, _ in outcomes for item in client_items]
    conditions = {
        "url": plan.url,
        "run_id": plan.run_id,
        "started_at": started_at.isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        # The machine's 1-minute load average, sampled every few seconds during the run: the
        # office, this tool and whatever else runs there.
        "load_average": {
            "mean": round(sum(load_samples) / len(load_samples), 2) if load_samples else None,
            "max": round(max(load_samples), 2) if load_samples else None,
        },
        "connections_dropped_by_server": dropped,
        "socket_open_retries": open_retries,
        "tool_cpu_seconds": round(
            cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 1
        ),
        "ramp_s": plan.ramp,
        "ack_timeout_s": plan.ack_timeout,
        "done_timeout_s": plan.done_timeout,
        "python": platform.python_version(),
    }
    report = build_report(
        items,
        clients=plan.clients,
        instructions=plan.instructions,
        seconds=seconds,
        live_duplicates=sum(duplicates for _, duplicates in outcomes),
        incomplete_replays=sum(not ok for ok in complete),
        conditions=conditions,
        processes={"by_role": by_role(usages), "each": [asdict(one) for one in usages]},
    )
    return report, items


def watch_processes(url: str) -> Sampler:
    """CPU and memory of the office serving `url` (when it runs on this machine), its database's
    PostgreSQL backends (this environment's DATABASE_URL), Redis, and this tool, from now on."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    database = urllib.parse.urlsplit(os.environ.get("DATABASE_URL", "")).path.lstrip("/")
    sampler = Sampler(port=port, database=database).start()
    if sampler.available and not sampler.roots:
        say(f"no process of this machine listens on port {port}: only this tool's CPU and memory are reported")
    return sampler


async def sample_load(samples: list[float], every: float = 5.0) -> None:
    while True:
        samples.append(os.getloadavg()[0])
        await asyncio.sleep(every)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def write_results(report: Report, items: list[Instruction], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = directory / f"load-{report.clients}x{report.instructions}-{stamp}.json"
    records = [{k: v for k, v in asdict(item).items() if k not in {"streamed", "deltas", "early", "reply", "text"}} for item in items]
    path.write_text(json.dumps({**report.as_json(), "instructions_detail": records}, indent=1))
    return path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.load",
        description=(
            "Open N websocket clients against a running office, each sending M instructions one after another "
            "(the next once the previous is done), and report acknowledgement, first-delta and done latencies "
            "(p50/p95/max) and any lost or duplicated messages. Each client is its own person in its own office, "
            "so the per-person instruction rate limit (INSTRUCTIONS_PER_MINUTE, default 30) is not reached while "
            "M stays below it. Start the server with MODEL_PROVIDER=paced so replies stream at a fixed pace."
        ),
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the office (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=100, help="websocket clients, one account each (default: %(default)s)")
    parser.add_argument("--instructions", type=int, default=10, help="instructions per client (default: %(default)s)")
    parser.add_argument("--accounts", type=Path, help="JSON from `manage.py prepare_load`; without it, prepare_load is run here")
    parser.add_argument("--prefix", default="load", help="account names for prepare_load (default: %(default)s)")
    parser.add_argument(
        "--ramp", type=float, default=10.0,
        help="seconds over which the clients' first instructions are spread; 0 sends all at once (default: %(default)s)",
    )
    parser.add_argument(
        "--sessions", type=Path,
        help="keep the clients' session cookies in this file and reuse them on the next run (skips the sign-ins)",
    )
    parser.add_argument("--ack-timeout", type=float, default=30.0, help="seconds to wait for an acknowledgement (default: %(default)s)")
    parser.add_argument("--done-timeout", type=float, default=300.0, help="seconds to wait for a task to finish (default: %(default)s)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the JSON goes (default: benchmarks/results)")
    parser.add_argument("--note", default="", help="conditions worth keeping with the figures (topology, other load)")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.instructions < 1:
        parser.error("--clients and --instructions must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    accounts = json.loads(args.accounts.read_text()) if args.accounts else prepare_accounts(args.clients, args.prefix)
    plan = LoadPlan(
        url=args.url, clients=args.clients, instructions=args.instructions,
        ack_timeout=args.ack_timeout, done_timeout=args.done_timeout, ramp=args.ramp, sessions_file=args.sessions,
    )
    report, items = asyncio.run(run(plan, accounts))
    if args.note:
        report.conditions["note"] = args.note
    path = write_results(report, items, args.results)
    print(render(report))
    print(f"written to {path}")
    return 0 if report.counts.ok else 1


if __name__ == "__main__":
    sys.exit(main())
