"""Read marks and unread counts: how many coworker replies a person has not seen in each channel."""

from __future__ import annotations

from django.db.models import Count, F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Greatest

from .models import ChannelEvent, ChannelRead, Office


def mark_read(*, user, channel_id: int, seq: int) -> None:
    """The person has been shown everything up to `seq`. Marks only ever move forward."""
    if not getattr(user, "is_authenticated", False) or seq <= 0:
        return
    read, created = ChannelRead.objects.get_or_create(user=user, channel_id=channel_id, defaults={"last_seen_seq": seq})
    if not created:
        ChannelRead.objects.filter(pk=read.pk).update(last_seen_seq=Greatest(F("last_seen_seq"), Value(seq)))


def unread_counts(*, user, office: Office) -> dict[int, int]:
    """Channel id -> coworker replies (and notices) after the person's read mark; read through
    the (channel, type, seq) index, so only unread events are touched once a channel has been opened."""
    seen = ChannelRead.objects.filter(user=user, channel=OuterRef("channel")).values("last_seen_seq")[:1]
    rows = (
        ChannelEvent.objects.filter(channel__office=office, type="message")
        .annotate(seen=Coalesce(Subquery(seen), Value(0)))
        .filter(seq__gt=F("seen"))
        .exclude(payload__message__role__in=["user", "tool"])
        .values("channel")
        .annotate(unread=Count("id"))
    )
    return {row["channel"]: row["unread"] for row in rows}
