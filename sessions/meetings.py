"""Meetings: participants take turns on an agenda for a bounded number of rounds, then notes.

The notes are the meeting folded like any summary (decisions with reasons,
follow-ups with owners). Decisions become memory items; each follow-up becomes a
task in its owner's 1:1 channel. The notes link to both, and each follow-up links
back to the meeting (its task's origin).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from langchain_core.messages import HumanMessage

from coworkers.models import Coworker
from coworkers.providers import CompletionRequest, Provider, get_provider
from office import rendering
from office.models import Channel, Office

from . import extract, history, memory, spending, summarize
from .models import MemoryEvent, MemoryItem, Message, Task
from .posting import InstructionRejected, has_visible_text, post_instruction, post_message
from .services import record_from_row, task_messages

log = logging.getLogger(__name__)

MAX_ROUNDS = 3
# Each participant speaks once a round: a bigger meeting is a long, costly task.
MAX_PARTICIPANTS = 6
MAX_AGENDA_CHARS = 4_000
MAX_TITLE_CHARS = 100  # Channel.name
MEETING_ACTOR = "meeting"
# The notes are stored as a notice that starts with this (the page shows them formatted).
NOTES_MARK = "Meeting notes"
NOTES_INSTRUCTIONS = """Write the notes of this meeting. Sections, in this order, omitting empty ones:
## Decisions (each with its reason)
## Commitments and next steps (each as "(Name) what they will do, by when")
## Open questions
Only what was actually said. Stay within {max_chars} characters. Reply with the notes only."""


@dataclass(frozen=True)
class FollowUp:
    owner: Coworker | None
    text: str


def start_meeting(
    *, office: Office, title: str, agenda: str, participants: Sequence[Coworker], rounds: int = 2, provider=None
) -> tuple[Channel, Task]:
    """Open a meeting channel and start it: each participant speaks in turn, `rounds` times."""
    people = list(dict.fromkeys(participants))
    agenda = agenda.strip()
    if len(people) < 2:
        raise InstructionRejected("participants", "A meeting needs at least two participants.")
    if len(people) > MAX_PARTICIPANTS:
        raise InstructionRejected("participants", f"A meeting can have at most {MAX_PARTICIPANTS} participants.")
    if any(p.office_id != office.pk for p in people):
        raise InstructionRejected("participants", "Every participant must belong to this office.")
    if not agenda or not has_visible_text(agenda):
        raise InstructionRejected("agenda", "A meeting needs an agenda.")
    if len(agenda) > MAX_AGENDA_CHARS:
        raise InstructionRejected("agenda", f"An agenda can be at most {MAX_AGENDA_CHARS:,} characters.")
    rounds = max(1, min(rounds, MAX_ROUNDS))
    name = " ".join(title.split())[:MAX_TITLE_CHARS]
    name = name if has_visible_text(name) else "Meeting"  # zero-width and direction marks alone are no title
    with transaction.atomic():
        channel = Channel.objects.create(office=office, kind=Channel.Kind.MEETING, name=name, agenda=agenda)
        channel.members.set(people)
        # Only the agenda: how a meeting runs is in the system prompt (sessions.context), so the
        # notes, drawn from what was said, do not take those words for a commitment.
        task = post_instruction(
            channel=channel,
            text=f"Agenda of the meeting “{name}”:\n{agenda}",
            coworker=people[0],
            origin={"meeting": channel.pk, "rounds": rounds},
            provider=provider,
        )
        Task.objects.filter(pk=task.pk).update(responders=[p.slug for p in people] * rounds)
    task.refresh_from_db()
    log.info("meeting %s started in channel %s: %s, %s round(s)", task.pk, channel.pk, ",".join(p.slug for p in people), rounds)
    return channel, task


def close_meeting(task: Task, provider: Provider | None = None) -> dict:
    """Write the notes, remember the decisions and start the follow-ups. Safe to run twice:
    the follow-ups are instructions with fixed client ids, the decisions are remembered once,
    and a meeting with notes is left alone."""
    channel = task.session.channel
    if notes_of(task) is not None:
        return {}  # already closed (a second delivery); another notice (a spending limit reached) is not the notes
    provider = provider or get_provider()
    records = history.TaskRecords(task.turn, tuple(record_from_row(row) for row in task_messages(task.session, turn=task.turn)))
    if getattr(provider, "offline", False):
        # An offline turn only restates its prompt; the notes come from what the person wrote.
        records = history.TaskRecords(task.turn, tuple(r for r in records.records if r.role == "user"))
    max_chars = 3_000
    completion = provider.complete(
        CompletionRequest(
            purpose="fold",
            system=(NOTES_INSTRUCTIONS.format(max_chars=max_chars),),
            messages=(HumanMessage(records.transcript(user_label="Agenda")),),
            model=settings.SUMMARY_MODEL,
            max_output_tokens=1_500,
            payload={"previous": "", "tasks": [records], "max_chars": max_chars, "multi_speaker": True},
        )
    )
    spending.record_call(office_id=channel.office_id, task=task, completion=completion, provider=provider, slug=spending.MEETING_NOTES)
    sections = summarize.parse_summary(completion.text)
    team = {c.name.lower(): c for c in channel.members.all()} | {c.slug: c for c in channel.members.all()}
    decisions = [b.body for b in sections.get(summarize.DECISIONS, [])]
    follow_ups = [FollowUp(*owner_and_text(b, team)) for b in sections.get(summarize.COMMITMENTS, [])]
    questions = [b.body for b in sections.get(summarize.QUESTIONS, [])]

    items = remember_decisions(task, decisions)
    started = start_follow_ups(task, follow_ups, provider)

    notes_text = render_notes(
        decisions=[(text, item_url(channel.office, item)) for text, item in zip(decisions, items)],
        follow_ups=[(f.owner.name if f.owner else "", f.text, task_url(t) if t else "") for f, t in zip(follow_ups, started)],
        questions=questions,
    )
    notes_html = rendering.render(notes_text)  # before the transaction: rendering holds no lock
    with transaction.atomic():
        post_message(session=task.session, turn=task.turn, role=Message.Role.NOTICE, content=notes_text, html=notes_html)
    return {"decisions": decisions, "follow_ups": [t.pk for t in started if t]}


def notes_of(task: Task) -> Message | None:
    return (
        task_messages(task.session, turn=task.turn)
        .filter(role=Message.Role.NOTICE, content__startswith=NOTES_MARK)
        .first()
    )


def remember_decisions(task: Task, decisions: Sequence[str]) -> list[MemoryItem | None]:
    """Each decision into the office's memory (ADD, UPDATE or NOOP against what is there); the item
    it ended up as, in order. Remembered once: a second run reads the first one's audit log."""
    channel = task.session.channel
    earlier = list(MemoryEvent.objects.filter(source_task=task, actor=MEETING_ACTOR).select_related("item").order_by("pk"))
    if earlier:
        items = [event.item for event in earlier]
        return (items + [None] * len(decisions))[: len(decisions)]
    items = []
    with transaction.atomic():
        for text in decisions:
            candidate = extract.Candidate(text=text, kind="decision")
            known = [extract.Existing(i.pk, i.text, i.kind) for i in channel.office.memory_items.filter(active=True)[:500]]
            event = memory.apply_decision(
                extract.decide(candidate, memory.most_similar(text, known)), office_id=channel.office_id, task=task, actor=MEETING_ACTOR
            )
            items.append(event.item)
    return items


# Follow-up tasks one meeting starts: each is a paid reply that may hand on again, and the notes
# are a model's. Past these, the commitments stay in the notes only.
MAX_FOLLOW_UP_TASKS = 8


def start_follow_ups(task: Task, follow_ups: Sequence[FollowUp], provider: Provider | None) -> list[Task | None]:
    """A task in the owner's 1:1 for each follow-up with an owner (None for the others, and for those
    past MAX_FOLLOW_UP_TASKS), in order."""
    channel = task.session.channel
    started: list[Task | None] = []
    owned = 0
    for number, follow_up in enumerate(follow_ups, start=1):
        if follow_up.owner is None or owned >= MAX_FOLLOW_UP_TASKS:
            started.append(None)  # nobody in the meeting owns it, or enough were started: it stays in the notes
            continue
        owned += 1
        direct = direct_channel_of(follow_up.owner)
        client_id = f"meeting-{task.pk}-{number}"
        if earlier := Task.objects.filter(session__channel=direct, client_id=client_id).first():
            started.append(earlier)  # a second run: the first one started it
            continue
        started.append(
            post_instruction(
                channel=direct,
                text=f"Follow-up from the meeting “{channel.name}”: {follow_up.text}",
                # Fixed per meeting and follow-up: a second run finds the task the first one started.
                client_id=client_id,
                coworker=follow_up.owner,
                origin={"meeting": channel.pk, "follow_up": follow_up.text},
                handed_off_from=task,
                provider=provider,
            )
        )
    return started


def direct_channel_of(coworker: Coworker) -> Channel:
    channel, _ = Channel.objects.get_or_create(
        office_id=coworker.office_id, kind=Channel.Kind.DIRECT, coworker=coworker, defaults={"name": coworker.name}
    )
    return channel


def render_notes(
    *, decisions: Sequence[tuple[str, str]], follow_ups: Sequence[tuple[str, str, str]], questions: Sequence[str]
) -> str:
    """The notes as markdown: decisions (with where they are remembered), follow-ups (owner, text and
    their task), open questions. Pure."""
    blocks = [NOTES_MARK]
    if decisions:
        lines = [f"- {text}" + (f" ([remembered]({url}))" if url else "") for text, url in decisions]
        blocks.append("## Decisions\n" + "\n".join(lines))
    if follow_ups:
        lines = []
        for owner, text, url in follow_ups:
            if owner and url:
                # "Theo will fix…" reads as it is, with the owner in bold; "fix…" gets its owner in front.
                said = f"**{owner}**{text[len(owner):]}" if text.lower().startswith(owner.lower() + " ") else f"**{owner}**: {text}"
                lines.append(f"- {said} ([follow-up in {owner}’s 1:1]({url}))")
            else:
                lines.append(f"- {text} (nobody in the meeting owns this yet)")
        blocks.append("## Follow-ups\n" + "\n".join(lines))
    if questions:
        blocks.append("## Open questions\n" + "\n".join(f"- {text}" for text in questions))
    if len(blocks) == 1:
        blocks.append("Nothing was decided and nobody took anything on.")
    return "\n\n".join(blocks)


def item_url(office: Office, item: MemoryItem | None) -> str:
    return reverse("memory", args=[office.slug]) + f"#item-{item.pk}" if item is not None and item.active else ""


def task_url(task: Task) -> str:
    """A link that opens the task wherever its conversation is when it is followed (office.channel_views)."""
    return reverse("open_task", args=[task.pk])


# "(Theo) fix…", "**Theo**: fix…", "Theo: fix…" (the name is a label: dropped from the text) or
# "Theo will fix…" (the name is the sentence's subject: kept).
OWNER = re.compile(
    r"^\((?P<paren>[^)]{1,40})\)\s*|^\*\*(?P<bold>[^*]{1,40})\*\*\s*[:：–—-]?\s*"
    r"|^(?P<word>[\w-]+)\b(?P<label>\s*[:：–—]\s*)?"
)


def owner_and_text(bullet: summarize.Bullet, team: dict[str, Coworker]) -> tuple[Coworker | None, str]:
    """Who owns a follow-up: the bullet's speaker, or a leading "(Name)" or name in its text."""
    if bullet.who and bullet.who.lower() in team:
        return team[bullet.who.lower()], bullet.body
    match = OWNER.match(bullet.body)
    name = (match.group("paren") or match.group("bold") or match.group("word") or "").strip().lower() if match else ""
    if name in team:
        labelled = match.group("paren") or match.group("bold") or match.group("label")
        text = bullet.body[match.end() :] if labelled else bullet.body
        return team[name], text.strip()
    return None, bullet.body
