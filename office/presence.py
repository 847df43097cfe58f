"""What the sidebar says about an office, for one person: who is working and what is unread in the
channels they can see. The page renders it; the office socket (office.office_consumer) sends it on
connect and keeps it live. Reads only; imports no provider.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from sessions.models import Task

from . import reading
from .models import Channel, Office


def is_member(user, office_id: int) -> bool:
    if user is None or not user.is_authenticated:
        return False
    # Looked up by the office's own pk: Django answers an id past 64 bits with no rows there,
    # where a foreign-key filter would overflow on SQLite.
    return Office.objects.filter(pk=office_id, memberships__user=user).exists()


def visible_channel_ids(user, office_id: int) -> set[int]:
    return set(Channel.objects.visible_to(user).filter(office_id=office_id).values_list("pk", flat=True))


def working_coworkers(*, office_id: int, user=None) -> set[str]:
    """Slugs of the coworkers at work on a task in a channel of the office the person can see
    (every channel when no person is given). A coworker is at work while a task they answer (all
    its responders, in a shared channel) is running on a live lease: a task whose worker died
    shows nobody working."""
    channels = Channel.objects.filter(office_id=office_id) if user is None else Channel.objects.visible_to(user).filter(office_id=office_id)
    running = Task.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__gte=timezone.now()),
        status=Task.Status.RUNNING,
        session__channel__in=channels,
    ).values_list("responders", "coworker", "session__channel__coworker__slug")
    working: set[str] = set()
    for responders, coworker, direct in running:
        # In a 1:1 the channel's coworker answers whatever the task row says.
        working.update(slug for slug in [*(responders or [coworker]), direct] if slug)
    return working


def sidebar_frame(*, user, office_id: int) -> dict:
    """The `sidebar` frame the office socket sends on connect (and again on every reconnect): who is
    working, and per visible channel its unread count and the seq that count covers (see
    reading.unread_through), so live `activity` frames neither miss nor double-count a reply."""
    office = Office.objects.get(pk=office_id)
    visible = visible_channel_ids(user, office_id)
    unread = reading.unread_through(user=user, office=office)
    return {
        "type": "sidebar",
        "working": sorted(working_coworkers(office_id=office_id, user=user)),
        "channels": [
            {"id": pk, "unread": unread.get(pk, (0, 0))[0], "seq": unread.get(pk, (0, 0))[1]} for pk in sorted(visible)
        ],
    }
