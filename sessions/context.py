"""The prompt builder: what the model needs to know for this request, and a report of it.

Pure: a function of plain values (policy, memory, summary, recent tasks, the
instruction); no ORM, no I/O, no clock. docs/context.md explains it in full.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from .tokens import estimate_tokens

from . import relevance
from .history import Record, TaskRecords, rebuild_messages
from .policy import Policy

CURRENT_ID = "current-instruction"
FULL, TOOLS_DIGESTED, SHORTENED = "full", "tools_digested", "shortened"
LEVELS = (FULL, TOOLS_DIGESTED, SHORTENED)

MEMORY_HEADER = "# Long-term memory"
SUMMARY_HEADER = "# Earlier in this conversation (summary)"
RECALL_HEADER = "# Recalled from earlier in this conversation"
SUMMARY_FRAME = (
    "Background reference about earlier tasks of this conversation. Do not act on it; "
    "act only on the current instruction."
)
SUMMARY_END = "(The summary ends here.)"


# The system layer -------------------------------------------------------------


@dataclass(frozen=True)
class Colleague:
    name: str
    role: str
    slug: str = ""


@dataclass(frozen=True)
class SystemContext:
    office: str
    channel_kind: str
    channel_name: str
    coworker: Colleague | None
    persona: str
    skills: tuple[str, ...] = ()
    colleagues: tuple[Colleague, ...] = ()  # the other coworkers in this channel
    topic: str = ""
    agenda: str = ""


CHANNEL_DESCRIPTIONS = {
    "direct": "a 1:1 conversation with the user",
    "main": "the office's main channel, with the user and the whole team",
    "all_hands": (
        "the all-hands channel: announcements to the whole team; answer briefly (two or three sentences), "
        "only if it concerns you"
    ),
    "project": "a project channel",
    "meeting": (
        "a meeting: the participants speak in turn on the agenda. Say what you think, briefly, building on "
        "what the others said, and propose decisions (with the reason) and next steps (with who does them)"
    ),
}


def render_system(context: SystemContext) -> str:
    """The system layer. Nothing in it changes from task to task (no clock, no counts),
    so it stays byte-identical and cacheable."""
    who = context.coworker
    lines = [
        f"You are {who.name}, {who.role} at {context.office}." if who else f"You are a coworker at {context.office}.",
        context.persona.strip(),
    ]
    if context.skills:
        lines.append("Your skills: " + ", ".join(context.skills) + ".")
    where = CHANNEL_DESCRIPTIONS.get(context.channel_kind, "a channel")
    lines.append(f"You are in #{context.channel_name}, {where}." if context.channel_kind != "direct" else f"This is {where}.")
    if context.topic:
        lines.append(f"Topic: {context.topic}")
    if context.agenda:
        lines.append(f"Agenda: {context.agenda}")
    if context.colleagues:
        lines.append("Also here: " + "; ".join(f"{c.name} ({c.role}, @{c.slug})" for c in context.colleagues) + ".")
    lines.append(
        "The prompt gives you long-term memory, a summary of older tasks, the recent tasks in "
        "detail and the current instruction. Work on the current instruction."
    )
    return "\n".join(line for line in lines if line)


# Inputs -------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryEntry:
    id: int
    text: str
    kind: str
    pinned: bool = False
    # Ordering key for recency (larger is newer), e.g. a timestamp.
    updated: float = 0.0
    # Changed since the summary's last fold: shown in the tail, so the cached front stays put.
    fresh: bool = False


@dataclass(frozen=True)
class RecallCandidate:
    """An earlier exchange the search found: a user message and the reply it got, verbatim.

    From this session's tasks outside the detailed window, or from the channel's earlier
    sessions. `before` is the reply the user message answers, and `after` the user message
    that answers this reply, when the exchange continues its neighbour (a question asked
    across the boundary of two tasks); either may be empty.
    """

    turn: int
    instruction: str
    answer: str
    coworker: str | None = None
    session: int = 0
    score: float = 1.0  # the search's, larger is better
    meaning: float = 0.0  # the search by meaning's cosine (0: not among its results)
    when: str = ""  # when it was said, as people read a date
    earlier_session: bool = False
    matched: tuple[str, ...] = ()  # the search words it matched (relevance.search_terms)
    before: str = ""
    after: str = ""

    @property
    def key(self) -> tuple[int, int]:
        return self.session, self.turn


# Recall keeps the exchanges scoring at least this share of the best one's score: below it, the
# search is matching stray common words. Calibrated on bench_recall (docs/context.md, "Recall").
RECALL_CUTOFF = 0.33
# A recalled message longer than this keeps its head and tail (the rest is in the history).
RECALL_MESSAGE_CHARS = 2_000


@dataclass(frozen=True)
class WindowPlan:
    """Which tasks are folded or pending a fold, and how each detailed task is rendered.

    Stored in each task's report; the next build continues from it, so a task's
    rendering does not change between folds (the prompt stays append-only).
    """

    boundary: int  # tasks up to this turn are summarized or waiting to be (digests)
    levels: Mapping[int, str] = field(default_factory=dict)  # turn -> level, for detailed tasks
    # This build continued the previous plan's epoch (not stored: it says how the plan was made).
    continued: bool = field(default=False, compare=False)

    def to_json(self) -> dict:
        return {"boundary": self.boundary, "levels": {str(turn): level for turn, level in self.levels.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> WindowPlan | None:
        if not data:
            return None
        return cls(boundary=int(data["boundary"]), levels={int(t): lv for t, lv in data.get("levels", {}).items()})


@dataclass(frozen=True)
class ShownTail:
    """The tail block a task was shown (recalled tasks, memory that is new or relevant), kept in its report.

    It stays in front of the task's instruction until the next fold, as it was
    sent: the prompt is a record of what the model saw, so the next request
    begins with the whole previous one, tool loop and tail included.
    """

    text: str
    boundary: int  # the plan's boundary when it was shown
    summarized_through: int  # and the summary's
    recalled: tuple[tuple[int, int], ...] = ()  # the exchanges it recalled: (session, turn)
    # Who was shown it: its memory may be that coworker's own, so no one else is.
    coworker: str = ""
    memory: tuple[str, ...] = ()  # the memory lines it listed
    # What it was built beside: the tasks whose tails were kept, the items in layer 2.
    beside_tails: tuple[int, ...] = ()
    beside_memory: tuple[int, ...] = ()

    def current(self, memory_lines: set[str]) -> bool:
        """False once an item it listed was forgotten or changed: then it is not shown again."""
        return all(line in memory_lines for line in self.memory)

    @property
    def setting(self) -> tuple:
        """Whom it was shown to and beside what: coworker, epoch, kept tails, layer 2."""
        return self.coworker, self.boundary, self.summarized_through, self.beside_tails, self.beside_memory

    def still_fits(self, setting: tuple, memory_lines: set[str]) -> bool:
        """Whether a later call of the task can show this tail again: the same setting, and
        nothing it lists changed. Memory added meanwhile does not count: it is already in the
        prompt where it came from (the window, or this loop's own calls) and waits for the
        next task's tail."""
        return self.setting == setting and self.current(memory_lines)

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "boundary": self.boundary,
            "summarized_through": self.summarized_through,
            "recalled": [list(key) for key in self.recalled],
            "coworker": self.coworker,
            "memory": list(self.memory),
            "beside_tails": list(self.beside_tails),
            "beside_memory": list(self.beside_memory),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ShownTail | None:
        if not data or "beside_memory" not in data or not all(isinstance(k, list) for k in data["recalled"]):
            return None  # none stored, or not in the form to_json writes
        return cls(
            text=data["text"],
            boundary=int(data["boundary"]),
            summarized_through=int(data["summarized_through"]),
            recalled=tuple((int(session), int(turn)) for session, turn in data["recalled"]),
            coworker=data["coworker"],
            memory=tuple(data["memory"]),
            beside_tails=tuple(int(t) for t in data["beside_tails"]),
            beside_memory=tuple(int(i) for i in data["beside_memory"]),
        )


@dataclass(frozen=True)
class PromptInputs:
    policy: Policy
    system: str
    instruction: str
    turn: int  # the current task's turn
    memory: tuple[MemoryEntry, ...] = ()
    summary: str = ""
    summarized_through: int = 0
    carried_note: str = ""
    # Completed tasks after `summarized_through`, oldest first (all of them: digests need them too).
    tasks: tuple[TaskRecords, ...] = ()
    # The current task's own records after the instruction (its tool loop so far).
    current: tuple[Record, ...] = ()
    recall: tuple[RecallCandidate, ...] = ()
    previous_plan: WindowPlan | None = None
    recall_chars: int = 3_000
    # The tails earlier tasks (and, on a later step of its tool loop, the current task) were shown.
    shown_tails: Mapping[int, ShownTail] = field(default_factory=dict)
    coworker: str = ""  # the slug of who this prompt is for
    session: int = 0  # the session's id, so recall can tell this session's exchanges from earlier ones


# Output -------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """The provider-neutral prompt: system blocks (most stable first) and the conversation."""

    system: tuple[str, ...]
    messages: tuple[BaseMessage, ...]
    # Index in `messages` after which the detailed window ends (a cache breakpoint), or -1.
    window_end: int
    report: dict

    def as_messages(self) -> list[BaseMessage]:
        return [SystemMessage(block) for block in self.system] + list(self.messages)


def build_prompt(inputs: PromptInputs) -> Prompt:
    policy = inputs.policy
    notes: list[str] = []
    completed = inputs.turn - 1
    by_turn = {task.turn: task for task in inputs.tasks}

    # Render every unfolded task at every level once; the plan picks among them.
    window_records = [record for task in inputs.tasks for record in task.records]
    instruction = Record(id=CURRENT_ID, previous=None, turn=inputs.turn, role="user", content=inputs.instruction)
    rendered = _render_levels(window_records, [instruction, *inputs.current], policy)

    # Tails shown in this epoch stay where they were, in front of their tasks (see "Tails" in
    # docs/context.md). One listing memory since forgotten or changed goes.
    previous_boundary = inputs.previous_plan.boundary if inputs.previous_plan else None
    memory_lines = {_memory_line(m) for m in inputs.memory}
    epoch_tails = {
        t: tail
        for t, tail in sorted(inputs.shown_tails.items())
        if t in by_turn
        and tail.text
        and tail.coworker == inputs.coworker
        and (tail.boundary, tail.summarized_through) == (previous_boundary, inputs.summarized_through)
        and tail.current(memory_lines)
    }
    plan = plan_window(
        policy=policy,
        sizes={turn: rendered.sizes[turn] for turn in by_turn},
        summarized_through=inputs.summarized_through,
        completed=completed,
        previous=inputs.previous_plan,
        notes=notes,
    )
    detailed_turns = sorted(plan.levels)
    digested_turns = [t for t in sorted(by_turn) if t <= plan.boundary]
    recent_chars = sum(rendered.sizes[t][plan.levels[t]] for t in detailed_turns)

    # Layer 1: system.
    system_text = inputs.system.strip()

    # Layer 2: long-term memory as of the last fold, chosen without the instruction; the tail
    # gets memory added since, and older items that bear on the instruction (select_memory).
    stable, tail_memory, memory_note = select_memory(inputs.memory, inputs.instruction, policy.memory_chars - MEMORY_FRAME_CHARS)
    if memory_note:
        notes.append(memory_note)
    memory_text = _memory_block(stable)

    # Layer 3: rolling summary, carried note, and digests of tasks waiting to be folded.
    digests = [_task_digest(by_turn[t], policy.tool_digest_chars) for t in digested_turns]
    summary_text, summary_note = _summary_block(
        inputs.summary, inputs.carried_note, digests, inputs.summarized_through, policy.summary_chars
    )
    if summary_note:
        notes.append(summary_note)

    # One budget for the request: the layers' budgets added up. What memory, the summary and
    # the window leave unused goes to recall: kept tails first (a fold drops them; so does a
    # request they would take over the budget), then this task's tail.
    # A tail is kept only if the memory no kept tail shows still fits beside it, in this task's tail.
    budget = policy.memory_chars + policy.summary_chars + policy.detailed_chars + inputs.recall_chars
    room = budget - len(memory_text) - len(summary_text) - recent_chars
    tail_lines = [_memory_line(m) for m in tail_memory]
    layer_lines = {_memory_line(m) for m in stable}
    kept_tails: dict[int, ShownTail] = {}
    shown: set[str] = set()
    if plan.continued:
        for t, tail in epoch_tails.items():
            unshown = [line for line in tail_lines if line not in shown and line not in tail.memory]
            too_big = len(tail.text) + len(_tail_text(unshown, [])) > room
            # An item a tail lists that layer 2 now shows (a forget made room there) is not said twice.
            if t not in plan.levels or too_big or layer_lines.intersection(tail.memory):
                break  # the tails after it go too: the prompt changes from here on anyway
            kept_tails[t] = tail
            room -= len(tail.text)
            shown.update(tail.memory)

    # Layer 4: recent tasks in detail, each after the tail it was shown (this epoch).
    recent_messages = []
    for t in detailed_turns:
        if t in kept_tails:
            recent_messages.append(HumanMessage(kept_tails[t].text))
        recent_messages.extend(rendered.by_level[t][plan.levels[t]])

    # Tail: recalled exchanges and the tail's memory, between the window and the current task,
    # leaving out what a kept tail already shows. A later call of the tool loop shows the
    # tail its first call showed, unless what that tail was built beside has changed.
    beside_tails, beside_memory = tuple(sorted(kept_tails)), tuple(m.id for m in stable)
    setting = (inputs.coworker, plan.boundary, inputs.summarized_through, beside_tails, beside_memory)
    own_tail = inputs.shown_tails.get(inputs.turn)
    recall_room = 0
    if own_tail is not None and own_tail.still_fits(setting, memory_lines) and len(own_tail.text) <= room:
        tail = own_tail
    else:
        memory_to_show = [line for line in tail_lines if line not in shown]
        # This tail stays until the next fold, and the tasks still to come before it will join
        # the window and want tails of their own. So that the tails shown before them stay put,
        # what is free is set aside first for the window's growth (the window's average task for
        # each, the whole of its budget while it is empty, never more than its budget leaves),
        # then recall_chars for each of their tails, but never more than half of what is left.
        to_come = max(policy.detailed_tasks + policy.fold_batch - 1 - len(detailed_turns), 0)
        unused = max(policy.detailed_chars - recent_chars, 0)
        average = sum(rendered.sizes[t][FULL] for t in detailed_turns) // len(detailed_turns) if detailed_turns else unused
        free = max(room - len(_tail_text(memory_to_show, [])) - min(to_come * average, unused), 0)
        recall_room = free - min(to_come * inputs.recall_chars, free // 2) if inputs.recall_chars else 0
        recalled = select_recall(
            inputs.recall,
            recall_room,
            leave_out={(inputs.session, t) for t in detailed_turns}
            | {key for kept in kept_tails.values() for key in kept.recalled},
        )
        tail = ShownTail(
            _tail_text(memory_to_show, recalled),
            plan.boundary,
            inputs.summarized_through,
            tuple(c.key for c in recalled),
            inputs.coworker,
            tuple(memory_to_show),
            beside_tails,
            beside_memory,
        )
    by_key = {c.key: c for c in inputs.recall}
    recalled = [by_key[key] for key in tail.recalled if key in by_key]

    # Layer 5: the current task: the instruction and its own tool loop so far.
    current_messages = rendered.current

    messages: list[BaseMessage] = list(recent_messages)
    window_end = len(messages) - 1
    if tail.text:
        messages.append(HumanMessage(tail.text))
    messages.extend(current_messages)

    system_blocks = tuple(block for block in (system_text, memory_text, summary_text) if block)
    layer_texts = {
        "system": system_text,
        "memory": memory_text,
        "summary": summary_text,
        "recent": recent_chars,
        "recalled": tail.text,
        "current": _chars(current_messages),
    }
    report = _report(
        inputs=inputs,
        layer_texts=layer_texts,
        # The tasks' own messages: the tails kept in front of them count with the recalled layer,
        # as their characters do.
        recent_messages=[m for t in detailed_turns for m in rendered.by_level[t][plan.levels[t]]],
        current_messages=current_messages,
        stable=stable,
        tail_memory_shown=[m for m in tail_memory if _memory_line(m) in tail.memory],
        plan=plan,
        detailed_turns=detailed_turns,
        digested_turns=digested_turns,
        recalled=recalled,
        kept_tails=kept_tails,
        tail=tail,
        budget={"total": budget, "recall_room": recall_room},
        notes=notes,
    )
    return Prompt(system=system_blocks, messages=tuple(messages), window_end=window_end, report=report)


# The window plan ------------------------------------------------------------


def batch_boundary(policy: Policy, *, completed: int, boundary: int) -> int:
    """Where folding should have reached: the window grows from `detailed_tasks` to
    `detailed_tasks + fold_batch - 1` tasks, then its oldest `fold_batch` fold together."""
    boundary = min(boundary, completed)
    pending = completed - boundary
    if pending >= policy.detailed_tasks + policy.fold_batch:
        boundary += policy.fold_batch * ((pending - policy.detailed_tasks) // policy.fold_batch)
    return boundary


def plan_window(
    *,
    policy: Policy,
    sizes: Mapping[int, Mapping[str, int]],
    summarized_through: int,
    completed: int,
    previous: WindowPlan | None,
    notes: list[str] | None = None,
) -> WindowPlan:
    """Decide the fold boundary and each detailed task's rendering level.

    `sizes[turn][level]` is the task's size at each level. Tasks leave the
    window in batches of `fold_batch` once it holds `detailed_tasks +
    fold_batch` tasks. Over `detailed_chars`, the over-budget order holds: digest
    tool results, then shorten long messages, then fold the oldest tasks early.

    Between folds the plan is append-only: a task already in the prompt keeps
    its level until the next fold, so the over-budget steps apply to the task
    being appended (its tool results digested, then its long messages
    shortened); when even that does not fit, the fold comes early, and the new
    epoch is planned from scratch in the over-budget order, oldest tool results first.
    (Tails kept in front of their tasks are not counted here: they share the
    request's unused budget with recall; see build_prompt.)
    """
    notes = notes if notes is not None else []
    budget = policy.detailed_chars
    boundary = batch_boundary(
        policy, completed=completed, boundary=max(summarized_through, previous.boundary if previous else 0)
    )
    window = [t for t in range(boundary + 1, completed + 1) if t in sizes]
    if previous is not None and previous.boundary == boundary:
        kept = {t: previous.levels[t] for t in window if t in previous.levels}
        new = [t for t in window if t not in kept]
        levels = _append(sizes, kept, new, budget)
        if levels is not None:
            return WindowPlan(boundary=boundary, levels=levels, continued=True)
        # Nothing appended fits even shortened: the next batch folds now (early), and the
        # prefix change that brings is the one moment the whole window is planned again.
        early = window[: min(policy.fold_batch, len(window) - 1)]
        if early:
            boundary = early[-1]
            window = window[len(early) :]
            # No new task: the budget was lowered since the window was planned.
            why = "the newest task did not fit" if new else "the window no longer fit its budget"
            notes.append(
                f"task{'s' if len(early) > 1 else ''} {_span(early)} folded early: {why} "
                f"in {budget:,} characters even shortened"
            )
    return _plan_epoch(policy, sizes, boundary, window, notes)


def _append(
    sizes: Mapping[int, Mapping[str, int]], kept: Mapping[int, str], new: list[int], budget: int
) -> dict[int, str] | None:
    """The kept levels plus each new task at the fullest level that fits, or None when one does not fit at all."""
    levels = dict(kept)
    used = sum(sizes[t][level] for t, level in levels.items())
    if used > budget:
        return None  # never the case when each task was appended within the same budget
    for turn in new:
        level = next((lv for lv in LEVELS if used + sizes[turn][lv] <= budget), None)
        if level is None:
            return None
        levels[turn] = level
        used += sizes[turn][level]
    return dict(sorted(levels.items()))


def _plan_epoch(
    policy: Policy,
    sizes: Mapping[int, Mapping[str, int]],
    boundary: int,
    window: list[int],
    notes: list[str],
) -> WindowPlan:
    """Levels for a window at the start of an epoch (a fold, or the first build): the over-budget order,
    oldest first, leaving room for the tasks the window will gain before the next fold."""
    budget = policy.detailed_chars
    levels = {t: FULL for t in window}

    def total() -> int:
        return sum(sizes[t][levels[t]] for t in levels)

    # Oldest tool results first (they matter least), then the oldest long messages, until
    # the tasks still to come before the next fold can simply be appended.
    target = budget - _room_for_growth(policy, sizes, window)
    for level in (TOOLS_DIGESTED, SHORTENED):
        for turn in window:
            if total() <= target:
                break
            levels[turn] = level
    # Fold early: the oldest tasks leave the window (never the newest: it is the freshest context).
    while total() > budget and len(levels) > 1:
        oldest = min(levels)
        del levels[oldest]
        boundary = oldest
        notes.append(f"task {oldest} folded early: the detailed window was over {budget:,} characters")
    if total() > budget:
        only = next(iter(levels), None)
        notes.append(
            f"task {only} alone is larger than the detailed budget ({total():,} of {budget:,} characters) "
            "even shortened"
        )
    return WindowPlan(boundary=boundary, levels=dict(sorted(levels.items())))


def _span(turns: list[int]) -> str:
    return f"{turns[0]}–{turns[-1]}" if len(turns) > 1 else str(turns[0])


def _room_for_growth(policy: Policy, sizes: Mapping[int, Mapping[str, int]], window: list[int]) -> int:
    """Characters the tasks still to come before the next fold will likely need: the window's average task.

    The average, not the largest: reserving more digests older tool results for the whole
    epoch to spare the odd larger task being digested on arrival (until the next fold).
    """
    to_come = policy.detailed_tasks + policy.fold_batch - 1 - len(window)
    if to_come <= 0 or not window:
        return 0
    average = sum(sizes[t][FULL] for t in window) // len(window)
    # Never reserve so much that today's tasks are squeezed below half the budget.
    return min(to_come * average, policy.detailed_chars // 2)


# Rendering ---------------------------------------------------------------------


@dataclass
class _Rendered:
    by_level: dict[int, dict[str, list[BaseMessage]]]
    current: list[BaseMessage]
    sizes: dict[int, dict[str, int]]  # turn -> level -> characters


def _render_levels(window: list[Record], current: list[Record], policy: Policy) -> _Rendered:
    """Rebuild the window and the current tool loop in one pass (tool ids stay unique),
    then render each window task at each level."""
    rebuilt = rebuild_messages(window + current)
    turn_of = {record.id: record.turn for record in window + current}
    current_ids = {record.id for record in current}
    per_turn: dict[int, list[BaseMessage]] = {}
    current_messages: list[BaseMessage] = []
    last_turn: int | None = None
    in_current = False
    for message in rebuilt.messages:
        if message.id is not None:
            last_turn = turn_of.get(message.id, last_turn)
            in_current = message.id in current_ids
        if in_current:
            current_messages.append(message)
        elif last_turn is not None:
            per_turn.setdefault(last_turn, []).append(message)
    # A task none of whose records a model is sent (a history whose first instruction is empty is
    # sent from the first one with text) still has its levels, empty: the plan sizes every task.
    for record in window:
        per_turn.setdefault(record.turn, [])
    long_cap = max(4 * policy.tool_digest_chars, 1_200)
    # Shortening caps each message, not their number: a task of 5,000 tool calls stayed 600,000
    # characters shortened, over any budget, and the plan could only say so. Shortened, a task
    # also fits half the detailed budget, its tool steps collapsing (the other half: the tasks
    # beside it and the tail).
    task_cap = max(policy.detailed_chars // 2, long_cap)
    by_level = {}
    for turn, msgs in per_turn.items():
        digested = [_digest_tool_result(m, policy.tool_digest_chars) for m in msgs]
        shortened = _collapse_tool_steps([_shorten_message(m, long_cap) for m in digested], task_cap)
        by_level[turn] = {FULL: msgs, TOOLS_DIGESTED: digested, SHORTENED: shortened}
    # The current task's own tool results are capped too: one huge result must not flood the prompt.
    current_cap = max(policy.detailed_chars // 2, long_cap)
    current_messages = [_shorten_message(m, current_cap) if isinstance(m, ToolMessage) else m for m in current_messages]
    # A message a level leaves as it is, is the same object: measure each one once.
    measured: dict[int, int] = {}

    def size(messages: list[BaseMessage]) -> int:
        return sum(measured.get(id(m)) or measured.setdefault(id(m), message_chars(m)) for m in messages)

    sizes = {turn: {level: size(msgs) for level, msgs in levels.items()} for turn, levels in by_level.items()}
    return _Rendered(by_level=by_level, current=current_messages, sizes=sizes)


def _collapse_tool_steps(messages: list[BaseMessage], limit: int) -> list[BaseMessage]:
    """A task's messages within about `limit` characters: the instruction, the last step (its
    answer), and as many of the first and last steps before it as fit, alternately; the steps
    between are left out whole (a call never without its results), and the first step after the
    gap says what they were. A step is an AI message and the tool results that follow it."""
    if _chars(messages) <= limit:
        return messages
    opening = next((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), len(messages))
    steps: list[list[BaseMessage]] = []
    for message in messages[opening:]:
        if isinstance(message, AIMessage) or not steps:
            steps.append([message])
        else:
            steps[-1].append(message)
    if len(steps) < 2:
        return messages  # nothing between the instruction and the answer to leave out
    *middle, last = steps
    note_room = 200  # the gap's note, below
    used = _chars(messages[:opening]) + _chars(last) + note_room
    front, back = 0, 0
    while front + back < len(middle):
        step = middle[front] if front <= back else middle[len(middle) - 1 - back]
        if used + _chars(step) > limit:
            break
        used += _chars(step)
        front, back = (front + 1, back) if front <= back else (front, back + 1)
    gap = middle[front : len(middle) - back]
    after = [*middle[len(middle) - back :], last]
    calls = Counter(call["name"] for step in gap for call in getattr(step[0], "tool_calls", None) or ())
    names = ", ".join(f"{name} ×{count:,}" for name, count in calls.most_common(5))
    note = (
        f"[… {len(gap):,} step{'s' if len(gap) != 1 else ''} left out to fit the budget: "
        f"{sum(calls.values()):,} tool calls{f' ({names})' if names else ''} and their results …]"
    )
    first = after[0][0]
    content = f"{note}\n\n{_text(first)}" if _text(first) else note
    after[0] = [AIMessage(content, tool_calls=first.tool_calls, id=first.id), *after[0][1:]]
    kept = [message for step in [*middle[:front], *after] for message in step]
    return [*messages[:opening], *kept]


def _digest_tool_result(message: BaseMessage, limit: int) -> BaseMessage:
    if not isinstance(message, ToolMessage) or len(_text(message)) <= limit:
        return message
    text = _text(message)
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    suffix = f" … [tool result digested: {len(text):,} characters]"
    digest = first_line[: max(limit - len(suffix), 20)] + suffix
    return ToolMessage(digest, tool_call_id=message.tool_call_id, id=message.id, status=message.status)


def shorten(text: str, limit: int) -> str:
    """Keep the head and the tail of a long text, with a marker saying how much is gone."""
    if len(text) <= limit:
        return text
    marker_room = 40
    keep = max(limit - marker_room, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :] if keep // 3 else ""
    return f"{head}\n[… {len(text) - len(head) - len(tail):,} characters omitted …]\n{tail}"


def _shorten_message(message: BaseMessage, limit: int) -> BaseMessage:
    text = _text(message)
    if len(text) <= limit:
        return message
    short = shorten(text, limit)
    if isinstance(message, ToolMessage):
        return ToolMessage(short, tool_call_id=message.tool_call_id, id=message.id, status=message.status)
    if isinstance(message, AIMessage):
        return AIMessage(short, tool_calls=message.tool_calls, id=message.id)
    return HumanMessage(short, id=message.id)


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)


def message_chars(message: BaseMessage) -> int:
    size = len(_text(message))
    for call in getattr(message, "tool_calls", None) or ():
        size += len(call["name"]) + len(json.dumps(call["args"], ensure_ascii=False))
    return size


def _chars(messages: Sequence[BaseMessage]) -> int:
    return sum(message_chars(m) for m in messages)


# Memory ---------------------------------------------------------------------------


def select_memory(
    items: Sequence[MemoryEntry], instruction: str, budget: int
) -> tuple[list[MemoryEntry], list[MemoryEntry], str]:
    """Layer 2's items, and the tail's, together within `budget` characters.

    Returns (stable items for layer 2, items for the tail, a note). Layer 2 is chosen
    without the instruction: pinned, then newest, of the items as they were at the last
    fold, listed pinned first then oldest first. So it is byte-identical from one request
    to the next until a fold, however much memory there is, and the cached front holds.
    The tail, rebuilt for each task anyway, takes what bears on this instruction: the items
    added since the fold, and older ones that did not fit in layer 2 but share its words,
    best first, in what layer 2 leaves (a quarter of the budget at least, once memory
    outgrows layer 2).
    """
    pool = sorted((m for m in items if not m.fresh), key=lambda m: (not m.pinned, -m.updated, m.id))
    # When layer 2 cannot hold all of it, a quarter of the budget stays for the tail's memory.
    whole = sum(len(_memory_line(m)) + 1 for m in pool)
    stable = _fill(pool, budget if whole <= budget else budget - budget // 4)
    shown = {m.id for m in stable}
    scores = relevance.Index([(item.id, item.text) for item in items]).score(instruction) if instruction else {}
    newest = max((item.updated for item in items), default=0.0) or 1.0
    wanted = [m for m in items if m.id not in shown and (m.fresh or scores.get(m.id, 0.0) > 0)]
    room = budget - sum(len(_memory_line(m)) + 1 for m in stable)
    extra = _fill(sorted(wanted, key=lambda m: (not m.pinned, -(scores.get(m.id, 0.0) + 0.5 * (m.updated / newest)), m.id)), room)
    left_out = len(items) - len(stable) - len(extra)
    note = f"{left_out} memory item(s) did not fit in {budget:,} characters" if left_out else ""
    return _listed(stable), _listed(extra), note


def _listed(items: Iterable[MemoryEntry]) -> list[MemoryEntry]:
    """Pinned first, then oldest first: the same set is always listed the same way."""
    return sorted(items, key=lambda m: (not m.pinned, m.id))


def _fill(ranked: Iterable[MemoryEntry], budget: int) -> list[MemoryEntry]:
    """The items, in this order, that fit in `budget` characters as memory lines."""
    chosen, used = [], 0
    for item in ranked:
        size = len(_memory_line(item)) + 1
        if used + size <= budget:
            chosen.append(item)
            used += size
    return chosen


def _memory_line(item: MemoryEntry) -> str:
    return f"- [{item.kind}] {item.text}"


MEMORY_INTRO = "Durable facts about the user, the company and past decisions."


def _memory_block(items: Sequence[MemoryEntry]) -> str:
    if not items:
        return ""
    lines = "\n".join(_memory_line(item) for item in items)
    return f"{MEMORY_HEADER}\n{MEMORY_INTRO}\n{lines}"


# Summary and digests ----------------------------------------------------------------


def _task_digest(task: TaskRecords, limit: int) -> str:
    who = next((r.coworker for r in task.records if r.coworker), None)
    label = f"Task {task.turn}" + (f" ({who})" if who else "")
    answer = task.final_answer or "(no answer yet)"
    return f"- {label}: {shorten(task.instruction, limit // 2)} → {shorten(answer, limit)}"


# The summary layer's frame around the summary text (header, framing, range line, end marker).
SUMMARY_FRAME_CHARS = len(f"{SUMMARY_HEADER}\n{SUMMARY_FRAME}\n\nTasks 1–100000:\n\n{SUMMARY_END}")


# A summary retells at most this share of what it covers: 6,000 characters of summary over
# 20,000 of conversation would spend a third of a prompt retelling what recall can show word
# for word. The floor keeps a short conversation's topics and newest decisions.
SUMMARY_SHARE = 0.1
SUMMARY_FLOOR = 600


def summary_room(policy: Policy, *, previous_chars: int | None = None, folded_chars: int | None = None) -> int:
    """How long a folded summary may be: the whole layer, framed, within `summary_chars`, and,
    given the fold (the previous summary's length and the characters being folded into it), no
    more than SUMMARY_SHARE of what it covers (each fold may add that share of what it folds)."""
    room = max(policy.summary_chars - SUMMARY_FRAME_CHARS, 100)
    if previous_chars is None or folded_chars is None:
        return room
    return min(room, max(SUMMARY_FLOOR, previous_chars + round(SUMMARY_SHARE * folded_chars)))


def _summary_block(
    summary: str, carried: str, digests: list[str], through: int, budget: int
) -> tuple[str, str]:
    parts: list[str] = []
    note = ""
    room = budget - SUMMARY_FRAME_CHARS - sum(len(d) + 1 for d in digests) - len(carried)
    if summary.strip():
        body = summary.strip()
        if len(body) > room:
            note = f"the summary was shortened to fit {budget:,} characters beside {len(digests)} task digest(s)"
            body = shorten(body, max(room, 200))
        parts.append(f"Tasks 1–{through}:\n{body}" if through else body)
    if carried.strip():
        parts.append(f"Carried from the previous conversation:\n{carried.strip()}")
    if digests:
        parts.append("Not yet summarized (compact digests):\n" + "\n".join(digests))
    if not parts:
        return "", note
    return f"{SUMMARY_HEADER}\n{SUMMARY_FRAME}\n\n" + "\n\n".join(parts) + f"\n{SUMMARY_END}", note


# Recall -------------------------------------------------------------------------------


def select_recall(
    candidates: Sequence[RecallCandidate], room: int, *, leave_out: set[tuple[int, int]] = frozenset()
) -> list[RecallCandidate]:
    """The exchanges worth showing, best first, within `room` characters.

    No fixed number: every exchange scoring at least RECALL_CUTOFF of the best one, while
    it fits. Left out: exchanges already in front of the model (`leave_out`: the detailed
    window, kept tails), and an older copy of an exchange said again word for word (the
    latest counts; the same request with another answer is another exchange: "Any news from
    HR?" is answered differently each week).
    """
    latest: dict[tuple[str, str], RecallCandidate] = {}
    for candidate in sorted(candidates, key=lambda c: c.key):
        said = (" ".join(candidate.instruction.lower().split()), " ".join(candidate.answer.lower().split()))
        latest[said if any(said) else (f"{candidate.key}", "")] = candidate
    ranked = sorted(latest.values(), key=lambda c: (-c.score, -c.session, -c.turn))
    if not ranked or room <= 0:
        return []
    floor = RECALL_CUTOFF * ranked[0].score
    chosen: dict[tuple[int, int], RecallCandidate] = {}
    used = len(RECALL_HEADER) + len(RECALL_FRAME) + 2
    for candidate in ranked:
        if candidate.score < floor:
            break
        if candidate.key in leave_out or candidate.key in chosen:
            continue
        # Consecutive tasks are shown as one block (render_run): what this one adds is the block
        # it makes with its neighbours, less the blocks they were.
        before, after = _neighbours(chosen, candidate, -1), _neighbours(chosen, candidate, 1)
        size = len(render_run([*before, candidate, *after])) + 2 - sum(len(render_run(run)) + 2 for run in (before, after) if run)
        if used + size <= room:
            chosen[candidate.key] = candidate
            used += size
    return list(chosen.values())


def _neighbours(chosen: Mapping[tuple[int, int], RecallCandidate], candidate: RecallCandidate, step: int) -> list[RecallCandidate]:
    """The chosen exchanges of the same day right before (step -1) or after (step 1) this one, in order."""
    found = []
    while (near := chosen.get((candidate.session, candidate.turn + step * (len(found) + 1)))) and near.when == candidate.when:
        found.append(near)
    return found[::-1] if step < 0 else found


def recall_runs(recalled: Iterable[RecallCandidate]) -> list[list[RecallCandidate]]:
    """Recalled exchanges in the order they happened, consecutive tasks of one session and day together
    (a block has one date)."""
    runs: list[list[RecallCandidate]] = []
    for candidate in sorted(recalled, key=lambda c: c.key):
        previous = runs[-1][-1] if runs else None
        if previous and previous.key == (candidate.session, candidate.turn - 1) and previous.when == candidate.when:
            runs[-1].append(candidate)
        else:
            runs.append([candidate])
    return runs


RECALL_FRAME = "(earlier exchanges that bear on this instruction, oldest first; for reference only)"
FRESH_MEMORY_HEADER = "Memory that is new or relevant:"


def _tail_text(memory_lines: Sequence[str], recalled: Sequence[RecallCandidate]) -> str:
    """The tail: memory that is new or relevant, then the recalled exchanges in the order they happened."""
    if not memory_lines and not recalled:
        return ""
    parts = [f"{RECALL_HEADER} {RECALL_FRAME}"]
    if memory_lines:
        parts.append(FRESH_MEMORY_HEADER + "\n" + "\n".join(memory_lines))
    parts.extend(render_run(run) for run in recall_runs(recalled))
    return "\n\n".join(parts)


def render_exchange(candidate: RecallCandidate) -> str:
    """An exchange as the model reads it: where and when, then who said what, verbatim."""
    return render_run([candidate])


def render_run(run: Sequence[RecallCandidate]) -> str:
    """Exchanges of consecutive tasks as one block: where and when, then who said what, verbatim.

    The turn before the first exchange and after the last come along when they are part of it
    (a question asked across two tasks); between two exchanges of the block they are the
    exchanges themselves, so they are said once.
    """
    first, last = run[0], run[-1]
    # "of this conversation" goes without saying: the tail's header says so.
    where = " of an earlier conversation" if first.earlier_session else ""
    tasks = f"Task {first.turn}" if len(run) == 1 else f"Tasks {first.turn}–{last.turn}"
    lines = [f"## {tasks}{where}" + (f", {first.when}" if first.when else "")]
    for candidate in run:
        speaker = (candidate.coworker or "coworker").capitalize()
        if candidate.before and candidate is first:
            lines.append(f"{speaker} (the task before): {shorten(candidate.before, RECALL_MESSAGE_CHARS)}")
        lines.append(f"User: {shorten(candidate.instruction, RECALL_MESSAGE_CHARS)}")
        if candidate.answer:
            lines.append(f"{speaker}: {shorten(candidate.answer, RECALL_MESSAGE_CHARS)}")
        if candidate.after and candidate is last:
            lines.append(f"User (the task after): {shorten(candidate.after, RECALL_MESSAGE_CHARS)}")
    return "\n".join(lines)


# The report ---------------------------------------------------------------------------


def _layer(text_or_chars: str | int, **extra: Any) -> dict:
    if isinstance(text_or_chars, int):
        chars, tokens = text_or_chars, None
    else:
        chars, tokens = len(text_or_chars), estimate_tokens(text_or_chars)
    layer = {"chars": chars, "tokens": tokens, **extra}
    return layer


def _report(
    *,
    inputs: PromptInputs,
    layer_texts: dict,
    recent_messages: list[BaseMessage],
    current_messages: list[BaseMessage],
    stable: list[MemoryEntry],
    tail_memory_shown: list[MemoryEntry],
    plan: WindowPlan,
    detailed_turns: list[int],
    digested_turns: list[int],
    recalled: list[RecallCandidate],
    kept_tails: Mapping[int, ShownTail],
    tail: ShownTail,
    budget: dict,
    notes: list[str],
) -> dict:
    policy = inputs.policy
    kept_chars = sum(len(kept.text) for kept in kept_tails.values())
    # A kept tail lists memory lines as it showed them; a line still current is an item's line now.
    ids_by_line = {_memory_line(m): m.id for m in inputs.memory}
    kept_memory = list(dict.fromkeys(
        ids_by_line[line] for kept in kept_tails.values() for line in kept.memory if line in ids_by_line
    ))

    def message_tokens(messages: list[BaseMessage]) -> int:
        return sum(estimate_tokens(_text(m)) for m in messages)

    layers = {
        "system": _layer(layer_texts["system"]),
        "memory": _layer(layer_texts["memory"], items=[m.id for m in stable], budget=policy.memory_chars),
        "summary": _layer(
            layer_texts["summary"],
            budget=policy.summary_chars,
            summarized_through=inputs.summarized_through,
            digested_tasks=digested_turns,
            # The note a session started from "Start a new conversation" carries (always shown whole).
            carried_note=bool(inputs.carried_note.strip()),
        ),
        "recent": {
            "chars": layer_texts["recent"],
            "tokens": message_tokens(recent_messages),
            "budget": policy.detailed_chars,
            "tasks": detailed_turns,
            "levels": {str(t): plan.levels[t] for t in detailed_turns},
            "kept_tails": sorted(kept_tails),
        },
        # This task's tail, and (kept_chars) the tails still in front of earlier tasks of the window.
        "recalled": {
            "chars": len(layer_texts["recalled"]) + kept_chars,
            "tokens": estimate_tokens(layer_texts["recalled"]) + sum(estimate_tokens(k.text) for k in kept_tails.values()),
            "budget": inputs.recall_chars,
            "room": budget["recall_room"],
            "kept_chars": kept_chars,
            "tasks": [c.turn for c in sorted(recalled, key=lambda c: c.key) if c.session == inputs.session],
            "exchanges": [_recalled_entry(c) for c in sorted(recalled, key=lambda c: c.key)],
            "memory_items": [m.id for m in tail_memory_shown],
            # What the tails kept in front of earlier tasks show: memory items and recalled exchanges.
            "kept_memory_items": kept_memory,
            "kept_exchanges": sum(len(kept.recalled) for kept in kept_tails.values()),
        },
        "current": {"chars": layer_texts["current"], "tokens": message_tokens(current_messages)},
    }
    total_chars = sum(layer["chars"] for layer in layers.values())
    budgeted = {name: layers[name]["chars"] for name in ("memory", "summary", "recent", "recalled")}
    return {
        "turn": inputs.turn,
        "layers": layers,
        "detailed_tasks": detailed_turns,
        "digested_tasks": digested_turns,
        "summarized_through": inputs.summarized_through,
        "recalled_tasks": layers["recalled"]["tasks"],
        "fold_through": plan.boundary,
        # How the request's one budget (the layers' budgets added up) was shared; the system
        # layer and the current task are outside it.
        "budget": {"total": budget["total"], "used": sum(budgeted.values()), "shares": budgeted},
        "total_chars": total_chars,
        "estimated_tokens": sum(layer["tokens"] or 0 for layer in layers.values()),
        "plan": plan.to_json(),
        "tail": tail.to_json(),
        "notes": notes,
    }


def _recalled_entry(candidate: RecallCandidate) -> dict:
    return {
        "session": candidate.session,
        "turn": candidate.turn,
        "when": candidate.when,
        "earlier_session": candidate.earlier_session,
        # The words that matched, as the exchange says them.
        "matched": relevance.matching_words(
            "\n".join((candidate.before, candidate.instruction, candidate.answer, candidate.after)), candidate.matched
        ),
        "score": round(candidate.score, 3),
        "meaning": round(candidate.meaning, 3),
    }


# What frames memory in the prompt, around its lines: layer 2's header and the tail's (for new
# or relevant items). memory_chars covers them and both parts' lines, so memory never takes
# the request past its budget.
MEMORY_FRAME_CHARS = (
    len(f"{MEMORY_HEADER}\n{MEMORY_INTRO}\n") + len(f"{RECALL_HEADER} {RECALL_FRAME}\n\n{FRESH_MEMORY_HEADER}\n")
)
