"""export_session SESSION_ID: the session's history as JSONL on standard output."""

import os
import sys

from django.core.management.base import BaseCommand, CommandError

from sessions import services
from sessions.models import Session


class Command(BaseCommand):
    help = "Write a session's messages as JSONL, one record a line, in chain order, to standard output."

    def add_arguments(self, parser) -> None:
        parser.add_argument("session_id", type=int)

    def handle(self, *args, session_id: int, **options) -> None:
        session = Session.objects.filter(pk=session_id).first()
        if session is None:
            raise CommandError(f"There is no session with id {session_id}.")
        try:
            for line in services.export_session(session):
                self.stdout.write(line, ending="")
            self.stdout.flush()
        except BrokenPipeError:
            # The reader stopped early (`| head`): that is not an error. Point stdout
            # at /dev/null so Python's exit-time flush does not raise again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
