"""Project channels: a name, a topic and the coworkers who work in them. The write side of the
"New project" page (office.channel_views); what happens in the channel is the pipeline's."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction

from coworkers.models import Coworker
from sessions.posting import has_visible_text

from .markdown import few_marks
from .models import Channel, Office

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 100  # Channel.name
MAX_TOPIC_CHARS = 300  # Channel.topic


class ProjectRejected(ValueError):
    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail


def create_project(*, office: Office, name: str, topic: str, members: Sequence[Coworker]) -> Channel:
    """A project channel of `office` with these coworkers in it. Names are one per office, in any case."""
    name, topic, people = _checked(office, name, topic, members)
    with transaction.atomic():
        _name_is_free(office, name)
        channel = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name=name, topic=topic)
        channel.members.set(people)
    log.info("project channel %s created in office %s: %s", channel.pk, office.pk, ",".join(p.slug for p in people))
    return channel


def update_project(channel: Channel, *, name: str, topic: str, members: Sequence[Coworker]) -> Channel:
    """The same project under a new name, topic or team (its conversations stay as they are)."""
    name, topic, people = _checked(channel.office, name, topic, members)
    with transaction.atomic():
        _name_is_free(channel.office, name, but=channel)
        Channel.objects.filter(pk=channel.pk).update(name=name, topic=topic)
        channel.members.set(people)
    channel.refresh_from_db()
    log.info("project channel %s now: %s", channel.pk, ",".join(p.slug for p in people))
    return channel


def _checked(office: Office, name: str, topic: str, members: Sequence[Coworker]) -> tuple[str, str, list[Coworker]]:
    # As in messages: a run of stacked accents over a name drew across every member's sidebar.
    name, topic = few_marks(" ".join(name.split())), few_marks(" ".join(topic.split()))
    people = list(dict.fromkeys(members))
    if not name or not has_visible_text(name):  # zero-width and direction marks alone are no name
        raise ProjectRejected("name", "A project needs a name.")
    if len(name) > MAX_NAME_CHARS:
        raise ProjectRejected("name", f"A project name can be at most {MAX_NAME_CHARS} characters.")
    if len(topic) > MAX_TOPIC_CHARS:
        raise ProjectRejected("topic", f"A topic can be at most {MAX_TOPIC_CHARS} characters.")
    if not people:
        raise ProjectRejected("coworkers", "Pick at least one coworker to work on it.")
    if any(p.office_id != office.pk for p in people):
        raise ProjectRejected("coworkers", "Every coworker must belong to this office.")
    return name, topic, people


def _name_is_free(office: Office, name: str, *, but: Channel | None = None) -> None:
    taken = office.channels.filter(kind=Channel.Kind.PROJECT, name__iexact=name)
    if but is not None:
        taken = taken.exclude(pk=but.pk)
    if taken.exists():
        raise ProjectRejected("name", f"This office already has a project called “{name}”.")
