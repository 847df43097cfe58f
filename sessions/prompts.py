"""Loading a prompt's inputs from the database, and building it: the ORM side of sessions.context.

Touches only the recent window, the latest summary and a bounded slice of the
recall index: a constant number of queries, at task 10 or task 10,000.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.db.models import Q

from coworkers.models import Coworker
from office.models import Channel

from . import context, history, relevance
from .models import ContextPolicy, MemoryItem, Message, RecallTerm, Session, SummaryVersion, Task
from .policy import Policy, default_policy, with_overrides
from .services import record_from_row

# Recall reads at most this many postings for at most this many instruction terms.
RECALL_TERMS = 8
RECALL_POSTINGS = 50
RECALL_CANDIDATES = 6
# Memory is read newest first, pinned always; a prompt never needs more than this many items.
MEMORY_ROWS = 200


def resolve_policy(channel: Channel, coworker: Coworker | None = None) -> Policy:
    """The kind's policy, then the coworker's overrides, then the channel's: one query."""
    target = Q(channel_kind=channel.kind) | Q(channel=channel)
    if coworker is not None:
        target |= Q(coworker=coworker)
    rows = {("kind" if r.channel_kind else "coworker" if r.coworker_id else "channel"): r for r in ContextPolicy.objects.filter(target)}
    policy = default_policy(channel.kind)
    for scope in ("kind", "coworker", "channel"):
        if scope in rows:
            policy = with_overrides(policy, rows[scope].values())
    return policy


def answering_coworker(channel: Channel, session: Session | None = None) -> Coworker | None:
    """Who a prompt is for when nobody said: the 1:1's coworker, else who answered last, else the first."""
    if channel.coworker_id:
        return channel.coworker
    if session is not None:
        last = (
            Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
            .exclude(coworker="")
            .order_by("-position")
            .values_list("coworker", flat=True)
            .first()
        )
        if last:
            found = Coworker.objects.filter(office_id=channel.office_id, slug=last).first()
            if found:
                return found
    return channel.office.coworkers.order_by("name").first()


def system_context(channel: Channel, coworker: Coworker | None) -> context.SystemContext:
    if channel.kind in (Channel.Kind.PROJECT, Channel.Kind.MEETING):
        present = list(channel.members.all())
    elif channel.kind == Channel.Kind.DIRECT:
        present = []
    else:
        present = list(channel.office.coworkers.all())
    return context.SystemContext(
        office=channel.office.name,
        channel_kind=channel.kind,
        channel_name=channel.name,
        coworker=context.Colleague(coworker.name, coworker.role, coworker.slug) if coworker else None,
        persona=coworker.persona if coworker else "",
        skills=tuple(coworker.skills or ()) if coworker else (),
        colleagues=tuple(
            context.Colleague(c.name, c.role, c.slug) for c in present if coworker is None or c.pk != coworker.pk
        ),
        topic=channel.topic,
        agenda=channel.agenda,
    )


def latest_summary(session: Session) -> SummaryVersion | None:
    return SummaryVersion.objects.filter(session=session).order_by("-through_turn").first()


def load_prompt_inputs(
    *,
    session: Session,
    instruction: str,
    turn: int,
    coworker: Coworker | None = None,
    current: Sequence[history.Record] = (),
) -> context.PromptInputs:
    channel = session.channel
    coworker = coworker or answering_coworker(channel, session)
    policy = resolve_policy(channel, coworker)
    summary = latest_summary(session)
    summarized_through = summary.through_turn if summary else 0

    # Everything not yet summarized, before the current task: the window and any pending digests.
    rows = Message.objects.filter(session=session, turn__gt=summarized_through, turn__lt=turn).order_by("position")
    tasks = tuple(history.group_tasks([record_from_row(row) for row in rows]))

    previous_report = (
        Task.objects.filter(session=session, turn__lt=turn, prompt_report__isnull=False)
        .order_by("-turn")
        .values_list("prompt_report", flat=True)
        .first()
    )
    snapshot = summary.created_at if summary else session.started_at
    memory = tuple(
        context.MemoryEntry(
            id=item.pk,
            text=item.text,
            kind=item.kind,
            pinned=item.pinned,
            updated=item.updated_at.timestamp(),
            fresh=item.updated_at > snapshot,
        )
        for item in memory_in_scope(channel, coworker)
    )
    recall = ()
    if policy.recall_chars and summarized_through and instruction.strip():
        recall = tuple(find_recall_candidates(session, instruction, through=summarized_through))
    return context.PromptInputs(
        policy=policy,
        system=context.render_system(system_context(channel, coworker)),
        instruction=instruction,
        turn=turn,
        memory=memory,
        summary=summary.text if summary else "",
        summarized_through=summarized_through,
        carried_note=session.carried_note,
        tasks=tasks,
        current=tuple(current),
        recall=recall,
        previous_plan=context.WindowPlan.from_json((previous_report or {}).get("plan")),
        recall_chars=policy.recall_chars,
    )


def memory_in_scope(channel: Channel, coworker: Coworker | None) -> list[MemoryItem]:
    """Active items of the office, of this coworker and of this channel: pinned, then newest."""
    scope = Q(scope=MemoryItem.Scope.OFFICE) | Q(scope=MemoryItem.Scope.CHANNEL, channel=channel)
    if coworker is not None:
        scope |= Q(scope=MemoryItem.Scope.COWORKER, coworker=coworker)
    items = MemoryItem.objects.filter(scope, office_id=channel.office_id, active=True)
    return list(items.order_by("-pinned", "-updated_at")[:MEMORY_ROWS])


def find_recall_candidates(session: Session, instruction: str, *, through: int) -> list[context.RecallCandidate]:
    """Older summarized tasks that share the instruction's rarer terms, best first."""
    terms = sorted(set(relevance.tokens(instruction)), key=lambda t: (-len(t), t))[:RECALL_TERMS]
    scores: dict[int, float] = {}
    for term in terms:
        postings = list(
            RecallTerm.objects.filter(session=session, term=term, turn__lte=through)
            .order_by("-turn")
            .values_list("turn", "weight")[:RECALL_POSTINGS]
        )
        if not postings:
            continue
        # A term found in many tasks says little about any one of them.
        rarity = math.log(1 + through / len(postings))
        for turn, weight in postings:
            scores[turn] = scores.get(turn, 0.0) + weight * rarity
    best = sorted(scores, key=lambda t: (-scores[t], -t))[:RECALL_CANDIDATES]
    if not best:
        return []
    rows = Message.objects.filter(
        session=session, turn__in=best, role__in=[Message.Role.USER, Message.Role.ASSISTANT]
    ).order_by("position")
    by_turn: dict[int, list[history.Record]] = {}
    for row in rows:
        by_turn.setdefault(row.turn, []).append(record_from_row(row))
    candidates = []
    for turn in best:
        task = history.TaskRecords(turn=turn, records=tuple(by_turn.get(turn, ())))
        who = next((r.coworker for r in task.records if r.coworker), None)
        candidates.append(context.RecallCandidate(turn, task.instruction, task.final_answer, who))
    return candidates


def index_task_terms(session: Session, task: history.TaskRecords) -> None:
    """Add a finished task to the recall index (idempotent)."""
    RecallTerm.objects.bulk_create(_postings(session, task), ignore_conflicts=True)


def _postings(session: Session, task: history.TaskRecords) -> list[RecallTerm]:
    instruction_terms = set(relevance.tokens(task.instruction))
    answer_terms = set(relevance.tokens(task.final_answer))
    return [
        # A term the user used weighs more than one only the answer used.
        RecallTerm(session=session, term=term[:64], turn=task.turn, weight=2.0 if term in instruction_terms else 1.0)
        for term in sorted(instruction_terms | answer_terms)
    ]


def build_for_task(
    *, session: Session, instruction: str, turn: int, coworker: Coworker | None = None, current=()
) -> context.Prompt:
    inputs = load_prompt_inputs(session=session, instruction=instruction, turn=turn, coworker=coworker, current=current)
    return context.build_prompt(inputs)
