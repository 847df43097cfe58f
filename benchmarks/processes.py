"""CPU and memory per process during a load run, read from /proc (Linux; elsewhere the tool
reports none): the office's processes (the supervisord that holds the listening socket of --url
and everything under it: Daphne, the reply worker, upkeep, beat), this database's PostgreSQL
backends, Redis, and the load tool itself.

The parsing and the arithmetic are pure functions of /proc's text (tested on plain strings); the
Sampler reads /proc on a thread of its own once a second, so a busy event loop does not skew it.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
LISTEN = "0A"  # the TCP state LISTEN in /proc/net/tcp


@dataclass(frozen=True)
class Stat:
    ppid: int
    cpu_ticks: int  # user + system time, in clock ticks


def parse_stat(text: str) -> Stat:
    """/proc/PID/stat. The command name (field 2) is in parentheses and may itself hold spaces or
    parentheses, so the fields are counted from its last ')'."""
    rest = text[text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return Stat(ppid=int(rest[1]), cpu_ticks=int(rest[11]) + int(rest[12]))


def parse_status(text: str) -> tuple[int, int]:
    """Resident memory (kB) and thread count from /proc/PID/status (0 for a field that is absent)."""
    rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    threads = re.search(r"^Threads:\s+(\d+)", text, re.MULTILINE)
    return (int(rss.group(1)) if rss else 0, int(threads.group(1)) if threads else 0)


def listening_inodes(tcp_table: str, port: int) -> set[str]:
    """Inodes of the sockets listening on `port`, from /proc/net/tcp or tcp6."""
    inodes = set()
    for line in tcp_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        local, state, inode = fields[1], fields[3], fields[9]
        if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
            inodes.add(inode)
    return inodes


def role_of(argv: list[str], *, database: str = "") -> str | None:
    """What a process is, from its command line; None for a process the report leaves out."""
    if not argv:
        return None
    joined = " ".join(argv)
    program = Path(argv[0].split()[0]).name
    if joined.startswith("postgres: "):
        # A backend names itself "postgres: [CLUSTER: ]USER DATABASE HOST(PORT) STATE" (Debian
        # puts its cluster, "15/main:", first).
        words = joined.split()[1:]
        if words and words[0].endswith(":"):
            words = words[1:]
        if database and len(words) > 1 and words[1] == database:
            return f"postgres ({database})"
        return None
    if program.startswith("redis-server"):
        return "redis (whole server)"
    if "daphne" in joined:
        return "web (daphne)"
    if "celery" in joined and " worker" in joined:
        return "upkeep (celery)" if "--queues=upkeep" in joined else "worker (celery)"
    if "celery" in joined and " beat" in joined:
        return "beat (celery)"
    if "supervisord" in joined:
        return "supervisord"
    return None


def descendants(roots: Iterable[int], parents: Mapping[int, int]) -> set[int]:
    """`roots` and every process below them, from a pid -> ppid map."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


@dataclass
class Sample:
    at: float  # seconds, monotonic
    cpu_ticks: int
    rss_kb: int
    threads: int


@dataclass
class Usage:
    """One process over the run."""

    pid: int
    role: str
    cpu_seconds: float
    cpu_percent_mean: float  # of one core, over the time it was watched
    cpu_percent_peak: float  # the busiest interval between two samples
    rss_mb_max: float
    threads_max: int


def usage(pid: int, role: str, samples: list[Sample], ticks: int = TICKS) -> Usage | None:
    """A process's CPU and memory from its samples (None with fewer than two)."""
    if len(samples) < 2:
        return None
    cpu = (samples[-1].cpu_ticks - samples[0].cpu_ticks) / ticks
    watched = samples[-1].at - samples[0].at
    peak = max(
        ((after.cpu_ticks - before.cpu_ticks) / ticks / (after.at - before.at) for before, after in zip(samples, samples[1:]) if after.at > before.at),
        default=0.0,
    )
    return Usage(
        pid=pid,
        role=role,
        cpu_seconds=round(cpu, 2),
        cpu_percent_mean=round(100 * cpu / watched, 1) if watched > 0 else 0.0,
        cpu_percent_peak=round(100 * peak, 1),
        rss_mb_max=round(max(s.rss_kb for s in samples) / 1024, 1),
        threads_max=max(s.threads for s in samples),
    )


def by_role(usages: Iterable[Usage]) -> list[dict]:
    """One row per role: how many processes, their CPU seconds and mean CPU % added up, and the
    largest resident memory of any one of them (memory per process, as an operator sizes it)."""
    rows: dict[str, dict] = {}
    for one in usages:
        row = rows.setdefault(
            one.role, {"role": one.role, "processes": 0, "cpu_seconds": 0.0, "cpu_percent_mean": 0.0,
                       "cpu_percent_peak": 0.0, "rss_mb_max_per_process": 0.0, "rss_mb_total": 0.0, "threads_max": 0}
        )
        row["processes"] += 1
        row["cpu_seconds"] = round(row["cpu_seconds"] + one.cpu_seconds, 2)
        row["cpu_percent_mean"] = round(row["cpu_percent_mean"] + one.cpu_percent_mean, 1)
        row["cpu_percent_peak"] = max(row["cpu_percent_peak"], one.cpu_percent_peak)
        row["rss_mb_max_per_process"] = max(row["rss_mb_max_per_process"], one.rss_mb_max)
        row["rss_mb_total"] = round(row["rss_mb_total"] + one.rss_mb_max, 1)
        row["threads_max"] = max(row["threads_max"], one.threads_max)
    return sorted(rows.values(), key=lambda row: -row["cpu_seconds"])


# Reading /proc ---------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""  # the process ended, or is not ours to read


def _argv(pid: int) -> list[str]:
    return [part for part in _read(PROC / str(pid) / "cmdline").split("\0") if part]


def _pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def holders_of(inodes: set[str]) -> set[int]:
    """Processes with a file descriptor on one of these sockets."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders = set()
    for pid in _pids():
        try:
            fds = list((PROC / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    holders.add(pid)
                    break
            except OSError:
                continue
    return holders


def server_roots(port: int) -> set[int]:
    """The processes listening on `port` (Daphne's, and the supervisord that opened the socket)."""
    inodes = listening_inodes(_read(PROC / "net" / "tcp"), port) | listening_inodes(_read(PROC / "net" / "tcp6"), port)
    return holders_of(inodes) if inodes else set()


@dataclass
class Sampler:
    """Samples the office's processes (under the holders of `port`), the PostgreSQL backends of
    `database`, Redis and this process, every `every` seconds until stopped."""

    port: int
    database: str = ""
    every: float = 1.0
    clock: Callable[[], float] = time.monotonic
    samples: dict[int, list[Sample]] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = PROC.joinpath("self", "stat").exists()
        self.roots = server_roots(self.port) if self.available else set()
        # Only the topology's own supervisord: a Daphne process alone (`make run`) is its own root.
        supervisors = {pid for pid in self.roots if role_of(_argv(pid)) == "supervisord"}
        self.roots = supervisors or self.roots

    def start(self) -> Sampler:
        if self.available:
            self._thread = threading.Thread(target=self._run, name="process-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> list[Usage]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sample_once()
        found = (usage(pid, self.roles[pid], samples) for pid, samples in self.samples.items())
        return sorted((one for one in found if one is not None), key=lambda one: (one.role, one.pid))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.every)

    def sample_once(self) -> None:
        if not self.available:
            return
        stats: dict[int, Stat] = {}
        for pid in _pids():
            text = _read(PROC / str(pid) / "stat")
            if text:
                stats[pid] = parse_stat(text)
        watched = descendants(self.roots, {pid: stat.ppid for pid, stat in stats.items()})
        now = self.clock()
        for pid, stat in stats.items():
            role = self.roles.get(pid)
            if role is None:
                if pid == os.getpid():
                    role = "load tool"
                elif pid in watched:
                    role = role_of(_argv(pid)) or "other (under supervisord)"
                else:
                    # Outside the topology only its database's backends and Redis count ("": not watched).
                    role = role_of(_argv(pid), database=self.database) or ""
                    if not role.startswith(("postgres", "redis")):
                        role = ""
                self.roles[pid] = role
            if not role:
                continue
            rss, threads = parse_status(_read(PROC / str(pid) / "status"))
            self.samples.setdefault(pid, []).append(Sample(at=now, cpu_ticks=stat.cpu_ticks, rss_kb=rss, threads=threads))
