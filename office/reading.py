"""Read marks and unread counts: how many coworker replies a person has not seen in each channel."""

from __future__ import annotations

from django.db.models import Count, F, Max, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Greatest

from .models import ChannelEvent, ChannelRead, Office

# Message roles that never count as unread: instructions (people's own words) and tool traffic.
UNCOUNTED_ROLES = ("user", "tool")


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
    rows = _unread_events(user=user, office=office).values("channel").annotate(unread=Count("id"))
    return {row["channel"]: row["unread"] for row in rows}


def unread_through(*, user, office: Office) -> dict[int, tuple[int, int]]:
    """Channel id -> (unread count, seq it covers): an event with a seq up to the second number is
    already counted or already read, so a live count adds only events above it. Seqs commit in order
    per channel, so no unread event below the highest one counted can still be on its way."""
    rows = _unread_events(user=user, office=office).values("channel").annotate(unread=Count("id"), through=Max("seq"))
    state = {row["channel"]: (row["unread"], row["through"]) for row in rows}
    marks = ChannelRead.objects.filter(user=user, channel__office=office).values_list("channel_id", "last_seen_seq")
    for channel_id, seen in marks:
        unread, through = state.get(channel_id, (0, 0))
        state[channel_id] = (unread, max(through, seen))
    return state


def _unread_events(*, user, office: Office) -> QuerySet[ChannelEvent]:
    seen = ChannelRead.objects.filter(user=user, channel=OuterRef("channel")).values("last_seen_seq")[:1]
    return (
        ChannelEvent.objects.filter(channel__office=office, type="message")
        .annotate(seen=Coalesce(Subquery(seen), Value(0)))
        .filter(seq__gt=F("seen"))
        .exclude(payload__message__role__in=UNCOUNTED_ROLES)
    )
