"""Recall's search by meaning: each finished exchange's vector (sessions.meaning), stored and searched.

An exchange is a task's instruction and its replies, the unit recall shows. Its vector is
written once the task has finished (sessions.tasks.embed_task) or, for an imported session,
as it catches up (sessions.upkeep). A search reads the channel's vectors and ranks them by
their dot product with the request's: at 10,000 exchanges that is 7.7 MB read and one
matrix product.

Left out by design: texts mostly in Chinese, Japanese or Korean (the model reads English; the
search by words serves them), and everything when `settings.MEANING_SEARCH` is off or the
model's package is missing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from . import meaning
from .models import ExchangeVector, Message, Session

log = logging.getLogger(__name__)

# An exchange is embedded from its first characters (the model reads 256 word pieces at most).
EXCHANGE_CHARS = 1_500
# Past this share of CJK characters a text is left to the search by words.
CJK_SHARE = 0.2
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LETTER = re.compile(r"\w")


def enabled() -> bool:
    return bool(getattr(settings, "MEANING_SEARCH", True)) and meaning.available()


def readable(text: str) -> bool:
    """Whether the model can read the text: it has letters, and few of them are CJK."""
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_CJK.findall(text)) <= CJK_SHARE * letters


def embed_exchanges(session: Session, turns: Iterable[int] | None = None) -> int:
    """Write the vectors these tasks' exchanges lack (all the session's when `turns` is None);
    returns how many were written. Idempotent: a task embedded twice keeps its first vector."""
    if not enabled():
        return 0
    texts = exchange_texts(session.pk, turns)
    done = set(ExchangeVector.objects.filter(session=session, turn__in=list(texts)).values_list("turn", flat=True))
    todo = [(turn, text) for turn, text in sorted(texts.items()) if turn not in done and readable(text)]
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
    query: str, *, channel_id: int, leave_out: tuple[int, int] | None = None, limit: int
) -> list[tuple[tuple[int, int], float]]:
    """The channel's exchanges nearest in meaning to `query`, best first: ((session, turn), cosine).

    `leave_out=(session_id, turn)` leaves out that session's tasks after `turn`, as in
    sessions.search. Empty when the search by meaning is off or cannot read the query.
    """
    if limit <= 0 or not enabled() or not readable(query):
        return []
    excluded, params = "", [channel_id]
    if leave_out is not None:
        excluded, params = " AND NOT (session_id = %s AND turn > %s)", [channel_id, *leave_out]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT session_id, turn, vector FROM {ExchangeVector._meta.db_table} WHERE channel_id = %s{excluded}",
            params,
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    scores = meaning.from_bytes([bytes(vector) for _, _, vector in rows]) @ meaning.embed([query])[0]
    best = np.argsort(-scores, kind="stable")[:limit]
    return [((rows[i][0], rows[i][1]), float(scores[i])) for i in best]
