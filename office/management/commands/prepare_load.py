"""prepare_load: the accounts the load tool (benchmarks/load.py) signs in with. Each client gets an
office of its own (one coworker, its 1:1 channel, one member), so no two clients share a session.

Idempotent: offices, users, coworkers and channels are found by natural key and only missing ones
are created. Every run sets a fresh password on all of them (printed, with the channel ids, as one
JSON object), so a load account never keeps a password anybody has seen before.
"""

from __future__ import annotations

import json
import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from coworkers.models import Coworker
from office.models import Channel, Membership, Office

COWORKER = {
    "slug": "pace",
    "name": "Pace",
    "role": "Load-test coworker",
    "persona": "You answer load-test instructions. Your replies are generated at a fixed pace.",
}


class Command(BaseCommand):
    help = (
        "Create (once) the offices, users and 1:1 channels of the load tool's clients, set a fresh password "
        "on them, and print {\"password\": …, \"accounts\": [{\"username\": …, \"channel\": …}, …]} as JSON."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--clients", type=int, required=True, help="how many accounts (one per client)")
        parser.add_argument("--prefix", default="load", help="names are PREFIX-0001, PREFIX-0002, … (default: load)")

    def handle(self, *args, clients: int, prefix: str, **options) -> None:
        if clients < 1:
            raise CommandError("--clients must be at least 1.")
        password = secrets.token_urlsafe(18)
        accounts = prepare_accounts(clients=clients, prefix=prefix, password=password)
        self.stdout.write(json.dumps({"password": password, "accounts": accounts}))


@transaction.atomic
def prepare_accounts(*, clients: int, prefix: str, password: str) -> list[dict]:
    User = get_user_model()
    # One hash for every account: hashing is deliberately slow (about half a second here), and
    # these are throwaway accounts whose password is printed anyway.
    hashed = make_password(password)
    accounts = []
    for number in range(1, clients + 1):
        name = f"{prefix}-{number:04d}"
        office, _ = Office.objects.get_or_create(slug=name, defaults={"name": f"Load {number:04d}"})
        user, _ = User.objects.get_or_create(username=name)
        Membership.objects.get_or_create(office=office, user=user, defaults={"role": Membership.Role.OWNER})
        fields = {key: value for key, value in COWORKER.items() if key != "slug"}
        coworker, _ = Coworker.objects.get_or_create(office=office, slug=COWORKER["slug"], defaults=fields)
        channel, _ = Channel.objects.get_or_create(
            office=office, kind=Channel.Kind.DIRECT, coworker=coworker, defaults={"name": coworker.name}
        )
        accounts.append({"username": name, "user": user.pk, "channel": channel.pk})
    User.objects.filter(pk__in=[account["user"] for account in accounts]).update(password=hashed, is_active=True)
    return [{"username": account["username"], "channel": account["channel"]} for account in accounts]
