"""The history's full-text search: one engine for the recalled layer, the coworkers'
`search_history` tool and people's search box. ORM and SQL; it calls no model.

Every message but notices is indexed when it is stored (`index_messages`, in the same
transaction), in the words of `relevance.search_terms`: Snowball stems for English, jieba's
words and character bigrams for Chinese, numbers kept whole. Each word is stored with its
channel's mark (`c12xvenu`), so every channel has its own vocabulary: a search reads only the
posting lists of the channels it searches, however large the rest of the database grows,
and a word's rarity is counted where it is used. The database does the rest:

* SQLite (the embedded default): an FTS5 table over `SearchEntry.terms`, kept in step by
  triggers, ranked by FTS5's own `bm25()`;
* PostgreSQL: a GIN index over `words`, the stored `to_tsvector('simple', terms)` (a column
  only PostgreSQL has, added by migration 0007). PostgreSQL's `ts_rank` has no
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
VOCAB_TABLE = "work_sessions_search_vocab"
ENTRY_TABLE = SearchEntry._meta.db_table
# A tool result is indexed in digest form: its head says what it was.
TOOL_RESULT_CHARS = 600
# A query's words: more than this many say nothing more and cost another posting list each.
# The rarest are kept, not the first: a Chinese question of 25 characters has some 60 words
# (each character, each bigram, jieba's longer words), and its first 24 are its first dozen
# characters, with the subject often after them.
QUERY_TERMS = 24
# How many of a query's distinct words are looked up to choose those (a count each, from the
# index's vocabulary): enough for a long question, bounded for a pasted page.
QUERY_WORDS_WEIGHED = 96
# A word found in more messages than this, in the channels searched, is left out of the query
# (unless every word is): it says little about any one message, and scoring every message
# that holds it is what would make a search of a long history slow.
COMMON_WORD_MESSAGES = 150
# A query of nothing but such words finds at most this many messages: it has little to go on,
# and whatever it finds is a guess that should not fill a prompt or a page.
COMMON_QUERY_HITS = 30


def scoped(channel_id: int, term: str) -> str:
    """A word as the index stores it for one channel."""
    return f"c{channel_id}x{term}"


def unscoped(word: str) -> str:
    return word.split("x", 1)[1]


def entry_text(role: str, content: str, tool_calls: Sequence[dict]) -> str:
    """What of a message is searchable: its text; a tool call's name and arguments; a tool result's head."""
    if role == Message.Role.TOOL:
        return content[:TOOL_RESULT_CHARS]
    parts = [content]
    for call in tool_calls:
        parts.append(str(call.get("name", "")))
        parts.extend(str(value) for value in (call.get("args") or {}).values())
    return " ".join(part for part in parts if part)


def message_words(role: str, content: str, tool_calls: Sequence[dict]) -> list[str]:
    """A message's index words, not yet scoped to a channel ([] for a notice). Pure, so an import
    computes them before its write transaction: jieba over 2 MB of Chinese inside it held SQLite's
    write lock past other people's 20-second wait, and their instructions failed."""
    if role == Message.Role.NOTICE:
        return []
    return relevance.search_terms(entry_text(role, content, tool_calls))


def index_messages(messages: Iterable[Message], *, channel_id: int, words: Sequence[list[str]] | None = None) -> None:
    """Index stored messages (notices never). Call inside the transaction that stored them;
    `words`, one list per message in order, are their message_words when computed before it."""
    messages = list(messages)
    if words is None:
        words = [message_words(m.role, m.content, m.tool_calls) for m in messages]
    entries = [
        SearchEntry(
            message_id=message.pk,
            channel_id=channel_id,
            session_id=message.session_id,
            turn=message.turn,
            role=message.role,
            terms=" ".join(scoped(channel_id, term) for term in said),
        )
        for message, said in zip(messages, words, strict=True)
        if message.role != Message.Role.NOTICE
    ]
    SearchEntry.objects.bulk_create(entries, batch_size=500)


@dataclass(frozen=True)
class Hit:
    """A message that matched, best first; `matched` are the index words searched for (the
    query's informative ones, the same for every hit): where a message says them is found in its
    text (relevance.matching_spans), not by splitting its stored words, which for a message of
    megabytes was seconds of a search."""

    message_id: str
    session_id: int
    channel_id: int
    turn: int
    role: str
    score: float
    matched: tuple[str, ...]


def query_terms(query: str) -> list[str]:
    """The query's distinct index words, in the order it says them (the first QUERY_WORDS_WEIGHED)."""
    return list(dict.fromkeys(relevance.search_terms(query)))[:QUERY_WORDS_WEIGHED]


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
    return search_words(query_terms(query), channel_ids=channel_ids, limit=limit, leave_out=leave_out)


def search_words(
    terms: Sequence[str],
    *,
    channel_ids: Sequence[int],
    limit: int,
    leave_out: tuple[int, int] | None = None,
) -> list[Hit]:
    """search() for index words already made (relevance.search_terms), such as another message's."""
    if not terms or not channel_ids or limit <= 0:
        return []
    postgres = connection.vendor == "postgresql"
    words = [scoped(channel, term) for channel in channel_ids for term in terms]
    counts = word_counts(words)
    words, newest = _informative(words, counts)
    if not words:
        return []
    if newest:
        limit = min(limit, COMMON_QUERY_HITS)
    search_rows = _search_postgres if postgres else _search_sqlite
    rows = search_rows(words, counts, limit, leave_out, newest)
    searched = tuple(dict.fromkeys(unscoped(w) for w in words))
    return [
        Hit(str(uuid.UUID(str(message_id))), session_id, channel_id, turn, role, float(score), searched)
        for message_id, session_id, channel_id, turn, role, score in rows
    ]


def _informative(words: list[str], counts: dict[str, int]) -> tuple[list[str], int | None]:
    """The words found anywhere, leaving out the very common ones, the QUERY_TERMS rarest (over
    the channels searched); and, when nothing else is left, the two rarest of those, searched
    in their newest COMMON_WORD_MESSAGES messages only (the second value): a question of
    nothing but common words has little to go on anyway."""
    found = sorted((counts[w], w) for w in words if counts.get(w))
    rare = [w for n, w in found if n <= COMMON_WORD_MESSAGES]
    if rare or not found:
        return _rarest_terms(rare, counts), None
    return [w for _, w in found[:2]], COMMON_WORD_MESSAGES


def _rarest_terms(words: list[str], counts: dict[str, int]) -> list[str]:
    """The words of the QUERY_TERMS rarest terms: a term's rarity is its count over every channel
    searched, so a search of several channels searches the same terms in each."""
    found: dict[str, int] = {}
    for word in words:
        found[unscoped(word)] = found.get(unscoped(word), 0) + counts[word]
    kept = set(sorted(found, key=lambda term: (found[term], term))[:QUERY_TERMS])
    return [word for word in words if unscoped(word) in kept]


def word_counts(words: list[str]) -> dict[str, int]:
    """How many messages hold each of these scoped index words (up to one past
    COMMON_WORD_MESSAGES in PostgreSQL); a word no message holds is left out."""
    if not words:
        return {}
    return _postgres_counts(words) if connection.vendor == "postgresql" else _sqlite_counts(words)


def _sqlite_counts(words: list[str]) -> dict[str, int]:
    """How many messages hold each word: FTS5 keeps the count (its vocabulary table)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT term, doc FROM {VOCAB_TABLE} WHERE term IN ({', '.join(['%s'] * len(words))})", words
        )
        return dict(cursor.fetchall())


def _postgres_counts(words: list[str]) -> dict[str, int]:
    """How many messages hold each word, counted through the GIN index up to one past the
    common-word limit (past it, the exact number is not needed)."""
    one = (
        f"SELECT %s, (SELECT count(*) FROM (SELECT 1 FROM {ENTRY_TABLE} "
        f"WHERE words @@ to_tsquery('simple', %s) LIMIT %s) AS found)"
    )
    sql = " UNION ALL ".join([one] * len(words))
    params = [value for word in words for value in (word, f"'{word}'", COMMON_WORD_MESSAGES + 1)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())


def _leave_out_sql(leave_out: tuple[int, int] | None) -> tuple[str, list]:
    if leave_out is None:
        return "", []
    return " AND NOT (e.session_id = %s AND e.turn > %s)", list(leave_out)


def _search_sqlite(words: list[str], counts, limit: int, leave_out, newest: int | None) -> list[tuple]:
    # Quoted, each word is matched as itself: the words hold letters, digits and CJK only. The
    # channel marks already keep other channels out.
    match = " OR ".join(f'"{word}"' for word in words)
    excluded, excluded_params = _leave_out_sql(leave_out)
    recent, recent_params = "", []
    if newest:  # FTS5 walks its rows from the newest down and stops: only those are scored
        recent = (
            f" AND {FTS_TABLE}.rowid >= (SELECT min(rowid) FROM (SELECT rowid FROM {FTS_TABLE} "
            f"WHERE {FTS_TABLE} MATCH %s ORDER BY rowid DESC LIMIT %s))"
        )
        recent_params = [match, newest]
    sql = (
        f"SELECT e.message_id, e.session_id, e.channel_id, e.turn, e.role, -bm25({FTS_TABLE}) AS score "
        f"FROM {FTS_TABLE} JOIN {ENTRY_TABLE} AS e ON e.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH %s{recent}{excluded} ORDER BY score DESC, e.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *recent_params, *excluded_params, limit])
        return cursor.fetchall()


def _search_postgres(words: list[str], counts, limit: int, leave_out, newest: int | None) -> list[tuple]:
    vector = "e.words"  # the channel marks in the words keep other channels out
    either = " | ".join(f"'{word}'" for word in words)
    excluded, excluded_params = _leave_out_sql(leave_out)
    if newest:  # only the newest matches are scored
        excluded += (
            f" AND e.id >= (SELECT min(id) FROM (SELECT id FROM {ENTRY_TABLE} "
            "WHERE words @@ to_tsquery('simple', %s) ORDER BY id DESC LIMIT %s) AS newest)"
        )
        excluded_params = [*excluded_params, either, newest]
    with connection.cursor() as cursor:
        # How many messages there are, from the planner's statistics: counting a channel's would
        # grow with it, and as in FTS5's bm25() the whole index's size serves every channel.
        cursor.execute(f"SELECT reltuples FROM pg_class WHERE oid = '{ENTRY_TABLE}'::regclass")
        total = max(int(cursor.fetchone()[0]), max(counts.values(), default=0), 1)
        # ts_rank with normalization 1 divides by 1 + log(length): long messages do not win by length alone.
        rank = " + ".join(f"%s * ts_rank({vector}, to_tsquery('simple', %s), 1)" for _ in words)
        rank_params = [value for word in words for value in (_idf(total, counts[word]), f"'{word}'")]
        cursor.execute(
            f"SELECT e.message_id, e.session_id, e.channel_id, e.turn, e.role, ({rank}) AS score "
            f"FROM {ENTRY_TABLE} AS e WHERE {vector} @@ to_tsquery('simple', %s){excluded} "
            "ORDER BY score DESC, e.id DESC LIMIT %s",
            [*rank_params, either, *excluded_params, limit],
        )
        return cursor.fetchall()


def _idf(total: int, found: int) -> float:
    """BM25's (Lucene's) inverse document frequency: never negative, larger for rarer words."""
    return math.log(1 + (total - found + 0.5) / (found + 0.5))
