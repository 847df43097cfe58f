"""embed_history [--session ID]: the vectors for recall's search by meaning that history lacks."""

from django.core.management.base import BaseCommand, CommandError

from sessions import upkeep, vectors
from sessions.models import Session


class Command(BaseCommand):
    help = (
        "Embed the exchanges that have no vector yet (history from before the search by meaning, "
        "or from while MEANING_SEARCH was off), every session's or one's. Safe to run again: "
        "it embeds only what is missing. Until then, those exchanges are found by their words."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--session", type=int, default=None, help="only this session")

    def handle(self, *args, session: int | None, **options) -> None:
        if not vectors.enabled():
            raise CommandError("The search by meaning is off (MEANING_SEARCH=0) or its model's package is not installed.")
        sessions = Session.objects.order_by("pk")
        if session is not None:
            sessions = sessions.filter(pk=session)
            if not sessions.exists():
                raise CommandError(f"There is no session with id {session}.")
        failed = 0
        for one in sessions.iterator():
            if not upkeep.embed_session(one, progress=lambda line, pk=one.pk: self.stderr.write(f"session {pk}: {line}")):
                failed += 1
            # The search checks its copy of a channel's vectors against these totals: set them right.
            vectors.count_again(one.pk)
        if failed:
            raise CommandError(f"{failed} session(s) stopped part-way; run the command again for the rest.")
        self.stdout.write("every exchange that can be read has its vector")
