"""bench_upkeep's ORM side: a generated conversation, and the upkeep after each task of a window
of it timed, in a throwaway database.

Each task of a window goes the way a live one does: the instruction is stored, its prompt is built (its
report kept on the task, as the pipeline keeps it; it can ask for an early fold), the rest of
its records are stored, it finishes, and then the upkeep tasks.after_task hands to the jobs runs
inline, with the offline responder: the memory extraction, the exchange's vector, and the fold when one is due.
Indexing is timed where it happens, inside storing (search.index_messages).
"""

from __future__ import annotations

import contextlib
import cProfile
import re
import time
import uuid
from collections.abc import Sequence

from django.db import connection
from django.utils import timezone

from benchmarks import scratch
from benchmarks.scratch import Progress
from benchmarks.upkeep_report import WINDOW, window
from coworkers.models import Coworker
from coworkers.providers import OfflineResponder
from office.models import Channel, Office
from sessions import folding, history, jsonl, memory, prompts, search, services, upkeep, vectors
from sessions.models import ContextPolicy, Task


class _IndexClock:
    """Milliseconds spent in search.index_messages since the last read (storing calls it per message)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._original = search.index_messages

    def __enter__(self) -> _IndexClock:
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return self._original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        search.index_messages = timed
        return self

    def __exit__(self, *exc) -> None:
        search.index_messages = self._original

    def read_ms(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds * 1000


def measure(
    conversation,
    sizes: Sequence[int],
    *,
    fold_batch: int,
    progress: Progress,
    profile: cProfile.Profile | None = None,
    width: int = WINDOW,
    query_times: dict[int, dict[str, list[float]]] | None = None,
) -> tuple[dict[int, list[dict]], list[dict]]:
    """One row per task of the window around each size (see benchmarks.upkeep_report), the
    largest size's upkeep profiled into `profile`; and the largest size's catch-up, fold by fold.
    With `query_times`, each size's upkeep queries are timed into it: {size: {SQL: [ms, …]}}.

    Each size has its own office and session. The tasks before its window are imported and
    caught up (as import_session does: memory extracted, folded batch by batch), which leaves
    the session as living them would have, in a fraction of the time. Then the windows are
    lived in turns, a task of each size after the other, so a machine that gets busier or
    quieter meanwhile slows every size alike and the ratio holds.
    """
    catch_ups = {size: _CatchUpClock(progress, f"  {size:,}: ") for size in sizes}
    spans = {size: window(size, width) for size in sizes}
    sessions = {size: _session_before(conversation, spans[size][0], fold_batch=fold_batch, clock=catch_ups[size]) for size in sizes}
    windows = {size: history.group_tasks([r for r in conversation.records if spans[size][0] <= r.turn <= spans[size][1]]) for size in sizes}
    provider = OfflineResponder()
    rows: dict[int, list[dict]] = {size: [] for size in sizes}
    progress(f"living the windows: {', '.join(f'{a:,}–{b:,}' for a, b in spans.values())}")
    with _IndexClock() as index_clock:
        for i in range(width):
            for size in sizes:
                task_profile = profile if size == max(sizes) else None
                queries = query_times.setdefault(size, {}) if query_times is not None else None
                rows[size].append(_live_task(sessions[size], windows[size][i].records, provider, index_clock, task_profile, queries))
    return rows, catch_ups[max(sizes)].folds


class _CatchUpClock:
    """The catch-up's progress, timed: catch_up says "folded tasks a–b" after each fold, so the
    time since the previous line is those tasks' upkeep (their memory extraction and the fold)."""

    def __init__(self, progress: Progress, prefix: str) -> None:
        self.folds: list[dict] = []  # {"turns": [a, b], "ms_per_task": …}
        self._last = time.perf_counter()
        self._progress, self._prefix = progress, prefix
        self._shown = scratch.every(1000, progress, prefix)

    def say(self, line: str) -> None:
        self._progress(self._prefix + line)
        self._last = time.perf_counter()

    def __call__(self, line: str) -> None:
        now = time.perf_counter()
        if found := re.match(r"folded tasks (\d+)–(\d+)", line):
            first, last = int(found[1]), int(found[2])
            self.folds.append({"turns": [first, last], "ms_per_task": round((now - self._last) * 1000 / (last - first + 1), 3)})
        self._last = now
        self._shown(line)


def _session_before(conversation, first: int, *, fold_batch: int, clock: _CatchUpClock):
    """A new office's 1:1 session holding the conversation's tasks before `first`, caught up."""
    office = Office.objects.create(name="Benchmark", slug=f"upkeep-{uuid.uuid4().hex[:12]}")
    mina = Coworker.objects.create(office=office, name="Mina", slug="mina", role="Marketing lead", persona="You are Mina, the marketing lead.")
    channel = Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name="Mina", coworker=mina)
    ContextPolicy.objects.create(channel=channel, fold_batch=fold_batch)
    before = [record for record in conversation.records if record.turn < first]
    if before:
        clock.say(f"importing tasks 1–{first - 1:,}")
        session = services.import_session(channel=channel, data=jsonl.dump_records(before).encode()).session
        clock.say("imported; catching up")
        if not upkeep.catch_up(session, provider=OfflineResponder(), progress=clock):
            raise RuntimeError(f"catching up the first {first - 1:,} tasks failed")
    return services.get_active_session(channel=channel)


def _live_task(
    session, records, provider, index_clock: _IndexClock, profile: cProfile.Profile | None, queries: dict | None
) -> dict:
    task, _ = services.start_task(session=session, instruction=records[0].content)
    prompt = prompts.build_for_task(session=session, instruction=records[0].content, turn=task.turn)
    Task.objects.filter(pk=task.pk).update(prompt_report=prompt.report)
    for record in records[1:]:
        services.append_message(
            session=session, turn=task.turn, role=record.role, content=record.content,
            tool_calls=record.tool_calls, tool_call_id=record.tool_call_id or "", coworker=record.coworker or "",
        )
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, finished_at=timezone.now())
    index_ms = index_clock.read_ms()
    if profile:
        profile.enable()
    with connection.execute_wrapper(_QueryTimer(queries)) if queries is not None else contextlib.nullcontext():
        started = time.perf_counter()
        memory.extract_memory(task_id=task.pk, provider=provider)
        extracted = time.perf_counter()
        vectors.embed_exchanges(session, [task.turn])
        embedded = time.perf_counter()
        folded = _fold_if_due(session, completed=task.turn, provider=provider)
        finished = time.perf_counter()
    if profile:
        profile.disable()
    return {
        "turn": task.turn,
        "index": round(index_ms, 3),
        "memory": round((extracted - started) * 1000, 3),
        "vector": round((embedded - extracted) * 1000, 3),
        "fold": round((finished - embedded) * 1000, 3),
        "folded": folded,
    }


class _QueryTimer:
    """Django's execute_wrapper: each statement's milliseconds, by its SQL (parameters apart)."""

    def __init__(self, times: dict[str, list[float]]) -> None:
        self.times = times

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.times.setdefault(sql, []).append((time.perf_counter() - started) * 1000)


def _fold_if_due(session, *, completed: int, provider) -> bool:
    """What tasks.after_task asks and the fold job then does."""
    if (target := folding.fold_due(session, completed=completed)) is None:
        return False
    return folding.fold_summary(session_id=session.pk, through_turn=target, provider=provider) is not None
