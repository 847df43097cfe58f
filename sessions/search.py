"""The history's full-text search: one engine for the recalled layer, the coworkers'
`search_history` tool and people's search box. ORM and SQL; it calls no model.

Every message but notices is indexed when it is stored (`index_messages`, in the same
transaction), in the words of `relevance.search_terms`: Snowball stems for English, jieba's
words and character bigrams for Chinese, numbers kept whole. The database does the rest:

* SQLite (the embedded default): an FTS5 table over `SearchEntry.terms`, kept in step by
  triggers, ranked by FTS5's own `bm25()`;
* PostgreSQL: a GIN index over `to_tsvector('simple', terms)`. PostgreSQL's `ts_rank` has no
  notion of how rare a word is, so each query word's rank is weighted by its inverse
  document frequency in the searched channels, counted through the same index: BM25's idea
  with the database's own parts.

Both engines see exactly the same words, so they find the same messages; docs/context.md
says why this engine and not another.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection

from . import relevance
from .models import Message, SearchEntry

FTS_TABLE = "work_sessions_search_fts"
ENTRY_TABLE = SearchEntry._meta.db_table
# A tool result is indexed in digest form: its head says what it was.
TOOL_RESULT_CHARS = 600
# A query's words: more than this many say nothing more and cost another posting list each.
QUERY_TERMS = 24


def entry_text(role: str, content: str, tool_calls: Sequence[dict]) -> str:
    """What of a message is searchable: its text; a tool call's name and arguments; a tool result's head."""
    if role == Message.Role.TOOL:
        return content[:TOOL_RESULT_CHARS]
    parts = [content]
    for call in tool_calls:
        parts.append(str(call.get("name", "")))
        parts.extend(str(value) for value in (call.get("args") or {}).values())
    return " ".join(part for part in parts if part)


def index_messages(messages: Iterable[Message], *, channel_id: int) -> None:
    """Index stored messages (notices never). Call inside the transaction that stored them."""
    entries = [
        SearchEntry(
            message_id=message.pk,
            channel_id=channel_id,
            session_id=message.session_id,
            turn=message.turn,
            role=message.role,
            terms=" ".join(relevance.search_terms(entry_text(message.role, message.content, message.tool_calls))),
        )
        for message in messages
        if message.role != Message.Role.NOTICE
    ]
    SearchEntry.objects.bulk_create(entries, batch_size=500)


@dataclass(frozen=True)
class Hit:
    """A message that matched, best first; `matched` are the query's index words it holds."""

    message_id: str
    session_id: int
    channel_id: int
    turn: int
    role: str
    score: float
    matched: tuple[str, ...]


def query_terms(query: str) -> list[str]:
    """The query's distinct index words, in the order it says them."""
    return list(dict.fromkeys(relevance.search_terms(query)))[:QUERY_TERMS]


def search(
    query: str,
    *,
    channel_ids: Sequence[int],
    limit: int,
    leave_out: tuple[int, int] | None = None,
) -> list[Hit]:
    """The messages of these channels that best match `query`, best first, at most `limit`.

    `leave_out=(session_id, turn)` leaves out that session's tasks after `turn`: the ones
    already in front of the model in full, and the current one.
    """
    terms = query_terms(query)
    if not terms or not channel_ids or limit <= 0:
        return []
    search_rows = _search_postgres if connection.vendor == "postgresql" else _search_sqlite
    rows = search_rows(terms, list(channel_ids), limit, leave_out)
    wanted = set(terms)
    hits = []
    for message_id, session_id, channel_id, turn, role, score, entry_terms in rows:
        matched = tuple(term for term in dict.fromkeys(entry_terms.split()) if term in wanted)
        hits.append(Hit(str(uuid.UUID(str(message_id))), session_id, channel_id, turn, role, float(score), matched))
    return hits


def _leave_out_sql(leave_out: tuple[int, int] | None) -> tuple[str, list]:
    if leave_out is None:
        return "", []
    return " AND NOT (e.session_id = %s AND e.turn > %s)", list(leave_out)


def _search_sqlite(terms: list[str], channel_ids: list[int], limit: int, leave_out) -> list[tuple]:
    # Quoted, each word is matched as itself: the words hold letters, digits and CJK only.
    match = " OR ".join(f'"{term}"' for term in terms)
    excluded, excluded_params = _leave_out_sql(leave_out)
    sql = (
        f"SELECT e.message_id, e.session_id, e.channel_id, e.turn, e.role, -bm25({FTS_TABLE}) AS score, e.terms "
        f"FROM {FTS_TABLE} JOIN {ENTRY_TABLE} AS e ON e.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH %s AND e.channel_id IN ({', '.join(['%s'] * len(channel_ids))}){excluded} "
        "ORDER BY score DESC, e.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *channel_ids, *excluded_params, limit])
        return cursor.fetchall()


def _search_postgres(terms: list[str], channel_ids: list[int], limit: int, leave_out) -> list[tuple]:
    vector = "to_tsvector('simple', e.terms)"
    channels = f"e.channel_id IN ({', '.join(['%s'] * len(channel_ids))})"
    any_term = "to_tsquery('simple', %s)"
    either = " | ".join(f"'{term}'" for term in terms)
    excluded, excluded_params = _leave_out_sql(leave_out)
    with connection.cursor() as cursor:
        # How many messages of these channels hold each word (through the GIN index), and how many there are.
        counts = ", ".join(f"count(*) FILTER (WHERE {vector} @@ to_tsquery('simple', %s))" for _ in terms)
        cursor.execute(
            f"SELECT {counts} FROM {ENTRY_TABLE} AS e WHERE {channels} AND {vector} @@ {any_term}",
            [*(f"'{term}'" for term in terms), *channel_ids, either],
        )
        found = cursor.fetchone()
        cursor.execute(f"SELECT count(*) FROM {ENTRY_TABLE} AS e WHERE {channels}", channel_ids)
        total = cursor.fetchone()[0]
        weights = [_idf(total, n) for n in found]
        # ts_rank with normalization 1 divides by 1 + log(length): long messages do not win by length alone.
        rank = " + ".join(f"%s * ts_rank({vector}, to_tsquery('simple', %s), 1)" for _ in terms)
        rank_params = [value for weight, term in zip(weights, terms) for value in (weight, f"'{term}'")]
        cursor.execute(
            f"SELECT e.message_id, e.session_id, e.channel_id, e.turn, e.role, ({rank}) AS score, e.terms "
            f"FROM {ENTRY_TABLE} AS e WHERE {channels} AND {vector} @@ {any_term}{excluded} "
            "ORDER BY score DESC, e.id DESC LIMIT %s",
            [*rank_params, *channel_ids, either, *excluded_params, limit],
        )
        return cursor.fetchall()


def _idf(total: int, found: int) -> float:
    """BM25's (Lucene's) inverse document frequency: never negative, larger for rarer words."""
    return math.log(1 + (total - found + 0.5) / (found + 0.5))
