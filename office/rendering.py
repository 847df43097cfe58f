"""Each message's HTML, rendered once and stored (RenderedMessage): the ORM side of office/markdown.py.

Rendering is CPU work on text anyone can send, so it never runs inside a write transaction (SQLite
would stay locked for every office meanwhile) and never per page view or connect. Writers render
first (`render`) and store the result with the message; readers take the stored HTML (`html_of`),
and a message stored without it (before migration office 0005, or by a writer that skipped it) is
rendered then, once, and stored for everyone after.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction

from .markdown import render
from .models import RenderedMessage

__all__ = ["html_of", "render", "store"]


def store(pairs: Iterable[tuple[object, str]]) -> None:
    """Store (message id, html) pairs. A pair already stored stays as it is (two readers may race)."""
    rows = [RenderedMessage(message_id=message_id, html=html) for message_id, html in pairs]
    if rows:
        RenderedMessage.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)


def html_of(messages: Sequence) -> dict[str, str]:
    """The HTML of each message (rows with `pk` and `content`), by str(pk).

    Call outside a transaction: a message with nothing stored is rendered here, before anything
    is written.
    """
    ids = [message.pk for message in messages]
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):  # SQLite caps the parameters of one statement
        stored = RenderedMessage.objects.filter(message_id__in=ids[start : start + 500])
        found.update((str(key), html) for key, html in stored.values_list("message_id", "html"))
    missing = [message for message in messages if str(message.pk) not in found]
    if missing:
        rendered = [(message.pk, render(message.content)) for message in missing]
        found.update((str(key), html) for key, html in rendered)
        with transaction.atomic():
            store(rendered)
    return found
