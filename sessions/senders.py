"""Who wrote an instruction the person did not type: a coworker handing work on, or a meeting's
follow-up. The page shows that name instead of "You", live (the `message` frame's `sent_by`),
in the snapshot a page draws on connect, on the stored page and in search results.

Read from the task's origin: `{"handoff_from": …, "by": slug}` (coworkers.tools) or
`{"meeting": …, "follow_up": …}` (sessions.meetings). An instruction a person typed records
who (`{"person": user id}`): in a channel several people share, each sees "You" on their own
instructions and the others' names on theirs (`written_by`; live frames carry `author`, and the
page tells its own from the others'). Imports no other module of the app but the coworkers'
model, so posting, events and the views can all use it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model

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


def author(origin: dict | None) -> int | None:
    """The person who typed the instruction, when its task says (instructions stored before it did do not)."""
    person = origin.get("person") if isinstance(origin, dict) else None
    return person if isinstance(person, int) and not isinstance(person, bool) else None


def written_by(origin: dict | None, names: dict[str, str], people: dict[int, str], viewer: int | None) -> str:
    """Who an instruction is shown as written by to `viewer`: a coworker or a meeting as `sent_by`
    says, another person by name, or "" for the viewer's own words ("You")."""
    if who := sent_by(origin, names):
        return who
    person = author(origin)
    return "" if person is None or person == viewer else people.get(person) or FORMER_MEMBER


FORMER_MEMBER = "A former member"


def coworker_names(office_id: int) -> dict[str, str]:
    return dict(Coworker.objects.filter(office_id=office_id).values_list("slug", "name"))


def needs_coworker_names(origins: Iterable[dict | None]) -> bool:
    """Whether any of these instructions was written by a coworker (only then are names looked up)."""
    return any(isinstance(origin, dict) and origin.get("by") for origin in origins)


def person_names(origins: Iterable[dict | None]) -> dict[int, str]:
    """The people who typed these instructions, by id: their full name, else their username."""
    ids = {person for origin in origins if (person := author(origin)) is not None}
    if not ids:
        return {}
    return {user.pk: display_name(user) for user in get_user_model().objects.filter(pk__in=ids).only("first_name", "last_name", "username")}


def display_name(user) -> str:
    return user.get_full_name().strip() or user.get_username()


def with_sender(payload: dict, origin: dict | None, names: dict[str, str], people: dict[int, str]) -> dict:
    """A message payload of an instruction, with `sent_by` when no person typed it, or `author`
    (id and name) when one did: a frame goes to every member, and each page tells its own."""
    if who := sent_by(origin, names):
        payload["sent_by"] = who
    elif (person := author(origin)) is not None:
        payload["author"] = {"id": person, "name": people.get(person) or FORMER_MEMBER}
    if asked_again(origin):
        payload["asked_again"] = True
    return payload


def asked_again(origin: dict | None) -> bool:
    """Is this instruction an earlier one sent again with Regenerate (the same words, a new reply)?"""
    return isinstance(origin, dict) and bool(origin.get("regenerates"))
