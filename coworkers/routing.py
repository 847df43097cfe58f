"""Who answers an instruction: the 1:1's coworker, whoever is @mentioned, or the router's pick.

The router is a cheap model call (purpose "route"); offline it matches the
instruction against each coworker's role and skills.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

from django.conf import settings
from langchain_core.messages import HumanMessage

from office import markdown
from office.models import Channel

from .models import Coworker
from .providers import CompletionRequest, Provider, ProviderError

log = logging.getLogger(__name__)

MENTION = re.compile(r"(?<![\w@])@([\w.-]+)")

ROUTER_INSTRUCTIONS = """You route instructions in a virtual office to the coworkers best placed to answer.
Reply with JSON only: a list of coworker slugs, best first (usually one). In an all-hands channel,
list only those who have something useful to add; an empty list is fine."""


def mentioned_slugs(text: str, team: Sequence[Coworker]) -> list[str]:
    """Slugs of the coworkers @mentioned, by slug or first name, in the order they appear."""
    by_handle = {c.slug.lower(): c.slug for c in team} | {c.name.split()[0].lower(): c.slug for c in team}
    found: list[str] = []
    # Code quoted in an instruction addresses nobody: a decorator (`@theo.route`), a log line, a
    # fence. What is code is what the rendered message shows as code.
    for handle in MENTION.findall(markdown.prose(text)):
        slug = by_handle.get(handle.lower().rstrip(".-"))
        if slug and slug not in found:
            found.append(slug)
    return found


def team_of(channel: Channel) -> list[Coworker]:
    if channel.kind == Channel.Kind.DIRECT:
        return [channel.coworker]
    if channel.kind in (Channel.Kind.PROJECT, Channel.Kind.MEETING):
        members = list(channel.members.order_by("name"))
        if members:
            return members
    return list(channel.office.coworkers.order_by("name"))


class NotInChannel(ValueError):
    """The instruction @mentions only coworkers who are not in this project or meeting: answered by
    someone else instead, the person would not know their question went elsewhere."""


def choose_responders(channel: Channel, text: str, provider: Provider) -> list[Coworker]:
    """The coworkers who answer, in order. Never empty, except in all-hands (nobody may have anything to add)."""
    team = team_of(channel)
    if channel.kind == Channel.Kind.DIRECT:
        return team[:1]
    by_slug = {c.slug: c for c in team}
    mentioned = mentioned_slugs(text, team)
    if mentioned:
        return [by_slug[s] for s in mentioned]
    if channel.kind in (Channel.Kind.PROJECT, Channel.Kind.MEETING):
        refuse_outsiders(channel, text, team)
    if len(team) == 1:
        return team
    picked = [by_slug[s] for s in _route(channel, text, team, provider) if s in by_slug]
    if picked or channel.kind == Channel.Kind.ALL_HANDS:
        return picked
    return team[:1]


def refuse_outsiders(channel: Channel, text: str, team: Sequence[Coworker]) -> None:
    """Raise NotInChannel when the text @mentions coworkers of the office and none of them is in `team`."""
    outside = [c for c in channel.office.coworkers.order_by("name") if c not in team]
    named = {c.slug: c.name for c in outside}
    mentioned = [named[slug] for slug in mentioned_slugs(text, outside)]
    if not mentioned:
        return
    who = _names(mentioned)
    raise NotInChannel(
        f"{who} {'is' if len(mentioned) == 1 else 'are'} not in #{channel.name}. Ask {_names([c.name for c in team], 'or')} "
        f"here, or {who} in {'their 1:1' if len(mentioned) == 1 else 'their 1:1s'}."
    )


def _names(names: Sequence[str], last: str = "and") -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def _route(channel: Channel, text: str, team: Sequence[Coworker], provider: Provider) -> list[str]:
    request = CompletionRequest(
        purpose="route",
        system=(ROUTER_INSTRUCTIONS,),
        messages=(HumanMessage(_describe(channel, text, team)),),
        model=settings.ROUTER_MODEL,
        max_output_tokens=100,
        payload={
            "instruction": text,
            "channel_kind": channel.kind,
            "coworkers": [{"slug": c.slug, "name": c.name, "role": c.role, "skills": list(c.skills or [])} for c in team],
        },
    )
    try:
        answer = provider.complete(request).text
        start, end = answer.find("["), answer.rfind("]")
        slugs = json.loads(answer[start : end + 1]) if start != -1 and end > start else []
        return [s for s in slugs if isinstance(s, str)]
    except (ProviderError, json.JSONDecodeError) as error:
        # Routing is a convenience: when it fails, the first coworker answers.
        log.warning("routing failed in channel %s: %s", channel.pk, error)
        return []


def _describe(channel: Channel, text: str, team: Sequence[Coworker]) -> str:
    lines = [f"Channel kind: {channel.kind}", "Coworkers:"]
    lines += [f"- {c.slug}: {c.name}, {c.role}; skills: {', '.join(c.skills or [])}" for c in team]
    lines += ["", f"Instruction: {text}"]
    return "\n".join(lines)
