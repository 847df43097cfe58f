"""Who wrote an instruction the person did not type: a coworker handing work on, or a meeting's
follow-up. The page shows that name instead of "You", live (the `message` frame's `sent_by`),
in the snapshot a page draws on connect, on the stored page and in search results.

Read from the task's origin: `{"handoff_from": …, "by": slug}` (coworkers.tools) or
`{"meeting": …, "follow_up": …}` (sessions.meetings). Imports no other module of the app but
the coworkers' model, so posting, events and the views can all use it.
"""

from __future__ import annotations

from coworkers.models import Coworker

MEETING_SENDER = "Meeting follow-up"


def sent_by(origin: dict | None, names: dict[str, str]) -> str:
    """The name an instruction is shown as written by, or "" for the person's own words; a
    coworker by today's name (`names`: slug to name)."""
    origin = origin if isinstance(origin, dict) else {}
    if origin.get("follow_up") and origin.get("meeting"):
        return MEETING_SENDER
    by = origin.get("by")
    return (names.get(by) or by.capitalize()) if isinstance(by, str) and by else ""


def coworker_names(office_id: int) -> dict[str, str]:
    return dict(Coworker.objects.filter(office_id=office_id).values_list("slug", "name"))


def with_sender(payload: dict, origin: dict | None, names: dict[str, str]) -> dict:
    """A message payload of an instruction, with `sent_by` when the person did not type it."""
    if who := sent_by(origin, names):
        payload["sent_by"] = who
    return payload
