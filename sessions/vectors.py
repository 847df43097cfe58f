"""Recall's search by meaning: each finished exchange's vector (sessions.meaning), stored and searched.

An exchange is a task's instruction and its replies, the unit recall shows. Its vector is
written once the task has finished (sessions.tasks.embed_task), for an imported session as
it catches up (sessions.upkeep), and for history from before by `manage.py embed_history`.
A search ranks the channel's vectors by their dot product with the request's: one matrix
product over vectors each process keeps (15 MB at 10,000 exchanges), reading only new rows.

Left out by design: texts mostly in Chinese, Japanese or Korean (the model reads English; the
search by words serves them), and everything when `settings.MEANING_SEARCH` is off or the
model's package is missing.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from . import meaning, relevance
from .models import ExchangeVector, Message, Session, Task

log = logging.getLogger(__name__)

# An exchange is embedded from its first characters (the model reads 256 word pieces at most).
EXCHANGE_CHARS = 1_500
# Past this share of CJK characters a text is left to the search by words.
CJK_SHARE = 0.2
_CJK = re.compile(f"[{relevance.CJK_LETTERS}]")
_LETTER = re.compile(r"\w")


def enabled() -> bool:
    return bool(getattr(settings, "MEANING_SEARCH", True)) and meaning.available()


def readable(text: str) -> bool:
    """Whether the model can read the text: it has letters, and few of them are CJK."""
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_CJK.findall(text)) <= CJK_SHARE * letters


def embed_exchanges(session: Session, turns: Iterable[int] | None = None) -> int:
    """Write the vectors these tasks' exchanges lack (all the session's when `turns` is None);
    returns how many it embedded. Idempotent: a task embedded twice keeps its first vector (a
    vector is never updated: messages are never edited)."""
    if not enabled():
        return 0
    embedded = ExchangeVector.objects.filter(session=session)
    if turns is None:
        turns = Task.objects.filter(session=session).values_list("turn", flat=True)
    else:
        turns = list(turns)
        embedded = embedded.filter(turn__in=turns)
    done = set(embedded.values_list("turn", flat=True))
    wanted = [turn for turn in turns if turn not in done]
    if not wanted:
        return 0  # read nothing more: an embedded session costs two queries
    todo = [(turn, text) for turn, text in sorted(exchange_texts(session.pk, wanted).items()) if readable(text)]
    if not todo:
        return 0
    vectors = meaning.embed([text for _, text in todo])
    rows = [
        ExchangeVector(channel_id=session.channel_id, session=session, turn=turn, vector=meaning.to_bytes(vector))
        for (turn, _), vector in zip(todo, vectors, strict=True)
    ]
    try:
        with transaction.atomic():
            ExchangeVector.objects.bulk_create(rows, ignore_conflicts=True)
    except IntegrityError:  # the session was deleted meanwhile
        return 0
    return len(rows)


def exchange_texts(session_id: int, turns: Iterable[int] | None = None) -> dict[int, str]:
    """Each task's instruction and replies as one text, cut at EXCHANGE_CHARS."""
    rows = Message.objects.filter(session_id=session_id, role__in=[Message.Role.USER, Message.Role.ASSISTANT])
    if turns is not None:
        rows = rows.filter(turn__in=list(turns))
    texts: dict[int, list[str]] = {}
    for turn, content in rows.exclude(content="").order_by("position").values_list("turn", "content"):
        parts = texts.setdefault(turn, [])
        if sum(len(p) for p in parts) < EXCHANGE_CHARS:
            parts.append(content)
    return {turn: "\n".join(parts)[:EXCHANGE_CHARS] for turn, parts in texts.items()}


def nearest(
    query: str,
    *,
    channel_id: int,
    leave_out: tuple[int, int] | None = None,
    limit: int,
    include: Collection[tuple[int, int]] = (),
) -> dict[tuple[int, int], float]:
    """The channel's exchanges nearest in meaning to `query`: {(session, turn): cosine}, the best
    `limit` and, whatever their rank, those in `include` that have a vector.

    `leave_out=(session_id, turn)` leaves out that session's tasks after `turn`, as in
    sessions.search. Empty when the search by meaning is off or cannot read the query.
    """
    if limit <= 0 or not enabled() or not readable(query):
        return {}
    cached = _channel_vectors(channel_id)
    keys, position = cached.keys, cached.position
    if not len(keys):
        return {}
    scores = cached.matrix @ query_vector(query)
    if leave_out is not None:
        session_id, through = leave_out
        scores[(keys[:, 0] == session_id) & (keys[:, 1] > through)] = -np.inf
    # Whole-array steps and one conversion to Python each: at 10,000 rows, element by element
    # was most of the search's time.
    count = min(limit, len(scores))
    top = np.argpartition(scores, len(scores) - count)[len(scores) - count :]
    top = top[scores[top] > -np.inf]
    found = dict(zip(map(tuple, keys[top].tolist()), scores[top].tolist()))
    wanted = [(key, i) for key in include if (i := position.get(key)) is not None]
    if wanted:
        rows = np.fromiter((i for _, i in wanted), np.int64, len(wanted))
        for (key, _), score in zip(wanted, scores[rows].tolist()):
            if score > -np.inf:
                found[key] = score
    return found


def searchable(query: str, channel_id: int) -> bool:
    """Whether a search of this channel by meaning would embed `query` (one indexed lookup):
    the search is on, it can read the query, and the channel has vectors to compare it with."""
    return enabled() and readable(query) and ExchangeVector.objects.filter(channel_id=channel_id).exists()


def query_vector(query: str) -> np.ndarray:
    """The request's vector, computed once (a reply's tool loop builds its prompt again at each
    step, for the same instruction). Requests that arrive while one is being embedded are
    embedded together: the model reads its weights once for a whole batch, so a hundred replies
    starting at once cost a few encodings, not a hundred one after another."""
    with _queries_lock:
        vector = _recent_queries.get(query)
        if vector is not None:
            _recent_queries.move_to_end(query)
            return vector
        waiting = _waiting.setdefault(query, Future())
    with _batch_lock:  # one batch at a time; the requests that queue meanwhile make the next one
        if not waiting.done():
            with _queries_lock:
                batch = dict(_waiting)
                _waiting.clear()
            try:
                embedded = meaning.embed(list(batch))
            except BaseException as error:
                for future in batch.values():
                    future.set_exception(error)
                raise
            with _queries_lock:
                for (text, future), vector in zip(batch.items(), embedded, strict=True):
                    vector.setflags(write=False)
                    future.set_result(vector)
                    _recent_queries[text] = vector
                while len(_recent_queries) > RECENT_QUERIES:
                    _recent_queries.popitem(last=False)
    return waiting.result()


RECENT_QUERIES = 256
_recent_queries: OrderedDict[str, np.ndarray] = OrderedDict()
_waiting: dict[str, Future] = {}
_queries_lock = threading.Lock()
_batch_lock = threading.Lock()


# Each process keeps the vectors of the channels it searched last, and reads only the rows
# added since: vectors are written once and never change, so a channel's matrix only grows,
# until a session is deleted (its vectors go with it: the channel's sessions, counted and their
# ids summed, then differ, and the matrix is read again).
CACHED_CHANNELS = 8
# How far behind the last id read a read of new rows starts: in PostgreSQL a vector can commit
# after one with a higher id (two embedding jobs at once); it is then read with the next ones.
LATE_ROWS = 64


@dataclass(frozen=True)
class _Matrix:
    sessions: tuple[int, int]  # the channel's sessions: how many, and their ids' sum
    last: int  # the highest vector id read
    keys: np.ndarray  # (session, turn) per row
    matrix: np.ndarray  # a vector per row
    position: dict[tuple[int, int], int]  # each key's row


_cache: OrderedDict[int, _Matrix] = OrderedDict()
_cache_lock = threading.Lock()


def forget_cached_vectors() -> None:
    """Drop every channel's cached vectors and the requests' (the next search reads them again)."""
    with _cache_lock:
        _cache.clear()
    with _queries_lock:
        _recent_queries.clear()


def _channel_vectors(channel_id: int) -> _Matrix:
    """The channel's vectors, read from where this process's copy stops.

    Checked with two index lookups, not a count of the vectors: counting 10,000 rows cost
    more than the search itself. Session ids only grow, so a session deleted (and others
    added) always changes the count or the sum of the channel's session ids.
    """
    table, sessions = ExchangeVector._meta.db_table, Session._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT max(id) FROM {table} WHERE channel_id = %s), count(*), coalesce(sum(id), 0)"
            f" FROM {sessions} WHERE channel_id = %s",
            [channel_id, channel_id],
        )
        last, *counted = cursor.fetchone()
        if last is None:
            return _Matrix((0, 0), 0, np.zeros((0, 2), np.int64), np.zeros((0, meaning.DIMENSIONS), np.float32), {})
        with _cache_lock:
            cached = _cache.get(channel_id)
        if cached is not None and cached.sessions != tuple(counted):
            cached = None
        if cached is not None and cached.last >= last:
            entry = cached
        else:
            cursor.execute(
                f"SELECT session_id, turn, vector FROM {table} WHERE channel_id = %s AND id > %s ORDER BY id",
                [channel_id, cached.last - LATE_ROWS if cached else 0],
            )
            rows = cursor.fetchall()
            entry = _grown(cached, rows, sessions=tuple(counted), last=last)
    with _cache_lock:
        _cache[channel_id] = entry
        _cache.move_to_end(channel_id)
        while len(_cache) > CACHED_CHANNELS:
            _cache.popitem(last=False)
    return entry


def _grown(cached: _Matrix | None, rows: list[tuple], *, sessions: tuple[int, int], last: int) -> _Matrix:
    """The cached matrix with the rows it lacks appended (all of `rows` when nothing was cached)."""
    known = cached.position if cached else {}
    new = [(s, t, v) for s, t, v in rows if (s, t) not in known]
    keys = np.array([(s, t) for s, t, _ in new], np.int64).reshape(-1, 2)
    matrix = meaning.from_bytes([bytes(v) for _, _, v in new])
    if cached is None:
        return _Matrix(sessions, last, keys, matrix, {(int(s), int(t)): i for i, (s, t) in enumerate(keys)})
    offset = len(cached.keys)
    position = {**known, **{(s, t): offset + i for i, (s, t, _) in enumerate(new)}}
    return _Matrix(sessions, last, np.concatenate([cached.keys, keys]), np.concatenate([cached.matrix, matrix]), position)
