"""import_session FILE --channel ID: a JSONL history becomes the channel's new session."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from office.models import Channel
from sessions import services, upkeep


class Command(BaseCommand):
    help = (
        "Import a JSONL history (one message record a line) as a new session of a channel; "
        "the channel's current session is ended. Prints one JSON line: session, tasks, messages, "
        "skipped_lines, repaired_tool_calls. The session is then indexed, its memory extracted and its older tasks "
        "folded into the summary, as if it had been lived. A last line cut off mid-write is skipped and reported; "
        "any other bad line is an error naming its line number, and nothing is imported."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the JSONL file, or - for standard input")
        parser.add_argument("--channel", type=int, required=True, help="the id of the channel to import into")

    def handle(self, *args, file: str, channel: int, **options) -> None:
        target = Channel.objects.filter(pk=channel).first()
        if target is None:
            raise CommandError(f"There is no channel with id {channel}.")
        try:
            result = services.import_session(channel=target, data=_read_bytes(file))
        except services.ImportRejected as error:
            raise CommandError(f"{file}: {error}. Nothing was imported.") from error

        # Index, extract memory and fold as if the session had been lived, so its
        # next prompt has a summary, memory and recall like any other.
        caught_up = upkeep.catch_up(result.session, progress=lambda line: self.stderr.write(line))

        for line in result.skipped_lines:
            self.stderr.write(f"skipped line {line}: an interrupted write (no newline at the end, not valid JSON)")
        for call_id in result.repaired_tool_calls:
            self.stderr.write(
                f"tool call {call_id} has no result: prompts will show it as interrupted (a synthetic error result)"
            )
        if not caught_up:
            self.stderr.write(
                f"session {result.session.pk} is imported, but not all of it is indexed, extracted and folded (see above)"
            )
        self.stdout.write(json.dumps(result.summary()))


# Far more than any history (10,000 tasks are about 20 MB), and far less than the memory a
# mistaken path such as /dev/zero would take.
MAX_IMPORT_BYTES = 512 * 1024 * 1024


def _read_bytes(file: str) -> bytes:
    # Bytes, not text: a crash can cut the last line in the middle of a UTF-8
    # character, and the parser treats that as the interrupted write it is.
    try:
        if file == "-":
            data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        else:
            with open(file, "rb") as handle:
                data = handle.read(MAX_IMPORT_BYTES + 1)
    except OSError as error:
        raise CommandError(f"Cannot read {file}: {error.strerror}.") from error
    if len(data) > MAX_IMPORT_BYTES:
        raise CommandError(f"{file} is larger than {MAX_IMPORT_BYTES // 2**20:,} MB. Nothing was imported.")
    return data
