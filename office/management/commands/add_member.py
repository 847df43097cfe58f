from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from office.models import Membership, Office


class Command(BaseCommand):
    help = (
        "Give an existing account access to an office (its channels, documents and memory). "
        "Create the account first with createsuperuser or in /admin/. Idempotent."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("office", help="the office's slug, for example acme")
        parser.add_argument("--role", choices=[role.value for role in Membership.Role], default=Membership.Role.MEMBER)

    def handle(self, *args, username: str, office: str, role: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no account {username!r}; create it with createsuperuser or in /admin/.")
        found = Office.objects.filter(slug=office).first()
        if found is None:
            slugs = ", ".join(Office.objects.values_list("slug", flat=True)) or "none yet (try seed_demo)"
            raise CommandError(f"There is no office {office!r}; offices: {slugs}.")
        membership, created = Membership.objects.get_or_create(office=found, user=user, defaults={"role": role})
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        verb = "now belongs to" if created else "already belongs to"
        self.stdout.write(f"{username} {verb} {found.name} ({found.slug}) as {membership.role}.")
