"""Office documents: listing, reading and writing versioned drafts, specs and plans, one office at a time.
Must not import sessions or coworkers modules (they import office); a source task is passed in as a row.

Every function takes the office's id and looks only inside that office: a title
in another office is simply not found. Writes add a version; nothing is edited.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from .models import Document, DocumentVersion

MAX_TITLE_CHARS = 200
MAX_CONTENT_CHARS = 100_000
SUGGESTIONS = 3


class DocumentError(ValueError):
    """A request that cannot be done as asked; the message says what to do instead."""


class DocumentNotFound(DocumentError):
    def __init__(self, title: str, suggestions: list[str]) -> None:
        self.title = title
        self.suggestions = suggestions
        hint = f" Did you mean: {', '.join(f'“{s}”' for s in suggestions)}?" if suggestions else ""
        super().__init__(f"No document titled “{title}” in this office.{hint}")


def list_documents(office_id: int, query: str = "") -> list[Document]:
    """The office's documents, most recently updated first, each with `current_number` (its newest
    version, 0 when it has none). With a query, only those whose title or current text holds
    every word of it (case-insensitive)."""
    newest = DocumentVersion.objects.filter(document=OuterRef("pk")).order_by("-number")
    documents = Document.objects.filter(office_id=office_id)
    if query.split():
        matching = documents.annotate(current_content=Subquery(newest.values("content")[:1]))
        for word in query.split():
            matching = matching.filter(Q(title__icontains=word) | Q(current_content__icontains=word))
        # Only the ids come back from the subquery: the texts are compared in the database, never loaded.
        documents = documents.filter(pk__in=matching.values("pk"))
    documents = documents.annotate(current_number=Coalesce(Subquery(newest.values("number")[:1]), 0))
    return list(documents.order_by("-updated_at", "title"))


def read_document(office_id: int, title: str, version: int | None = None) -> tuple[Document, DocumentVersion]:
    """The document with this title (any case) and its current version, or the numbered one."""
    document = find_document(office_id, title)
    versions = document.versions.order_by("-number")
    found = versions.filter(number=version).first() if version is not None else versions.first()
    if found is None:
        newest = versions.values_list("number", flat=True).first()
        if newest is None:
            raise DocumentError(f"“{document.title}” has no text yet; write it with write_document.")
        raise DocumentError(f"“{document.title}” has versions 1 to {newest}; there is no version {version}.")
    return document, found


def find_document(office_id: int, title: str) -> Document:
    title = _clean_title(title)
    document = Document.objects.filter(office_id=office_id, title__iexact=title).first()
    if document is None:
        titles = Document.objects.filter(office_id=office_id).values_list("title", flat=True)
        raise DocumentNotFound(title, closest_titles(title, list(titles)))
    return document


def write_document(
    *,
    office_id: int,
    title: str,
    content: str,
    author: str,
    kind: str | None = None,
    source_task: Any = None,
) -> DocumentVersion:
    """Create the document (kind defaults to draft) or add a version to it; returns the current version.

    Writing exactly the current text adds nothing: the current version comes back
    with `unchanged = True` (so a retried tool call does not pile up copies). A kind
    given for an existing document changes its kind.
    """
    title = _clean_title(title)
    if not content.strip():
        raise DocumentError("A document needs some content; the content was empty.")
    if len(content) > MAX_CONTENT_CHARS:
        raise DocumentError(
            f"The content is {len(content):,} characters; a document holds at most {MAX_CONTENT_CHARS:,}. "
            "Split it into several documents."
        )
    if kind is not None and kind not in Document.Kind.values:
        raise DocumentError(f"Unknown kind “{kind}”; use one of: {', '.join(Document.Kind.values)}.")
    try:
        return _write(office_id, title, content, author, kind, source_task)
    except IntegrityError:
        # Someone created the same title, or took the same version number, between our read and our write.
        return _write(office_id, title, content, author, kind, source_task)


def _write(
    office_id: int, title: str, content: str, author: str, kind: str | None, source_task: Any
) -> DocumentVersion:
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(office_id=office_id, title__iexact=title).first()
        if document is None:
            document = Document.objects.create(
                office_id=office_id, title=title, kind=kind or Document.Kind.DRAFT, created_by=author
            )
        current = document.versions.order_by("-number").first()
        if current is not None and current.content == content and (kind is None or kind == document.kind):
            current.unchanged = True
            return current
        version = DocumentVersion.objects.create(
            document=document,
            number=current.number + 1 if current else 1,
            content=content,
            author=author,
            source_task=source_task,
        )
        if kind is not None:
            document.kind = kind
        document.save(update_fields=["kind", "updated_at"])  # updated_at: the list shows what moved lately
        version.unchanged = False
        return version


def closest_titles(title: str, titles: list[str], limit: int = SUGGESTIONS) -> list[str]:
    """The titles most like `title`: by spelling, and by the words they share."""
    wanted = title.lower()
    words = set(_words(wanted))
    scored = []
    for candidate in titles:
        lower = candidate.lower()
        spelling = difflib.SequenceMatcher(None, wanted, lower).ratio()
        shared = len(words & set(_words(lower))) / len(words) if words else 0.0
        contains = 0.9 if wanted and (wanted in lower or lower in wanted) else 0.0
        score = max(spelling, shared, contains)
        if score >= 0.5:
            scored.append((-score, candidate))
    return [candidate for _, candidate in sorted(scored)[:limit]]


def _clean_title(title: str) -> str:
    title = " ".join(title.split())
    if not title:
        raise DocumentError("A document needs a title; the title was empty.")
    if len(title) > MAX_TITLE_CHARS:
        raise DocumentError(f"A title holds at most {MAX_TITLE_CHARS} characters; this one has {len(title)}.")
    return title


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)
