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
from django.db.models import Count, F, Max, Sum
from django.db.models.functions import Greatest

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
            # The session's row first, as a message being stored takes it (then the channel's, for
            # its event): PostgreSQL checks these rows' keys at commit, channel then session, and
            # in the other order the two transactions waited for each other (a deadlock, which
            # cost the vector and held the message back a second).
            if not Session.objects.select_for_update().filter(pk=session.pk).values_list("pk", flat=True):
                return 0  # the session was deleted meanwhile
            # Under that lock no other job writes this session's vectors: what another wrote
            # since the read above is left out, and the rest is stored and counted at once.
            meanwhile = set(
                ExchangeVector.objects.filter(session=session, turn__in=[row.turn for row in rows]).values_list("turn", flat=True)
            )
            rows = ExchangeVector.objects.bulk_create([row for row in rows if row.turn not in meanwhile])
            ids = [row.pk for row in rows]
            if None in ids:  # a database that does not say the new ids (SQLite before 3.35)
                count_again(session.pk)
            elif ids:
                Session.objects.filter(pk=session.pk).update(
                    vector_count=F("vector_count") + len(ids),
                    vector_last=Greatest("vector_last", max(ids)),
                    vector_ids=F("vector_ids") + sum(ids),
                )
    except IntegrityError:  # the session was deleted meanwhile
        return 0
    return len(rows)


def count_again(session_id: int) -> None:
    """Set the session's totals from its vectors, under its row's lock (as a writer holds it):
    for a database that does not return new ids, and for `embed_history` (totals written by
    an older version, or rows removed by hand, are set right)."""
    with transaction.atomic():
        if not Session.objects.select_for_update().filter(pk=session_id).values_list("pk", flat=True):
            return
        totals = ExchangeVector.objects.filter(session_id=session_id).aggregate(
            count=Count("id"), last=Max("id"), ids=Sum("id")
        )
        Session.objects.filter(pk=session_id).update(
            vector_count=totals["count"], vector_last=totals["last"] or 0, vector_ids=totals["ids"] or 0
        )


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
    embedded together in the next batch: a hundred replies starting at once wait for a few
    encodings, not for a hundred one after another, and a request in a batch of 32 costs about
    half the CPU of one alone (7 against 14 ms here).

    One thread at a time leads: it takes every request waiting, embeds them outside the lock,
    hands out the vectors and wakes the others; each returns once its own vector is there, and
    one whose request is still waiting leads the next batch.
    """
    global _leading
    with _queries:
        vector = _recent_queries.get(query)
        if vector is not None:
            _recent_queries.move_to_end(query)
            return vector
        waiting = _waiting.setdefault(query, Future())
        while _leading and not waiting.done():
            _queries.wait()
        if waiting.done():
            return waiting.result()
        _leading = True
        batch = dict(_waiting)
        _waiting.clear()
    try:
        embedded = meaning.embed(list(batch))
        with _queries:
            for (text, future), row in zip(batch.items(), embedded, strict=True):
                vector = row.copy()  # its own array: a kept row would keep its whole batch
                vector.setflags(write=False)
                _recent_queries[text] = vector
                future.set_result(vector)
            # Older requests make room; a batch larger than the cache is kept whole until its
            # replies have built their prompts.
            while len(_recent_queries) > max(RECENT_QUERIES, len(batch)):
                _recent_queries.popitem(last=False)
    except BaseException as error:
        with _queries:
            for future in batch.values():  # every request of the batch hears of it
                if not future.done():
                    future.set_exception(error)
        raise
    finally:
        with _queries:
            _leading = False
            _queries.notify_all()
    return waiting.result()


# More than a reply worker's threads (500 by default), each between its request's batch and its
# prompt: 1.5 kB a request.
RECENT_QUERIES = 1_024
_recent_queries: OrderedDict[str, np.ndarray] = OrderedDict()
_waiting: dict[str, Future] = {}
_leading = False  # a thread is embedding a batch
_queries = threading.Condition()


# Each process keeps the vectors of the channels it searched last, and reads only the rows
# added since: vectors are written once and never change, so a channel's matrix only grows,
# until a session is deleted (then its row count falls and the matrix is read again).
CACHED_CHANNELS = 8


@dataclass(frozen=True)
class _Matrix:
    count: int  # rows read,
    last: int  # the highest id among them,
    ids: int  # and their ids' sum
    keys: np.ndarray  # (session, turn) per row
    matrix: np.ndarray  # a vector per row
    position: dict[tuple[int, int], int]  # each key's row

    @property
    def held(self) -> tuple[int, int, int]:
        return self.count, self.last, self.ids


_EMPTY = _Matrix(0, 0, 0, np.zeros((0, 2), np.int64), np.zeros((0, meaning.DIMENSIONS), np.float32), {})
_cache: OrderedDict[int, _Matrix] = OrderedDict()
_cache_lock = threading.Lock()


def forget_cached_vectors() -> None:
    """Drop every channel's cached vectors and the requests' (the next search reads them again)."""
    with _cache_lock:
        _cache.clear()
    with _queries:
        _recent_queries.clear()


def _channel_vectors(channel_id: int) -> _Matrix:
    """The channel's vectors, read from where this process's copy stops.

    The copy holds if the channel's sessions still say it has as many vectors, the same newest
    one and the same sum of ids (a session deleted and a vector committed late leave the
    count and the newest as they were). More, and a newer one: the rows after the copy's
    newest are added; if the count or the sum still differs (in PostgreSQL a vector can commit
    after one with a higher id), or there are fewer (a session deleted), the channel is read
    again whole. The totals are a few rows (one a session), not one a vector.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(sum(vector_count), 0), coalesce(max(vector_last), 0), coalesce(sum(vector_ids), 0)"
            f" FROM {Session._meta.db_table} WHERE channel_id = %s",
            [channel_id],
        )
        count, last, ids = cursor.fetchone()
        if not count:
            return _EMPTY

        def rows_after(after: int) -> list[tuple]:
            cursor.execute(
                f"SELECT id, session_id, turn, vector FROM {ExchangeVector._meta.db_table}"
                " WHERE channel_id = %s AND id > %s ORDER BY id",
                [channel_id, after],
            )
            return cursor.fetchall()

        with _cache_lock:
            cached = _cache.get(channel_id)
        held = (int(count), int(last), int(ids))
        entry = cached if cached and cached.held == held else None
        if entry is None and cached is not None and cached.last < last and count > cached.count:
            grown = _grown(cached, rows_after(cached.last))
            entry = grown if grown.held == held else None
        if entry is None:
            entry = _grown(_EMPTY, rows_after(0))
    with _cache_lock:
        _cache[channel_id] = entry
        _cache.move_to_end(channel_id)
        while len(_cache) > CACHED_CHANNELS:
            _cache.popitem(last=False)
    return entry


def _grown(cached: _Matrix, rows: list[tuple]) -> _Matrix:
    """The cached matrix with these (id, session, turn, vector) rows appended."""
    if not rows:
        return cached
    keys = np.array([(s, t) for _, s, t, _ in rows], np.int64).reshape(-1, 2)
    matrix = meaning.from_bytes([bytes(v) for _, _, _, v in rows])
    offset = len(cached.keys)
    position = {**cached.position, **{(s, t): offset + i for i, (_, s, t, _) in enumerate(rows)}}
    return _Matrix(
        cached.count + len(rows),
        rows[-1][0],
        cached.ids + sum(row[0] for row in rows),
        np.concatenate([cached.keys, keys]),
        np.concatenate([cached.matrix, matrix]),
        position,
    )
