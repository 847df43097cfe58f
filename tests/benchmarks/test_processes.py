"""The load tool's CPU and memory per process (benchmarks.processes): /proc's text read right,
the office's processes told apart, and the figures an operator sizes a machine by."""

from __future__ import annotations

import os

import pytest

from benchmarks.processes import (
    Sample,
    Sampler,
    by_role,
    descendants,
    listening_inodes,
    parse_stat,
    parse_status,
    role_of,
    usage,
)

# A Daphne process's stat line, its name holding a space and a parenthesis (names are free text).
STAT = "4242 (daphne (web) 1) S 4200 4242 4200 0 -1 4194560 9000 0 0 0 350 150 0 0 20 0 3 0 1000 300000000 20000"

STATUS = """Name:\tdaphne
State:\tS (sleeping)
VmPeak:\t  400000 kB
VmRSS:\t  102400 kB
Threads:\t7
"""

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 51299 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51300 1 0000000000000000 100 0 0 10 0
"""


def test_a_stat_line_gives_parent_and_cpu_even_when_the_name_has_spaces_and_parentheses():
    stat = parse_stat(STAT)
    assert stat.ppid == 4200
    assert stat.cpu_ticks == 350 + 150  # user + system


def test_status_gives_resident_memory_and_threads():
    assert parse_status(STATUS) == (102400, 7)
    assert parse_status("Name:\tkthreadd\n") == (0, 0)  # a kernel thread has no VmRSS


def test_only_the_listening_socket_of_the_port_is_found_not_its_connections_or_other_ports():
    assert listening_inodes(TCP, 8000) == {"51234"}  # 0x1F40 = 8000
    assert listening_inodes(TCP, 8001) == {"51300"}
    assert listening_inodes(TCP, 9000) == set()


@pytest.mark.parametrize(
    ("argv", "role"),
    [
        (["/app/.venv/bin/python", "/app/.venv/bin/daphne", "--fd", "0", "office.asgi:application"], "web (daphne)"),
        (["/app/.venv/bin/python", "/app/.venv/bin/celery", "-A", "office", "worker", "--pool=threads", "--queues=celery"], "worker (celery)"),
        (["/app/.venv/bin/python", "/app/.venv/bin/celery", "-A", "office", "worker", "--pool=prefork", "--queues=upkeep"], "upkeep (celery)"),
        (["/app/.venv/bin/python", "/app/.venv/bin/celery", "-A", "office", "beat"], "beat (celery)"),
        (["/app/.venv/bin/python", "/app/.venv/bin/supervisord", "-c", "deploy/supervisord.conf"], "supervisord"),
        (["postgres: postgres loadpg 127.0.0.1(50412) idle"], "postgres (loadpg)"),
        (["postgres: 15/main: postgres loadpg 127.0.0.1(50412) idle in transaction"], "postgres (loadpg)"),  # Debian's
        (["postgres: 15/main: checkpointer "], None),
        (["postgres: postgres otherdb 127.0.0.1(50413) idle"], None),  # another session's database
        (["/usr/bin/redis-server 127.0.0.1:6379"], "redis (whole server)"),
        (["/usr/bin/bash"], None),
        ([], None),
    ],
)
def test_each_process_of_the_topology_is_named_by_what_it_does(argv, role):
    assert role_of(argv, database="loadpg") == role


def test_the_topology_is_the_supervisor_and_everything_below_it_not_its_neighbours():
    parents = {1: 0, 10: 1, 11: 10, 12: 10, 13: 12, 20: 1, 21: 20}
    assert descendants([10], parents) == {10, 11, 12, 13}
    assert descendants([], parents) == set()


def test_usage_is_cpu_seconds_mean_and_peak_percent_of_a_core_and_the_largest_memory():
    samples = [
        Sample(at=0.0, cpu_ticks=0, rss_kb=100 * 1024, threads=5),
        Sample(at=1.0, cpu_ticks=20, rss_kb=150 * 1024, threads=105),  # 0.2 s of CPU in 1 s
        Sample(at=2.0, cpu_ticks=110, rss_kb=140 * 1024, threads=104),  # 0.9 s in 1 s: the peak
        Sample(at=4.0, cpu_ticks=120, rss_kb=120 * 1024, threads=5),
    ]
    one = usage(7, "worker (celery)", samples, ticks=100)
    assert one.cpu_seconds == 1.2
    assert one.cpu_percent_mean == 30.0  # 1.2 s over 4 s
    assert one.cpu_percent_peak == 90.0
    assert one.rss_mb_max == 150.0
    assert one.threads_max == 105
    assert usage(7, "worker (celery)", samples[:1]) is None  # one sample says nothing about CPU


def test_by_role_adds_cpu_over_processes_and_keeps_the_largest_memory_of_one():
    def one(pid, cpu, mean, peak, rss):
        samples = [Sample(0.0, 0, 0, 1), Sample(1.0, 0, 0, 1)]
        u = usage(pid, "web (daphne)", samples)
        u.cpu_seconds, u.cpu_percent_mean, u.cpu_percent_peak, u.rss_mb_max = cpu, mean, peak, rss
        return u

    worker = usage(9, "worker (celery)", [Sample(0.0, 0, 300 * 1024, 100), Sample(10.0, 1000, 310 * 1024, 100)], ticks=100)
    rows = by_role([one(1, 2.0, 20.0, 60.0, 90.0), one(2, 3.0, 30.0, 80.0, 110.0), worker])
    assert [row["role"] for row in rows] == ["worker (celery)", "web (daphne)"]  # busiest first
    web = rows[1]
    assert (web["processes"], web["cpu_seconds"], web["cpu_percent_mean"]) == (2, 5.0, 50.0)
    assert (web["cpu_percent_peak"], web["rss_mb_max_per_process"], web["rss_mb_total"]) == (80.0, 110.0, 200.0)
    assert rows[0]["rss_mb_max_per_process"] == 310.0


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads Linux's /proc")
def test_the_sampler_measures_this_process_as_the_load_tool():
    sampler = Sampler(port=1, every=0.05).start()  # nothing listens on port 1: only the tool itself
    sum(i * i for i in range(300_000))  # some CPU to see
    usages = sampler.stop()
    [tool] = [one for one in usages if one.role == "load tool"]
    assert tool.pid == os.getpid()
    assert tool.rss_mb_max > 1 and tool.threads_max >= 2  # the sampler's own thread
    assert not [one for one in usages if one.role in {"web (daphne)", "worker (celery)"}]
