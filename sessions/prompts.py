"""Loading a prompt's inputs from the database, and building it: the ORM side of sessions.context.

Touches only the recent window, the latest summary and a bounded slice of the
recall index: a constant number of queries, at task 10 or task 10,000.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.db import connection
from django.db.models import Q

from coworkers.models import Coworker
from office.models import Channel

from . import context, history, relevance
from .models import ContextPolicy, MemoryItem, Message, RecallTerm, Session, SummaryVersion, Task
from .policy import Policy, default_policy, with_overrides
from .services import records_of, task_messages

# Recall reads at most this many postings for at most this many instruction terms.
RECALL_TERMS = 8
RECALL_POSTINGS = 50
RECALL_CANDIDATES = 4
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
    rows = task_messages(session, turn__gt=summarized_through, turn__lt=turn)
    tasks = tuple(history.group_tasks(records_of(rows)))

    # The plan to continue: the previous task's, or on a later call of this task's tool loop,
    # the one its first call made (so every call of a task shows the same window).
    previous_plan = (
        Task.objects.filter(session=session, turn__lte=turn, prompt_report__isnull=False)
        .order_by("-turn")
        .values_list("prompt_report__plan", flat=True)
        .first()
    )
    # The tails the window's tasks were shown (the builder keeps those of this epoch), and the
    # current task's own when an earlier step of its tool loop stored it.
    stored_tails = Task.objects.filter(
        session=session, turn__gt=summarized_through, turn__lte=turn, prompt_report__isnull=False
    ).values_list("turn", "prompt_report__tail")
    shown_tails = {
        task_turn: tail
        for task_turn, data in stored_tails
        if (tail := context.ShownTail.from_json(data)) is not None  # none stored, or not in this form
    }
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
        previous_plan=context.WindowPlan.from_json(previous_plan),
        recall_chars=policy.recall_chars,
        shown_tails=shown_tails,
        coworker=coworker.slug if coworker else "",
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
    postings: dict[str, list[tuple[int, float]]] = {term: [] for term in terms}
    for term, turn, weight in newest_postings(session.pk, terms, through=through):
        postings[term].append((turn, weight))
    scores: dict[int, float] = {}
    covered: dict[int, float] = {}
    vocabulary = 0.0
    for term, found in postings.items():
        # A term found in many tasks says little about any one of them; one found in none
        # is something new, and still part of what the instruction is about.
        rarity = math.log(1 + through / len(found)) if found else math.log(1 + through)
        vocabulary += rarity
        for turn, weight in found:
            scores[turn] = scores.get(turn, 0.0) + weight * rarity
            covered[turn] = covered.get(turn, 0.0) + rarity
    # The builder shows only tasks covering enough of the instruction: loading the others is wasted work.
    eligible = [t for t in scores if vocabulary and covered[t] / vocabulary >= context.RECALL_MIN_COVERAGE]
    best = sorted(eligible, key=lambda t: (-scores[t], -t))[:RECALL_CANDIDATES]
    if not best:
        return []
    by_turn: dict[int, list[tuple[str, str, str]]] = {}
    for turn, role, content, coworker in exchanges(session.pk, best):
        by_turn.setdefault(turn, []).append((role, content, coworker))
    candidates = []
    for turn in best:
        said = by_turn.get(turn, [])
        instruction = next((content for role, content, _ in said if role == Message.Role.USER), "")
        answers = [content for role, content, _ in said if role == Message.Role.ASSISTANT and content.strip()]
        who = next((coworker for _, _, coworker in said if coworker), None)  # as the task's digest names it
        coverage = covered[turn] / vocabulary if vocabulary else 0.0
        candidates.append(context.RecallCandidate(turn, instruction, answers[-1] if answers else "", who, coverage))
    return candidates


def newest_postings(session_id: int, terms: list[str], *, through: int) -> list[tuple[str, int, float]]:
    """The newest RECALL_POSTINGS postings of each term, in one query.

    Each term is its own `ORDER BY turn DESC LIMIT n` walk down the (session, term,
    -turn) index, so the database reads at most n entries a term, however long the
    session. (The ORM cannot put LIMIT inside a UNION on SQLite, hence the SQL.)
    """
    if not terms:
        return []
    table = RecallTerm._meta.db_table
    one_term = (
        f"SELECT * FROM (SELECT term, turn, weight FROM {table} "
        "WHERE session_id = %s AND term = %s AND turn <= %s ORDER BY turn DESC LIMIT %s) AS t{n}"
    )
    sql = " UNION ALL ".join(one_term.format(n=n) for n in range(len(terms)))
    params = [value for term in terms for value in (session_id, term, through, RECALL_POSTINGS)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(term, turn, weight) for term, turn, weight in cursor.fetchall()]


def exchanges(session_id: int, turns: list[int]) -> list[tuple[int, str, str, str]]:
    """(turn, role, content, coworker) of the user and assistant messages of a few tasks, in
    chain order: only what a recalled line shows. Plain SQL, as above: recall is the part of
    a build that long sessions add, and the ORM takes longer to compose this than to run it."""
    table = Message._meta.db_table
    sql = (
        f"SELECT turn, role, content, coworker FROM {table} WHERE session_id = %s AND turn IN "
        f"({', '.join(['%s'] * len(turns))}) AND role IN (%s, %s) ORDER BY turn, position"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_id, *turns, Message.Role.USER, Message.Role.ASSISTANT])
        return cursor.fetchall()


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


def build_for_stored_task(task: Task, *, coworker: Coworker | None = None, current=()) -> context.Prompt:
    """Build the prompt for a stored task (its instruction is its first message) and keep the report on it."""
    instruction = (
        task_messages(task.session, turn=task.turn).filter(role=Message.Role.USER).values_list("content", flat=True).first()
    ) or ""
    prompt = build_for_task(session=task.session, instruction=instruction, turn=task.turn, coworker=coworker, current=current)
    task.prompt_report = prompt.report
    task.save(update_fields=["prompt_report"])
    return prompt
