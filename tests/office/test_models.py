"""Data that would leak between offices is refused before it is saved."""

import pytest
from django.core.exceptions import ValidationError

from coworkers.models import Coworker
from office.admin import ChannelForm
from office.models import Channel
from sessions.models import MemoryItem


@pytest.fixture
def stranger(other_office) -> Coworker:
    return Coworker.objects.create(office=other_office, name="Zed", slug="zed", role="Spy", persona="…")


def test_a_channel_cannot_be_given_another_offices_coworker(office, stranger):
    channel = Channel(office=office, kind=Channel.Kind.DIRECT, name="Zed", coworker=stranger)
    with pytest.raises(ValidationError, match="another office"):
        channel.full_clean()


def test_a_project_cannot_take_members_from_another_office(office, mina, stranger):
    form = ChannelForm(
        data={"office": office.pk, "kind": "project", "name": "launch", "members": [mina.pk, stranger.pk]}
    )
    assert not form.is_valid()
    assert form.errors["members"] == ["Not in this office: Zed."]


def test_a_memory_item_cannot_point_into_another_office(office, stranger):
    item = MemoryItem(office=office, scope="coworker", coworker=stranger, text="Prefers tea", kind="preference")
    with pytest.raises(ValidationError, match="another office"):
        item.full_clean()


def test_a_direct_channel_needs_its_one_coworker(office):
    with pytest.raises(ValidationError, match="exactly one coworker"):
        Channel(office=office, kind=Channel.Kind.DIRECT, name="nobody").full_clean()
