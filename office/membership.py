"""A membership that ends closes that person's open sockets of the office at once.

Sockets check membership when they connect; one already open would otherwise keep hearing the
office's instructions, replies and deltas. Deleting a Membership (in /admin/, by deleting the user,
or in code) tells the person's sockets after the commit, through the person's group; each socket of
that office closes with 4403. The sockets' periodic re-join checks again, for a notice that was lost.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from . import events
from .models import Membership


@receiver(post_delete, sender=Membership)
def membership_ended(sender, instance: Membership, **kwargs) -> None:
    revoke(user_id=instance.user_id, office_id=instance.office_id)


@receiver(post_save, sender=Membership)
def membership_saved(sender, instance: Membership, created: bool, **kwargs) -> None:
    # A membership moved to another office ends the old one; Django does not say which that was,
    # so every socket of this person re-checks (cheap: one query each, for a rare admin edit).
    if not created:
        revoke(user_id=instance.user_id, office_id=None)


def revoke(*, user_id: int, office_id: int | None) -> None:
    """After the commit (a rolled-back delete ends nothing): `office_id` None means "any office:
    check again"."""
    transaction.on_commit(lambda: events.send_to_person(user_id, {"type": events.REVOKED_TYPE, "office": office_id}))
