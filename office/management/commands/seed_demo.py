"""seed_demo: the demo office Acme, created once; a thin wrapper over office.demo."""

from django.core.management.base import BaseCommand

from office.demo import DEMO_PASSWORD, DEMO_USERNAME, OFFICE, seed_demo_office


class Command(BaseCommand):
    help = (
        "Create the demo office Acme: five coworkers, a 1:1 channel each, main, all-hands and a project "
        "channel, and (only when DEBUG is on) the user demo with password demo, who is also an admin of /admin/. With DEBUG "
        "off, a demo login left from a development run is switched off. Idempotent: rows are "
        "found by natural key and only missing ones are created; existing rows, and any edits made to "
        "them, are left as they are."
    )

    def handle(self, *args, **options) -> None:
        result = seed_demo_office()
        office = f"{OFFICE['name']} ({OFFICE['slug']})"
        sign_in = f" Sign in as {DEMO_USERNAME} / {DEMO_PASSWORD} (also an admin: /admin/)." if result.users or result.admins else ""
        if result.created:
            counts = ", ".join(
                count(n, noun)
                for n, noun in [
                    (result.offices, "office"),
                    (result.coworkers, "coworker"),
                    (result.channels, "channel"),
                    (result.users, "user"),
                    (result.memberships, "membership"),
                    (result.admins, "admin"),
                ]
                if n
            )
            self.stdout.write(f"Demo office {office}: created {counts}.{sign_in}")
        else:
            self.stdout.write(f"Demo office {office} is already there: nothing created.")
        if result.demo_login_disabled:
            self.stdout.write(
                f"DEBUG is off: the {DEMO_USERNAME} account's demo password and admin rights were switched off."
            )
        if result.demo_user_skipped:
            self.stdout.write(
                f"DEBUG is off: no demo user created; give a real account a Membership in {office} to use it."
            )


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
