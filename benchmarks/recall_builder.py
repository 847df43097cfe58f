"""The app's builder for bench_recall: a throwaway SQLite database, conversations imported as lived, prompts asked.

The only ORM side of bench_recall. It goes through the calls a person's history
goes through (import_session, catch_up, build_for_task, find_recall_candidates) and
reads nothing of a report beyond each layer's `chars` and `total_chars`, so it
measures whatever recall the product has today.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence

from django.db import connection

from benchmarks import scratch
from benchmarks.recall_conversations import Question, RecallConversation
from coworkers.models import Coworker
from office.models import Channel, Office
from sessions import jsonl, prompts, services, upkeep, vectors
from sessions.history import Record

Progress = Callable[[str], None]


@contextlib.contextmanager
def throwaway_database() -> Iterator[None]:
    """A fresh, migrated SQLite file for the run, removed afterwards (benchmarks.scratch)."""
    if connection.vendor != "sqlite":
        raise RuntimeError("bench_recall runs on the embedded SQLite default; unset DATABASE_URL")
    with scratch.throwaway_database("bench-recall-"):
        yield


def scratch_channel() -> tuple[Channel, int]:
    """A new office with one coworker and their 1:1 channel, and the sum of its layer budgets."""
    office = Office.objects.create(name="Benchmark", slug=f"recall-{uuid.uuid4().hex[:12]}")
    mina = Coworker.objects.create(office=office, name="Mina", slug="mina", role="Marketing lead", persona="You are Mina, the marketing lead.")
    channel = Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name="Mina", coworker=mina)
    policy = prompts.resolve_policy(channel, mina)
    budget = policy.memory_chars + policy.summary_chars + policy.detailed_chars + policy.recall_chars
    return channel, budget


def import_layout(
    conversation: RecallConversation, layout: str, channel: Channel, progress: Progress, *, catch_up: bool = True
) -> tuple[object, int]:
    """Import the conversation as one session or as one session a day; each is caught up as if
    lived, unless `catch_up` is False (the search needs only the import, which indexes, and
    the exchanges' vectors for the search by meaning).

    Returns the active session and the turn a new instruction would have.
    """
    chunks: Sequence[Sequence[Record]] = (
        [conversation.records] if layout == "one session" else conversation.session_records()
    )
    session, turns = None, 0
    for i, records in enumerate(chunks, start=1):
        result = services.import_session(channel=channel, data=jsonl.dump_records(records).encode())
        session, turns = result.session, result.tasks
        if catch_up:
            upkeep.catch_up(session, progress=scratch.every(200, progress, f"  {layout}: "))
        else:
            vectors.embed_exchanges(session)
        if len(chunks) > 1 and (i % 5 == 0 or i == len(chunks)):
            progress(f"  {layout}: {i}/{len(chunks)} sessions imported and caught up")
    return session, turns + 1


def ask(session, turn: int, question: Question):
    """The prompt the question would get as the session's next task; nothing is stored."""
    return prompts.build_for_task(session=session, instruction=question.text, turn=turn)


def time_search(sessions: Sequence[tuple[object, int, Sequence[Question]]], repeats: int = 5) -> list[list[float]]:
    """Milliseconds of one recall search per question, for each (session, through, questions): the
    fastest of `repeats`, taken in rounds that visit every session in turn, so a busy moment of the
    machine falls on every size alike (the sizes are compared as a ratio)."""
    best = [[float("inf")] * len(questions) for _, _, questions in sessions]
    for _ in range(repeats):
        for timings, (session, through, questions) in zip(best, sessions):
            for i, question in enumerate(questions):
                started = time.perf_counter()
                prompts.find_recall_candidates(session, question.text, through=through)
                timings[i] = min(timings[i], (time.perf_counter() - started) * 1000)
    return best
