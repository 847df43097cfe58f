"""Sessions, tasks, the append-only message chain, memory items and context policies.

The database holds the invariants that matter most: one active session per
channel, one chain per session (one head, no forks), messages never edited.
"""

import uuid

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from office.models import Channel

from . import policy as policy_rules


class Session(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ENDED = "ended", "Ended"

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="sessions")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Set once, by a conditional UPDATE, when the long-conversation nudge is shown.
    nudged_at = models.DateTimeField(null=True, blank=True)
    # A short note from the previous session's summary, when this one was started from the nudge.
    carried_note = models.TextField(blank=True)
    # What the session's exchange vectors are, kept in the transaction that writes them
    # (sessions.vectors.embed_exchanges): how many, the newest id and the ids' sum. A search
    # checks its cached copy of a channel's vectors against these, summed over the channel's
    # sessions, instead of counting the vectors (which grew with the channel).
    vector_count = models.PositiveIntegerField(default=0)
    vector_last = models.BigIntegerField(default=0)
    vector_ids = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel"],
                condition=Q(status="active"),
                name="one_active_session_per_channel",
                violation_error_message="This channel already has an active session.",
            ),
            models.CheckConstraint(
                condition=Q(status="active", ended_at__isnull=True) | Q(status="ended", ended_at__isnull=False),
                name="ended_session_has_end_time",
            ),
        ]

    def __str__(self) -> str:
        return f"Session {self.pk} in {self.channel.name} ({self.status})"


class Task(models.Model):
    """One instruction and all the work done for it; `turn` is its 1-based index."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        STOPPED = "stopped", "Stopped"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="tasks")
    turn = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, help_text="What went wrong, in words the user sees.")
    # What the prompt was made of (layers, budgets, task indices); filled by the context builder.
    prompt_report = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Claimed once, with the memory it produced, so a redelivered job does nothing twice.
    memory_extracted_at = models.DateTimeField(null=True, blank=True)

    # Who answers (a coworker's slug; the first of `responders`), and where the instruction came from.
    coworker = models.CharField(max_length=60, blank=True)
    # Everyone routed to answer, in order (several in main, project and all-hands channels).
    responders = models.JSONField(default=list, blank=True)
    # The browser's id for the instruction: a resend with the same id is the same task.
    client_id = models.CharField(max_length=64, blank=True)
    # {"handoff_from": task id} or {"meeting": channel id, "follow_up": …}; empty for a person's instruction.
    origin = models.JSONField(default=dict, blank=True)
    handed_off_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="handoffs"
    )
    # Set by "stop"; the running task checks it between stream chunks and tool steps.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # A running task holds a lease it renews as it works; an expired lease means its worker died.
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    # What the model calls cost, summed over the task's steps.
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=100, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=10, decimal_places=6, null=True, blank=True)

    class Meta:
        ordering = ["session", "turn"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn"], name="unique_turn_per_session"),
            models.CheckConstraint(condition=Q(turn__gte=1), name="turn_starts_at_one"),
            models.UniqueConstraint(
                fields=["session", "client_id"], condition=~Q(client_id=""), name="one_task_per_client_id"
            ),
        ]
        indexes = [
            # The sweeper's look for unfinished tasks (queued or running): a small part of a big table.
            models.Index(
                fields=["status", "created_at"], name="task_unfinished",
                condition=Q(status__in=["queued", "running"]),
            ),
            # The sweeper's look for memory extractions that never ran (their delivery was lost).
            models.Index(
                fields=["finished_at"], name="task_unextracted", condition=Q(memory_extracted_at__isnull=True)
            ),
            # The latest prompt plan at or before a turn (folding.fold_target, the next prompt's plan):
            # only tasks that have one, so finding it never walks back over the tasks that have none
            # (every imported task, one stopped before its first model call).
            models.Index(fields=["session", "turn"], name="task_planned", condition=Q(prompt_report__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"Task {self.turn} of session {self.session_id} ({self.status})"


class Message(models.Model):
    """One history record, exactly the export format's (README): stored the moment it exists, never edited.

    `previous` is the order. `position` (1-based place in the chain) lets the
    database guard the chain and read a recent window without walking it:
    the head is position 1 with no `previous`, every other message points at
    the one before it, and no two messages share a position or a `previous`.
    """

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool"
        NOTICE = "notice", "Notice"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    position = models.PositiveIntegerField()
    previous = models.OneToOneField(
        # Messages are only ever deleted with their whole session, all at once.
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="next"
    )
    turn = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    # The coworker's slug as it was when the message was written: history keeps
    # saying who spoke even if the coworker is later renamed or removed.
    coworker = models.CharField(max_length=60, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "position"]
        # A task's messages in chain order (services.task_messages): by turn, then position, from
        # the index itself. With (session, turn) alone, SQLite read one task's messages by walking
        # the whole session in position order (the unique index), to spare itself a sort.
        indexes = [models.Index(fields=["session", "turn", "position"], name="message_task_order")]
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="one_message_per_chain_position"),
            models.CheckConstraint(
                condition=Q(position=1, previous__isnull=True) | Q(position__gt=1, previous__isnull=False),
                name="only_the_head_has_no_previous",
            ),
            models.CheckConstraint(condition=Q(turn__gte=1), name="message_turn_starts_at_one"),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant", "tool", "notice"]), name="message_role_is_known"
            ),
            models.CheckConstraint(
                condition=~Q(role="tool") | ~Q(tool_call_id=""), name="tool_result_names_its_call"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.position} (turn {self.turn})"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ValidationError("Messages are append-only: a stored message is never edited.")
        super().save(*args, **kwargs)


class MemoryItem(models.Model):
    """A durable fact that outlives any one conversation."""

    class Kind(models.TextChoices):
        PREFERENCE = "preference", "Preference"
        COMPANY = "company", "Company"
        PROJECT = "project", "Project"
        RULE = "rule", "Rule"
        DECISION = "decision", "Decision"

    class Scope(models.TextChoices):
        OFFICE = "office", "Office"
        COWORKER = "coworker", "Coworker"
        CHANNEL = "channel", "Channel"

    office = models.ForeignKey("office.Office", on_delete=models.CASCADE, related_name="memory_items")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.OFFICE)
    coworker = models.ForeignKey(
        "coworkers.Coworker", null=True, blank=True, on_delete=models.CASCADE, related_name="memory_items"
    )
    channel = models.ForeignKey(Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_items")
    text = models.TextField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    source_task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories")
    pinned = models.BooleanField(default=False, help_text="Pinned items are always in the prompt, first.")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-pinned", "-updated_at"]
        indexes = [
            # An office's active items, most recently changed first (memory extraction compares a
            # candidate with the latest of them): read in order, without sorting all of them.
            models.Index(fields=["office", "-updated_at"], name="memory_item_recent", condition=Q(active=True)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope="office", coworker__isnull=True, channel__isnull=True)
                | Q(scope="coworker", coworker__isnull=False, channel__isnull=True)
                | Q(scope="channel", coworker__isnull=True, channel__isnull=False),
                name="memory_scope_matches_its_target",
                violation_error_message=(
                    "Office memory names no coworker or channel; coworker memory names a "
                    "coworker; channel memory names a channel."
                ),
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    def clean(self) -> None:
        for target in (self.coworker, self.channel):
            if target is not None and target.office_id != self.office_id:
                raise ValidationError(f"{target} belongs to another office.")


def _in_range(name: str) -> Q:
    low, high = policy_rules.RANGES[name]
    return Q(**{f"{name}__isnull": True}) | Q(**{f"{name}__gte": low, f"{name}__lte": high})


class ContextPolicy(models.Model):
    """Budgets for one channel kind, or overrides for one coworker or one channel.

    A channel kind's row sets every budget. An override row sets only what it
    changes (empty fields inherit). A channel's override wins over a
    coworker's, which wins over the kind's. A change applies from the next task.
    """

    channel_kind = models.CharField(max_length=20, choices=Channel.Kind.choices, blank=True)
    coworker = models.OneToOneField(
        "coworkers.Coworker", null=True, blank=True, on_delete=models.CASCADE, related_name="context_policy"
    )
    channel = models.OneToOneField(
        Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="context_policy"
    )

    # Plain integers: the ranges in sessions/policy.py give the messages people see
    # (a positive-integer field would answer "must be ≥ 0" for a zero budget).
    detailed_tasks = models.IntegerField(
        "recent tasks in full", null=True, blank=True,
        help_text="How many of the latest tasks the coworker reads word for word, as long as they fit the room below.",
    )
    detailed_chars = models.IntegerField(
        "room for recent tasks", null=True, blank=True,
        help_text="In characters (about 4 make a token). Older tasks are summarized instead.",
    )
    fold_batch = models.IntegerField(
        "tasks summarized at once", null=True, blank=True,
        help_text="When recent tasks overflow, this many of the oldest move into the summary together. "
        "1 keeps exactly the latest tasks; a larger batch keeps the start of each prompt the same for longer, "
        "which the model provider bills less for.",
    )
    summary_chars = models.IntegerField(
        "room for the summary", null=True, blank=True,
        help_text="In characters: the most the summary of older tasks may take.",
    )
    memory_chars = models.IntegerField(
        "room for memory", null=True, blank=True,
        help_text="In characters: remembered facts, pinned ones first, then the most relevant.",
    )
    tool_digest_chars = models.IntegerField(
        "old tool results cut to", null=True, blank=True,
        help_text="In characters. When recent tasks do not fit, what tools returned in them is shortened to this first.",
    )
    nudge_after_tasks = models.IntegerField(
        "suggest a new conversation after", null=True, blank=True,
        help_text="After this many tasks in one conversation, people are offered (once) to start a new one.",
    )
    max_output_tokens = models.IntegerField(
        "longest reply", null=True, blank=True, help_text="In tokens (a token is about three quarters of a word)."
    )
    recall_chars = models.IntegerField(
        "room for recalled talk", null=True, blank=True,
        help_text="In characters: earlier exchanges that bear on the request, found by search. 0 turns this off.",
    )
    reply_model = models.CharField(max_length=100, blank=True, help_text="Empty: the office's reply model.")
    summary_model = models.CharField(
        max_length=100, blank=True, help_text="For summaries and memory. Empty: the office's summary model."
    )
    cache_lifetime = models.CharField(
        "keep the prompt cached", max_length=4, blank=True,
        choices=[("auto", "Auto, from how long people pause"), ("5m", "5 minutes"), ("1h", "1 hour")],
        help_text="How long the model provider keeps a reply's prompt cached for the next one. A prompt found in "
        "the cache costs a tenth; the 1-hour cache costs 2× the input price to write instead of 1.25×, so it pays "
        "when people pause longer than 5 minutes between instructions (reading, thinking, typing). Auto chooses "
        "from each conversation's own pauses. Empty: the kind's setting (auto for a kind).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "context policies"
        ordering = ["channel_kind", "coworker", "channel"]
        constraints = [
            models.CheckConstraint(
                condition=(~Q(channel_kind="") & Q(coworker__isnull=True, channel__isnull=True))
                | Q(channel_kind="", coworker__isnull=False, channel__isnull=True)
                | Q(channel_kind="", coworker__isnull=True, channel__isnull=False),
                name="policy_targets_exactly_one_thing",
                violation_error_message="A policy is for exactly one of: a channel kind, a coworker, a channel.",
            ),
            models.UniqueConstraint(
                fields=["channel_kind"], condition=~Q(channel_kind=""), name="one_policy_per_channel_kind"
            ),
            *[
                models.CheckConstraint(
                    condition=_in_range(name),
                    name=f"policy_{name}_in_range",
                    violation_error_message=f"{name} must be between {low:,} and {high:,}.",
                )
                for name, (low, high) in policy_rules.RANGES.items()
            ],
        ]

    def __str__(self) -> str:
        if self.channel_kind:
            return f"Policy for {self.get_channel_kind_display()} channels"
        if self.coworker_id:
            return f"Override for {self.coworker}"
        return f"Override for {self.channel}"

    def values(self) -> dict:
        names = (*policy_rules.BUDGET_FIELDS, *policy_rules.MODEL_FIELDS, policy_rules.CACHE_FIELD)
        return {name: getattr(self, name) for name in names}

    def clean(self) -> None:
        if self.channel_kind:
            missing = [name for name in policy_rules.BUDGET_FIELDS if getattr(self, name) is None]
            if missing:
                raise ValidationError({name: "A channel kind's policy sets every budget." for name in missing})
        problems = policy_rules.find_problems(self.values())
        if problems:
            raise ValidationError(problems)


class SummaryVersion(models.Model):
    """One fold of the rolling summary: what the model was told about tasks 1..through_turn."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="summaries")
    text = models.TextField()
    from_turn = models.PositiveIntegerField(help_text="The first task this fold added.")
    through_turn = models.PositiveIntegerField(help_text="The summary covers tasks 1 to this one.")
    model = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "-through_turn"]
        constraints = [
            # A second delivery of the same fold finds its version already there.
            models.UniqueConstraint(fields=["session", "through_turn"], name="one_summary_per_fold"),
        ]

    def __str__(self) -> str:
        return f"Summary of tasks 1–{self.through_turn} (session {self.session_id})"


class MemoryEvent(models.Model):
    """The audit log of long-term memory: every ADD, UPDATE, DELETE and NOOP, and why."""

    class Action(models.TextChoices):
        ADD = "add", "Add"
        UPDATE = "update", "Update"
        DELETE = "delete", "Delete"
        NOOP = "noop", "No change"

    office = models.ForeignKey("office.Office", on_delete=models.CASCADE, related_name="memory_events")
    item = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    action = models.CharField(max_length=10, choices=Action.choices)
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)
    reason = models.TextField(blank=True)
    source_task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor = models.CharField(max_length=100, help_text="Who decided: the extractor, a coworker's tool, a person.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {(self.after or self.before)[:60]}"


class SearchEntry(models.Model):
    """One message as the history's full-text search sees it: its words, and where it was said.

    Written with the message, in the same transaction (imports too), never for notices.
    `terms` is the text in the search vocabulary (sessions.search_text), so SQLite's FTS5
    table (kept in step by triggers) and PostgreSQL's GIN index over a stored `to_tsvector('simple',
    terms)` (a column only PostgreSQL has) see exactly the same words. The channel is copied here so a search is scoped by
    an index, not by a join through sessions. Migration 0007 creates both engines.
    """

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="search_entry")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    turn = models.PositiveIntegerField()
    role = models.CharField(max_length=10)
    terms = models.TextField()

    class Meta:
        verbose_name_plural = "search entries"
        indexes = [models.Index(fields=["channel", "session", "turn"], name="search_entry_place")]


class ExchangeVector(models.Model):
    """What one exchange (a task's instruction and its replies) means, for recall's search by meaning.

    Written after the task finishes (sessions.tasks.embed_task), for an imported session as it
    catches up, and by `embed_history` for older history; a task without one is still found by its words. `vector` is sessions.meaning's
    float16 embedding. The channel is copied here so a search reads one channel's rows by an index.
    """

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    turn = models.PositiveIntegerField()
    vector = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "turn"], name="exchange_vector_once")]
        # A search reads one channel's rows, the ones added since it last did (sessions.vectors).
        indexes = [models.Index(fields=["channel", "id"], name="exchange_vector_channel")]


class ModelCall(models.Model):
    """One model call made for a coworker's reply: its tokens and what it cost, kept for usage and limits.

    Written as each step of a reply is stored. Kept when the session or the coworker is deleted (the
    money was spent), so a month's spending cannot be reset by deleting history. `coworker_slug` says
    who it was for even then. Offline calls cost 0: no model was called.
    """

    office = models.ForeignKey("office.Office", on_delete=models.CASCADE, related_name="model_calls")
    coworker = models.ForeignKey(
        "coworkers.Coworker", null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls"
    )
    coworker_slug = models.CharField(max_length=60)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls")
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=100, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # The cache lifetime the call asked for: "5m", "1h" (its writes cost 2× input), "" offline (no cache).
    cache_ttl = models.CharField("cache kept", max_length=2, blank=True)
    # None: a model with no price in settings.MODEL_PRICES (its tokens still count).
    cost_usd = models.DecimalField(max_digits=10, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The usage page (an office's calls over a range of days) and the monthly limit (one coworker's).
            models.Index(fields=["office", "created_at"], name="model_call_office_time"),
            models.Index(fields=["coworker", "created_at"], name="model_call_coworker_time"),
        ]

    def __str__(self) -> str:
        return f"{self.coworker_slug} · {self.model or self.provider} · {self.created_at:%Y-%m-%d %H:%M}"
