"""Loading a prompt's inputs from the database, and building it: the ORM side of sessions.context.

Touches only the recent window, the latest summary, memory and what the search engine
finds: a constant number of queries, at task 10 or task 10,000.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from coworkers.models import Coworker
from office.models import Channel

from . import context, history, relevance, search, summarize, vectors
from .models import ContextPolicy, MemoryItem, Message, SearchEntry, Session, SummaryVersion, Task
from .policy import Policy, default_policy, with_overrides
from .services import records_of, task_messages

K = TypeVar("K")

# Recall reads the best this many matching messages, and at most this many of their exchanges:
# far more than a prompt can hold, so the builder's budget and cut-off decide what is shown.
RECALL_HITS = 100
RECALL_EXCHANGES = 50
# An exchange scores as its best message plus this share of its other one's score (more of it
# ranked exchanges that repeat a common word in both messages above the one that answers).
SECOND_MESSAGE = 0.1
# Recall ranks by words and by meaning together: each search's score as a share of its best,
# the search by meaning weighted this much (calibrated on bench_recall; docs/context.md, "Recall").
MEANING_WEIGHT = 1.0
# Meaning re-ranks what the words found, and adds an exchange the words missed only when it is
# this close: most pairs of exchanges of one conversation score 0 to 0.3, and up to about 0.4
# small talk ("thanks!", "good morning") finds small talk everywhere.
MEANING_ALONE = 0.45
# A neighbouring exchange that continues one of the best this many found scores this share of it.
CONTINUED = 20
CONTINUATION = 0.6
# A question of two facts told apart ("Which hotel will Nadia stay at?": Nadia flies to Lisbon;
# the Lisbon rooms are at the Pestana) finds the first by its words, and the second shares none
# with it, only with the first. So up to BRIDGE_WORDS of the words the best exchange names
# (summarize.names: names, titles, acronyms) that the question lacks are searched too, the rarest first
# (each in at least two messages and at most search.COMMON_WORD_MESSAGES), and the best
# BRIDGE_HITS messages they find come along at up to BRIDGE of the best exchange's score.
BRIDGE_WORDS = 3
BRIDGE_HITS = 6
BRIDGE = 0.5
# Memory is read newest first, pinned always; a prompt never needs more than this many items.
MEMORY_ROWS = 200


def resolve_policy(channel: Channel, coworker: Coworker | None = None) -> Policy:
    """The kind's policy, then the coworker's overrides, then the channel's: one query."""
    target = Q(channel_kind=channel.kind) | Q(channel=channel)
    if coworker is not None:
        target |= Q(coworker=coworker)
    rows = {("kind" if r.channel_kind else "coworker" if r.coworker_id else "channel"): r for r in ContextPolicy.objects.filter(target)}
    policy = replace(default_policy(channel.kind), reply_model=settings.REPLY_MODEL, summary_model=settings.SUMMARY_MODEL)
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
    policy: Policy | None = None,
) -> context.PromptInputs:
    """`policy`: resolve_policy(channel, coworker) when the caller has it already (the runner does)."""
    channel = session.channel
    coworker = coworker or answering_coworker(channel, session)
    policy = policy or resolve_policy(channel, coworker)
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
    plan = context.WindowPlan.from_json(previous_plan)
    recall = ()
    if policy.recall_chars and instruction.strip():
        # Where the window will begin (the builder drops any candidate it shows in full anyway).
        window_start = context.batch_boundary(
            policy, completed=turn - 1, boundary=max(summarized_through, plan.boundary if plan else 0)
        )
        recall = tuple(find_recall_candidates(session, instruction, through=window_start))
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
        previous_plan=plan,
        recall_chars=policy.recall_chars,
        shown_tails=shown_tails,
        coworker=coworker.slug if coworker else "",
        session=session.pk,
    )


def memory_in_scope(channel: Channel, coworker: Coworker | None) -> list[MemoryItem]:
    """Active items of the office, of this coworker and of this channel: pinned, then newest."""
    scope = Q(scope=MemoryItem.Scope.OFFICE) | Q(scope=MemoryItem.Scope.CHANNEL, channel=channel)
    if coworker is not None:
        scope |= Q(scope=MemoryItem.Scope.COWORKER, coworker=coworker)
    items = MemoryItem.objects.filter(scope, office_id=channel.office_id, active=True)
    return list(items.order_by("-pinned", "-updated_at")[:MEMORY_ROWS])


def find_recall_candidates(session: Session, instruction: str, *, through: int) -> list[context.RecallCandidate]:
    """Earlier exchanges that bear on the instruction, best first: from this session's tasks up
    to `through` (the ones outside the detailed window) and from the channel's earlier sessions.

    Two searches of the channel: by words (sessions.search, full-text over its messages, grouped
    into their exchanges) and by meaning (sessions.vectors, over its exchanges' vectors), fused
    into one score (fused_scores); only the exchanges found are read.
    """
    terms = search.query_terms(instruction)
    hits = search.search_words(
        terms,
        channel_ids=[session.channel_id],
        limit=RECALL_HITS,
        leave_out=(session.pk, through),
    )
    by_words: dict[tuple[int, int], float] = {}
    for hit in hits:
        key = (hit.session_id, hit.turn)
        best = by_words.get(key)
        by_words[key] = hit.score if best is None else max(best, hit.score) + SECOND_MESSAGE * min(best, hit.score)
    nearest = vectors.nearest(
        instruction, channel_id=session.channel_id, leave_out=(session.pk, through), limit=RECALL_HITS, include=by_words
    )
    by_meaning = {key: cosine for key, cosine in nearest.items() if key in by_words or cosine >= MEANING_ALONE}
    scores = fused_scores(by_words, by_meaning)
    best_keys = sorted(scores, key=lambda k: (-scores[k], -k[0], -k[1]))[:RECALL_EXCHANGES]
    if not best_keys:
        return []
    asked = {search.scoped(session.channel_id, term) for term in terms}
    best = best_keys[0]
    for key, share in _bridged(session, best, asked, through).items():
        if key not in best_keys:
            best_keys.append(key)
        scores[key] = max(scores.get(key, 0.0), BRIDGE * share * scores[best])
    said = exchanges(best_keys)
    # The exchange before or after a found one comes along, a little below it, when it goes on
    # with its subject: a decision is often the exchange after the one that asked.
    for key in best_keys[:CONTINUED]:
        for near in ((key[0], key[1] - 1), (key[0], key[1] + 1)):
            if near in scores or near not in said or (near[0] == session.pk and near[1] > through):
                continue
            if _continues(said[key], said[near]):
                scores[near] = CONTINUATION * scores[key]
                best_keys.append(near)
    candidates = []
    for key in best_keys:
        exchange = said.get(key)
        if exchange is None or not exchange.instruction:
            continue
        previous, following = said.get((key[0], key[1] - 1)), said.get((key[0], key[1] + 1))
        candidates.append(
            context.RecallCandidate(
                turn=key[1],
                instruction=exchange.instruction,
                answer=exchange.answer,
                coworker=exchange.coworker,
                session=key[0],
                score=scores[key],
                meaning=by_meaning.get(key, 0.0),
                when=_day(exchange.when),
                earlier_session=key[0] != session.pk,
                matched=tuple(sorted(w.split("x", 1)[1] for w in exchange.words & asked)),
                # A question asked across two tasks: the reply this one answers, the user's answer to this reply.
                before=previous.answer if previous and _asks(previous.answer) else "",
                after=following.instruction if following and _asks(exchange.answer) else "",
            )
        )
    return candidates


def _bridged(session: Session, best: tuple[int, int], asked: set[str], through: int) -> dict[tuple[int, int], float]:
    """The exchanges found by what the best one names (see BRIDGE), each scored as a share of
    the best of them; the best exchange itself is left out."""
    exchange = exchanges([best], neighbours=0).get(best)
    if exchange is None:
        return {}
    # What it names ("Lisbon", "The Mom Test", "Lucas Ferreira") is what a second fact is about;
    # its other rare words are not ("flights", "sheet": tried, they found the travel sheet).
    named = {
        search.scoped(session.channel_id, term)
        for said in (exchange.instruction, exchange.answer)
        for name in summarize.names(said)
        for term in relevance.search_terms(name)
    } - asked
    counts = search.word_counts(sorted(named)[: search.QUERY_WORDS_WEIGHED])  # bounded, as a question's are
    rare = sorted((n, w) for w, n in counts.items() if 2 <= n <= search.COMMON_WORD_MESSAGES)
    terms = [search.unscoped(w) for _, w in rare[:BRIDGE_WORDS]]
    hits = search.search_words(
        terms, channel_ids=[session.channel_id], limit=BRIDGE_HITS, leave_out=(session.pk, through)
    )
    found: dict[tuple[int, int], float] = {}
    for hit in hits:
        key = (hit.session_id, hit.turn)
        if key != best:
            found[key] = max(found.get(key, 0.0), hit.score)
    top = max(found.values(), default=0.0)
    return {key: score / top for key, score in found.items()} if top > 0 else {}


def fused_scores(by_words: dict[K, float], by_meaning: dict[K, float]) -> dict[K, float]:
    """One score per exchange from the two searches: each as a share of its best, added (the
    meaning's weighted by MEANING_WEIGHT; a negative cosine counts as none).

    Ranks rather than scores (reciprocal rank fusion) did worse on LoCoMo: they give the tenth
    result of a search that found one good match as much as the tenth of one that found ten.
    """
    top_words = max(by_words.values(), default=0.0)
    top_meaning = max(by_meaning.values(), default=0.0)
    fused = {key: score / top_words for key, score in by_words.items()} if top_words > 0 else {}
    if top_meaning > 0:
        for key, cosine in by_meaning.items():
            fused[key] = fused.get(key, 0.0) + MEANING_WEIGHT * max(cosine, 0.0) / top_meaning
    return fused


@dataclass(frozen=True)
class _Exchange:
    instruction: str
    answer: str
    coworker: str | None  # who replied first
    when: datetime | None
    asked: frozenset[str]  # the instruction's index words
    answered: frozenset[str]  # the replies'

    @cached_property
    def words(self) -> frozenset[str]:
        return self.asked | self.answered


def _joined_replies(replies: Sequence[tuple[str | None, str]]) -> str:
    """An instruction's replies as one answer: in #main or #all-hands several coworkers answer one
    instruction, and one coworker may answer in several messages. Each speaker after the first is named."""
    parts, last = [], None
    for i, (coworker, text) in enumerate(replies):
        parts.append(text if i == 0 or coworker == last else f"{(coworker or 'coworker').capitalize()}: {text}")
        last = coworker
    return "\n".join(parts)


def exchanges(keys: Sequence[tuple[int, int]], *, neighbours: int = CONTINUED) -> dict[tuple[int, int], _Exchange]:
    """The instruction and final reply of these (session, turn) exchanges, and of the neighbours
    of the first `neighbours` of them.

    Plain SQL: recall is the part of a build that long sessions add, and the ORM takes longer
    to compose this than the database to run it.
    """
    wanted: dict[int, set[int]] = {}
    for i, (session_id, turn) in enumerate(keys):
        wanted.setdefault(session_id, set()).update((turn - 1, turn, turn + 1) if i < neighbours else (turn,))
    where = " OR ".join(
        f"(m.session_id = %s AND m.turn IN ({', '.join(['%s'] * len(turns))}))" for turns in wanted.values()
    )
    params = [value for session_id, turns in wanted.items() for value in (session_id, *sorted(turns))]
    # The index words come along by the entry's unique message index (a join tempts PostgreSQL
    # into reading every entry).
    sql = (
        # The date of the instruction only: converting every reply's costs more than the rest.
        f"SELECT m.session_id, m.turn, m.role, m.content, m.coworker, "
        f"CASE WHEN m.role = 'user' THEN m.created_at END, "
        f"(SELECT e.terms FROM {SearchEntry._meta.db_table} AS e WHERE e.message_id = m.id), m.tool_calls "
        f"FROM {Message._meta.db_table} AS m "
        f"WHERE ({where}) "
        "AND (m.role = %s OR (m.role = %s AND m.content <> '')) ORDER BY m.session_id, m.turn, m.position"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, Message.Role.USER, Message.Role.ASSISTANT])
        rows = cursor.fetchall()
    # Gathered first and built once: an exchange of many replies is not rebuilt at each.
    asked: dict[tuple[int, int], tuple[str, object, str]] = {}
    replies: dict[tuple[int, int], list[tuple[str | None, str, str]]] = {}
    for session_id, turn, role, content, coworker, created_at, terms, calls in rows:
        key = (session_id, turn)
        if role == Message.Role.USER:
            asked.setdefault(key, (content, created_at, terms or ""))  # the task's instruction: its user message
        elif key in asked and content.strip() and calls in _NO_CALLS:
            # The replies; a step's text before its tool calls ("Let me check") is not one.
            replies.setdefault(key, []).append((coworker, content, terms or ""))
    found: dict[tuple[int, int], _Exchange] = {}
    for key, (instruction, created_at, terms) in asked.items():
        said = replies.get(key, ())
        found[key] = _Exchange(
            instruction,
            _joined_replies([(coworker, text) for coworker, text, _ in said]),
            said[0][0] if said else None,
            _as_datetime(created_at),
            frozenset(terms.split()),
            frozenset(" ".join(words for _, _, words in said).split()),
        )
    return found


# An assistant message without tool calls, as raw SQL reads the JSON column (SQLite: text;
# PostgreSQL: decoded, or text).
_NO_CALLS = (None, "", "[]", [])


def _continues(found: _Exchange, near: _Exchange) -> bool:
    """Whether two neighbouring exchanges are about the same thing: they share a few specific
    words (their index words, so nothing is tokenized again). Two, in either language: a Chinese
    run's single characters are index words too, but not words of their own ("共" of 共用 is not
    共識營), and counting them let any two replies of shared filler continue each other."""
    # A scoped single character ends "x" + that character ("c12x共"): no word is split again.
    shared = found.words & near.words
    return sum(1 for word in shared if not (word[-2] == "x" and word[-1] >= "\u3040")) >= 2


def _asks(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def _as_datetime(value) -> datetime | None:
    # Raw SQL on SQLite gives the stored text; on PostgreSQL an aware datetime.
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def _day(when: datetime | None) -> str:
    """A date as people read it ("Mon 4 May 2026"), in the server's time zone."""
    if when is None:
        return ""
    local = timezone.localtime(when) if timezone.is_aware(when) else when
    return f"{local:%a} {local.day} {local:%b %Y}"


def build_for_task(
    *, session: Session, instruction: str, turn: int, coworker: Coworker | None = None, current=(), policy: Policy | None = None
) -> context.Prompt:
    inputs = load_prompt_inputs(
        session=session, instruction=instruction, turn=turn, coworker=coworker, current=current, policy=policy
    )
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
