"""People editing long-term memory from the app: every change is saved with its audit event.

The extractor and the coworkers' tools write memory through sessions.memory; this is
the person's side. Must not import views or anything that calls a model.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from sessions.models import MemoryEvent, MemoryItem


def actor_of(user: AbstractBaseUser) -> str:
    return f"person:{user.get_username()}"


@transaction.atomic
def edit_memory_item(*, item: MemoryItem, text: str, kind: str, pinned: bool, user: AbstractBaseUser) -> MemoryEvent | None:
    """Change an item's text, kind and pin. None when nothing changed (no event for a no-op save)."""
    text = text.strip()
    changes = []
    if text != item.text:
        changes.append("text")
    if kind != item.kind:
        changes.append(f"kind {item.kind} → {kind}")
    if pinned != item.pinned:
        changes.append("pinned" if pinned else "unpinned")
    if not changes:
        return None
    before = item.text
    item.text, item.kind, item.pinned = text, kind, pinned
    item.save(update_fields=["text", "kind", "pinned", "updated_at"])
    return MemoryEvent.objects.create(
        office_id=item.office_id,
        item=item,
        action=MemoryEvent.Action.UPDATE,
        before=before,
        after=item.text,
        reason=f"Edited in the app ({', '.join(changes)}).",
        actor=actor_of(user),
    )


def set_memory_pinned(*, item: MemoryItem, pinned: bool, user: AbstractBaseUser) -> MemoryEvent | None:
    return edit_memory_item(item=item, text=item.text, kind=item.kind, pinned=pinned, user=user)


@transaction.atomic
def forget_memory_item(*, item: MemoryItem, user: AbstractBaseUser) -> MemoryEvent | None:
    """Deactivate an item: it leaves every prompt but stays in the audit log. None if already gone."""
    # 0 rows: someone else deleted it first; one event is enough.
    if not MemoryItem.objects.filter(pk=item.pk, active=True).update(active=False, updated_at=timezone.now()):
        return None
    return MemoryEvent.objects.create(
        office_id=item.office_id,
        item=item,
        action=MemoryEvent.Action.DELETE,
        before=item.text,
        reason="Deleted in the app.",
        actor=actor_of(user),
    )
