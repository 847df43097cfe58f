"""The stop board (sessions.stops): every stream of a process learns of a stop request from one
read, at most once per interval, however many stream; a finished stream drops out by itself."""

from __future__ import annotations

import gc
import threading

from sessions.stops import GONE, Board, Seen


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Database:
    """Stands in for the Task table: which tasks exist and which were asked to stop."""

    def __init__(self, tasks: dict[int, Seen]) -> None:
        self.tasks, self.reads = tasks, []

    def read(self, ids: set[int]) -> dict[int, Seen]:
        self.reads.append(set(ids))
        return {pk: self.tasks[pk] for pk in ids if pk in self.tasks}


class Watcher:
    pass


def test_a_hundred_streams_cost_one_read_per_interval_not_one_each():
    clock, database = Clock(), Database({pk: Seen(False, 1) for pk in range(1, 101)})
    board = Board(every=0.5, read=database.read, clock=clock)
    watchers = [Watcher() for _ in range(100)]
    for pk, watcher in enumerate(watchers, start=1):
        board.watch(watcher, pk)
    for round_ in range(3):
        for pk in range(1, 101):
            assert board.look(pk, 100.0) == Seen(False, 1)
        clock.now += 0.5
    assert len(database.reads) == 3
    assert database.reads[0] == set(range(1, 101))


def test_a_stop_request_is_seen_by_its_stream_within_one_interval():
    clock, database = Clock(), Database({1: Seen(False, 1), 2: Seen(False, 1)})
    board = Board(every=0.5, read=database.read, clock=clock)
    one, two = Watcher(), Watcher()
    board.watch(one, 1)
    board.watch(two, 2)
    assert not board.look(1, 100.0).stop_requested
    database.tasks[1] = Seen(True, 1)  # the person pressed Stop
    clock.now += 0.2
    assert not board.look(1, 100.0).stop_requested  # the last read is still fresh
    clock.now += 0.3
    assert board.look(1, 100.0).stop_requested
    assert not board.look(2, 100.0).stop_requested


def test_a_task_gone_or_taken_over_shows_as_such():
    clock, database = Clock(), Database({1: Seen(False, 2)})
    board = Board(every=0.5, read=database.read, clock=clock)
    kept = [Watcher(), Watcher()]
    board.watch(kept[0], 1)
    board.watch(kept[1], 9)  # deleted meanwhile
    assert board.look(1, 100.0).attempts == 2
    assert board.look(9, 100.0) == GONE


def test_a_stream_watched_after_the_last_read_reads_itself_once():
    clock, database = Clock(), Database({1: Seen(False, 1), 2: Seen(True, 1)})
    board = Board(every=0.5, read=database.read, clock=clock)
    first = Watcher()
    board.watch(first, 1)
    board.look(1, 100.0)
    late = Watcher()
    board.watch(late, 2)
    assert board.look(2, 100.0).stop_requested
    assert database.reads == [{1}, {2}]


def test_a_finished_stream_is_no_longer_read():
    clock, database = Clock(), Database({1: Seen(False, 1), 2: Seen(False, 1)})
    board = Board(every=0.5, read=database.read, clock=clock)
    staying, finishing = Watcher(), Watcher()
    board.watch(staying, 1)
    board.watch(finishing, 2)
    del finishing
    gc.collect()
    clock.now += 1
    board.look(1, 100.0)
    assert database.reads[-1] == {1}


def test_threads_looking_at_once_share_one_read():
    clock, database = Clock(), Database({pk: Seen(False, 1) for pk in range(20)})
    entered, release = threading.Event(), threading.Event()

    def slow_read(ids):
        entered.set()
        release.wait(5)
        return database.read(ids)

    board = Board(every=0.5, read=slow_read, clock=clock)
    watchers = [Watcher() for _ in range(20)]
    for pk, watcher in enumerate(watchers):
        board.watch(watcher, pk)
    reader = threading.Thread(target=board.look, args=(0, 100.0))
    reader.start()
    entered.wait(5)
    # While one thread reads, the others answer from what they have (here: nothing yet, so their own
    # row, once) instead of queueing behind it for a connection.
    release.set()
    reader.join(5)
    for pk in range(20):
        board.look(pk, 100.0)
    assert len(database.reads) == 1


def test_a_new_attempt_is_not_judged_by_what_was_read_of_the_one_before():
    clock, database = Clock(), Database({1: Seen(False, 1)})
    board = Board(every=0.5, read=database.read, clock=clock)
    old = Watcher()
    board.watch(old, 1)
    assert board.look(1, 100.0).attempts == 1
    database.tasks[1] = Seen(False, 2)  # claimed again, by this process, a moment later
    clock.now += 0.1
    new = Watcher()
    since = board.watch(new, 1)
    assert board.look(1, since).attempts == 2  # not "taken over by another attempt"
