"""Meetings: participants take turns on an agenda for a bounded number of rounds, then notes.

The notes are the meeting folded like any summary (decisions with reasons,
follow-ups with owners). Decisions become memory items; each follow-up becomes a
task in its owner's 1:1 channel.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from langchain_core.messages import HumanMessage

from coworkers.models import Coworker
from coworkers.providers import CompletionRequest, Provider, get_provider
from office import rendering
from office.models import Channel, Office

from . import extract, history, memory, summarize
from .models import Message, Task
from .services import record_from_row, task_messages

log = logging.getLogger(__name__)

MAX_ROUNDS = 3
MEETING_ACTOR = "meeting"
NOTES_INSTRUCTIONS = """Write the notes of this meeting. Sections, in this order, omitting empty ones:
## Decisions (each with its reason)
## Commitments and next steps (each as "(Name) what they will do, by when")
## Open questions
Only what was actually said. Stay within {max_chars} characters. Reply with the notes only."""


def start_meeting(
    *, office: Office, title: str, agenda: str, participants: Sequence[Coworker], rounds: int = 2, provider=None
) -> tuple[Channel, Task]:
    """Open a meeting channel and start it: each participant speaks in turn, `rounds` times."""
    from .pipeline import InstructionRejected, post_instruction

    people = list(dict.fromkeys(participants))
    if len(people) < 2:
        raise InstructionRejected("participants", "A meeting needs at least two participants.")
    if any(p.office_id != office.pk for p in people):
        raise InstructionRejected("participants", "Every participant must belong to this office.")
    if not agenda.strip():
        raise InstructionRejected("agenda", "A meeting needs an agenda.")
    rounds = max(1, min(rounds, MAX_ROUNDS))
    with transaction.atomic():
        channel = Channel.objects.create(office=office, kind=Channel.Kind.MEETING, name=title.strip() or "Meeting", agenda=agenda)
        channel.members.set(people)
        task = post_instruction(
            channel=channel,
            text=f"Meeting: {channel.name}\nAgenda:\n{agenda.strip()}\n\nEach of you in turn: say what you think and propose decisions and next steps.",
            coworker=people[0],
            origin={"meeting": channel.pk, "rounds": rounds},
            provider=provider,
        )
        Task.objects.filter(pk=task.pk).update(responders=[p.slug for p in people] * rounds)
    task.refresh_from_db()
    return channel, task


def close_meeting(task: Task, provider: Provider | None = None) -> dict:
    """Write the notes, remember the decisions and start the follow-ups. Runs once per meeting task."""
    channel = task.session.channel
    if Message.objects.filter(session=task.session, turn=task.turn, role=Message.Role.NOTICE, content__startswith="Meeting notes").exists():
        return {}  # already closed (a second delivery); another notice (a spending limit reached) is not the notes
    records = history.TaskRecords(task.turn, tuple(record_from_row(row) for row in task_messages(task.session, turn=task.turn)))
    provider = provider or get_provider()
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
    notes = summarize.parse_summary(completion.text)
    team = {c.name.lower(): c for c in channel.members.all()} | {c.slug: c for c in channel.members.all()}
    decisions = [b.body for b in notes.get(summarize.DECISIONS, [])]
    follow_ups = [_owner_and_text(b, team) for b in notes.get(summarize.COMMITMENTS, [])]

    from . import services
    from .pipeline import post_instruction

    notes_text = "Meeting notes\n\n" + completion.text.strip()
    notes_html = rendering.render(notes_text)  # before the transaction: rendering holds no lock
    with transaction.atomic():
        services.append_message(
            session=task.session, turn=task.turn, role=Message.Role.NOTICE, content=notes_text, html=notes_html
        )
        for text in decisions:
            candidate = extract.Candidate(text=text, kind="decision")
            known = [extract.Existing(i.pk, i.text, i.kind) for i in channel.office.memory_items.filter(active=True)[:500]]
            memory.apply_decision(
                extract.decide(candidate, memory.most_similar(text, known)), office_id=channel.office_id, task=task, actor=MEETING_ACTOR
            )
        started = []
        for owner, text in follow_ups:
            if owner is None:
                continue  # nobody in the meeting owns it: it stays in the notes
            direct = Channel.objects.filter(office_id=channel.office_id, kind=Channel.Kind.DIRECT, coworker=owner).first()
            if direct is None:
                direct = Channel.objects.create(office_id=channel.office_id, kind=Channel.Kind.DIRECT, name=owner.name, coworker=owner)
            started.append(
                post_instruction(
                    channel=direct,
                    text=f"Follow-up from the meeting “{channel.name}”: {text}",
                    coworker=owner,
                    origin={"meeting": channel.pk, "follow_up": text},
                    handed_off_from=task,
                    provider=provider,
                )
            )
    return {"decisions": decisions, "follow_ups": [t.pk for t in started]}


OWNER = re.compile(r"^\((?P<paren>[^)]{1,40})\)\s*|^(?P<word>[\w-]+)\b")


def _owner_and_text(bullet: summarize.Bullet, team: dict[str, Coworker]) -> tuple[Coworker | None, str]:
    """Who owns a follow-up: the bullet's speaker, or a leading "(Name)" or name in its text."""
    if bullet.who and bullet.who.lower() in team:
        return team[bullet.who.lower()], bullet.body
    match = OWNER.match(bullet.body)
    name = (match.group("paren") or match.group("word") or "").lower() if match else ""
    if name in team:
        text = bullet.body[match.end() :] if match.group("paren") else bullet.body
        return team[name], text.strip()
    return None, bullet.body
