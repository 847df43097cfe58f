"""Admin for sessions, tasks, messages, memory items and context policies.

History is read here, never written: messages are append-only and sessions and tasks
are created by the session services. Context policies are tuned here, validated by
ContextPolicy.clean().
"""

import json

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models.functions import Substr
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.text import Truncator, capfirst

from office.admin import AppendOnlyAdmin, DeletesWholeSessions, ReadOnlyAdmin

from . import policy as policy_rules
from .models import (
    ContextPolicy,
    ExchangeVector,
    MemoryEvent,
    MemoryItem,
    Message,
    ModelCall,
    SearchEntry,
    Session,
    SummaryVersion,
    Task,
)

# The session page renders at most this many messages, so a long session's page stays fast.
CHAIN_LIMIT = 500
CONTENT_CHARS = 400
# The budgets the policy list shows and edits in place (all of them are on each policy's page).
LIST_BUDGETS = ("detailed_tasks", "detailed_chars", "summary_chars", "memory_chars", "nudge_after_tasks")


def messages_url(session_id: int, **filters) -> str:
    query = urlencode({"session__id__exact": session_id, **filters})
    return f"{reverse('admin:work_sessions_message_changelist')}?{query}"


def render_tool_traffic(message: Message) -> str:
    """An assistant's tool calls (name, arguments, id), or the call a tool result answers."""
    if message.role == Message.Role.TOOL:
        return format_html("↩ <code>{}</code>", message.tool_call_id)
    calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    return format_html_join(
        "",
        "<div>→ {}({}) <code>{}</code></div>",
        (
            (
                call.get("name", "?"),
                Truncator(json.dumps(call.get("args", {}), ensure_ascii=False)).chars(120),
                call.get("id", ""),
            )
            for call in calls
            if isinstance(call, dict)
        ),
    )


def render_chain(session: Session) -> str:
    """The session's messages in chain order, as a table; the first CHAIN_LIMIT only."""
    # Only the head of each content is read: one tool result can be megabytes.
    messages = list(
        session.messages.order_by("position")
        .defer("content")
        .annotate(content_head=Substr("content", 1, CONTENT_CHARS + 1))[: CHAIN_LIMIT + 1]
    )
    if not messages:
        return "No messages yet."
    note = ""
    if len(messages) > CHAIN_LIMIT:
        messages = messages[:CHAIN_LIMIT]
        note = format_html(
            '<p>Showing the first {} of {} messages. <a href="{}">All messages of this session</a>.</p>',
            f"{CHAIN_LIMIT:,}",
            f"{session.messages.count():,}",
            messages_url(session.pk),
        )

    def rows():
        before = None
        for message in messages:
            # Position is the order the database guards; `previous` must agree with it.
            expected = before.pk if before else None
            broken = "" if message.previous_id == expected else "⚠ chain break"
            yield (
                message.position,
                message.turn,
                message.role,
                message.coworker or "—",
                Truncator(message.content_head).chars(CONTENT_CHARS),
                render_tool_traffic(message),
                broken,
            )
            before = message

    table = format_html(
        "<table><thead><tr><th>#</th><th>Turn</th><th>Role</th><th>Coworker</th><th>Content</th>"
        "<th>Tool calls / result of</th><th></th></tr></thead><tbody>{}</tbody></table>",
        format_html_join(
            "",
            '<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style="white-space:pre-wrap">{}</td>'
            "<td>{}</td><td>{}</td></tr>",
            rows(),
        ),
    )
    return format_html("{}{}", note, table)


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin, DeletesWholeSessions, admin.ModelAdmin):
    """Sessions start and end through the session services (they carry notes and send
    events); here they are read, and deleted with their whole history."""

    list_display = ["__str__", "channel", "office", "status", "started_at", "ended_at", "nudged_at"]
    list_filter = ["status", "channel__kind", "channel__office"]
    search_fields = ["id__exact", "channel__name"]
    list_select_related = ["channel__office"]
    date_hierarchy = "started_at"
    fieldsets = [
        (None, {"fields": ["channel", "status", "started_at", "ended_at", "nudged_at", "show_tasks"]}),
        ("Messages in chain order", {"classes": ["wide"], "fields": ["show_chain"]}),
    ]
    readonly_fields = ["channel", "status", "started_at", "ended_at", "nudged_at", "show_tasks", "show_chain"]

    @admin.display(ordering="channel__office__name")
    def office(self, session: Session):
        return session.channel.office

    @admin.display(description="tasks")
    def show_tasks(self, session: Session):
        url = f"{reverse('admin:work_sessions_task_changelist')}?{urlencode({'session__id__exact': session.pk})}"
        return format_html('<a href="{}">{} tasks</a>', url, session.tasks.count())

    @admin.display(description="messages")
    def show_chain(self, session: Session):
        return render_chain(session)


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["__str__", "session", "turn", "status", "created_at", "started_at", "finished_at"]
    list_filter = ["status", "session__channel__kind"]
    search_fields = ["session__id__exact", "error"]
    list_select_related = ["session__channel"]
    readonly_fields = [
        "session", "turn", "created_at", "started_at", "finished_at", "show_messages", "show_prompt_report",
    ]
    fields = ["session", "turn", "status", "error", *readonly_fields[2:]]

    # Tasks come from instructions; an admin may only mark one (status, error), e.g. a stuck run as failed.
    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="messages")
    def show_messages(self, task: Task):
        url = messages_url(task.session_id, turn=task.turn)
        return format_html('<a href="{}">Messages of turn {}</a>', url, task.turn)

    @admin.display(description="prompt report")
    def show_prompt_report(self, task: Task):
        if task.prompt_report is None:
            return "—"
        return format_html("<pre>{}</pre>", json.dumps(task.prompt_report, indent=2, ensure_ascii=False))


@admin.register(Message)
class MessageAdmin(AppendOnlyAdmin, admin.ModelAdmin):
    """Read only: a stored message is never edited, and goes only with its whole session."""

    list_display = ["position", "session", "turn", "role", "coworker", "short_content", "tool_traffic", "created_at"]
    list_display_links = ["position"]
    list_filter = ["role"]
    search_fields = ["content", "session__id__exact"]
    # Follows the (session, position) unique index: chain order within each session.
    ordering = ["session_id", "position"]
    list_select_related = ["session__channel"]
    # Counting every message on each page load is slow on a large table.
    show_full_result_count = False


    @admin.display(description="content")
    def short_content(self, message: Message) -> str:
        return Truncator(message.content).chars(120)

    @admin.display(description="tool calls / result of")
    def tool_traffic(self, message: Message):
        return render_tool_traffic(message)


@admin.register(MemoryItem)
class MemoryItemAdmin(admin.ModelAdmin):
    list_display = ["__str__", "kind", "scope", "office", "coworker", "channel", "pinned", "active", "updated_at"]
    list_display_links = ["__str__"]
    list_editable = ["pinned", "active"]
    list_filter = ["kind", "scope", "pinned", "active", "office"]
    search_fields = ["text"]
    autocomplete_fields = ["office", "coworker", "channel"]
    raw_id_fields = ["source_task"]
    list_select_related = ["office", "coworker", "channel__office"]
    readonly_fields = ["created_at", "updated_at"]
    fields = ["text", "kind", "office", "scope", "coworker", "channel", "pinned", "active", "source_task"]
    fields += readonly_fields


def rows_that_name_hidden_fields(form_class):
    """The list's row form, except that a problem clean() reports on a field the list does not show
    (lowering "recent tasks in full" below "tasks summarized at once" names the latter) becomes the
    row's own error, naming that field, instead of Django's "has no field named" crash."""

    class RowForm(form_class):
        def add_error(self, field, error):
            if field is None and isinstance(error, ValidationError) and hasattr(error, "error_dict"):
                shown = {name: e for name, e in error.error_dict.items() if name in self.fields or name == NON_FIELD_ERRORS}
                hidden = [
                    f"{capfirst(ContextPolicy._meta.get_field(name).verbose_name)}: {message}"
                    for name, errors in error.error_dict.items()
                    if name not in shown
                    for message in ValidationError(errors).messages
                ]
                if hidden:
                    super().add_error(None, hidden)
                if shown:
                    super().add_error(None, ValidationError(shown))
                return
            super().add_error(field, error)

    return RowForm


@admin.register(ContextPolicy)
class ContextPolicyAdmin(admin.ModelAdmin):
    """Budgets that shape every prompt. The list shows the ones people tune most, editable in place, and
    fits a laptop screen; the change page groups every field, each with what it means.

    ContextPolicy.clean() rejects bad values (list_editable forms are ModelForms, so full_clean runs clean()
    for each changed row).
    """

    # No filter sidebar and no "updated" column: with Django's navigation open, a 1440 px screen leaves
    # the list about 1,000 px, and a policy's page has the rest.
    list_display = ["__str__", *LIST_BUDGETS, "show_reply_model"]
    list_display_links = ["__str__"]
    list_editable = list(LIST_BUDGETS)
    search_fields = ["coworker__name", "channel__name"]
    autocomplete_fields = ["coworker", "channel"]
    list_select_related = ["coworker", "channel__office"]
    readonly_fields = ["updated_at"]
    fieldsets = [
        (
            "Applies to",
            {
                "fields": ["channel_kind", "coworker", "channel"],
                "description": "Exactly one: a kind of channel (it sets every budget), or an override for one "
                "coworker or one channel (leave a budget empty to keep the kind's). Changes apply from the next task.",
            },
        ),
        (
            "What the coworker reads in full",
            {
                "fields": ["detailed_tasks", "detailed_chars", "tool_digest_chars"],
                "description": "The latest tasks, word for word, tool results included.",
            },
        ),
        (
            "What is summarized or remembered",
            {
                "fields": ["fold_batch", "summary_chars", "memory_chars", "recall_chars"],
                "description": "Older tasks become a summary; remembered facts and relevant earlier talk come along.",
            },
        ),
        ("Conversation and reply", {"fields": ["nudge_after_tasks", "max_output_tokens", policy_rules.CACHE_FIELD]}),
        ("Models", {"fields": [*policy_rules.MODEL_FIELDS, "updated_at"]}),
    ]

    class Media:
        css = {"all": ["css/admin-policies.css"]}

    def get_changelist_form(self, request, **kwargs):
        return rows_that_name_hidden_fields(super().get_changelist_form(request, **kwargs))

    @admin.display(description="reply model", ordering="reply_model")
    def show_reply_model(self, policy: ContextPolicy) -> str:
        return policy.reply_model or f"default ({settings.REPLY_MODEL})"

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name in policy_rules.RANGES:
            # A hint for the browser only; clean() stays the check, with the message people read.
            low, high = policy_rules.RANGES[db_field.name]
            field.widget.attrs.update({"min": low, "max": high})
            field.help_text = f"{field.help_text} From {low:,} to {high:,}."
        elif db_field.name in policy_rules.MODEL_FIELDS:
            default = settings.REPLY_MODEL if db_field.name == "reply_model" else settings.SUMMARY_MODEL
            field.help_text = f"{db_field.help_text[:-1]} ({default}). Any Claude model name, e.g. one of: {', '.join(settings.MODEL_PRICES)}."
        elif db_field.name == policy_rules.CACHE_FIELD:
            # Django's "---------" says nothing; empty inherits here, like an empty budget.
            field.choices = [("", "As the kind says (auto for a kind)"), *db_field.choices]
        return field


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """Every model call of a reply: tokens and cost, read-only (the usage page and spending limits add them up)."""

    list_display = [
        "created_at", "coworker_slug", "office", "model", "input_tokens", "cache_read_tokens", "output_tokens", "cache_ttl", "cost_usd",
    ]
    list_filter = ["office", "provider", "model"]
    search_fields = ["coworker_slug", "task__id__exact"]
    raw_id_fields = ["task", "coworker"]
    list_select_related = ["office"]
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(SummaryVersion)
class SummaryVersionAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """Every fold of a rolling summary, read-only: what the model was told, and when."""

    list_display = ["__str__", "session", "from_turn", "through_turn", "model", "created_at"]
    list_filter = ["model"]
    search_fields = ["text", "session__id"]
    raw_id_fields = ["session"]
    readonly_fields = ["session", "text", "from_turn", "through_turn", "model", "created_at"]


@admin.register(MemoryEvent)
class MemoryEventAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The memory audit log, read-only."""

    list_display = ["__str__", "action", "actor", "office", "item", "source_task", "created_at"]
    list_filter = ["action", "actor", "office"]
    search_fields = ["before", "after", "reason"]
    list_select_related = ["office", "item", "source_task"]
    readonly_fields = ["office", "item", "action", "before", "after", "reason", "source_task", "actor", "created_at"]


@admin.register(SearchEntry)
class SearchEntryAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The search index: each message's words as the engine sees them, for looking, not editing."""

    list_display = ["message", "channel", "session", "turn", "role"]
    search_fields = ["terms"]
    raw_id_fields = ["message", "session", "channel"]
    show_full_result_count = False


@admin.register(ExchangeVector)
class ExchangeVectorAdmin(AppendOnlyAdmin, admin.ModelAdmin):
    """Which exchanges the search by meaning can find (the vectors themselves say nothing to read).
    Not deleted one by one: each session keeps its vectors' totals (Session.vector_count)."""

    list_display = ["session", "turn", "channel"]
    exclude = ["vector"]
    raw_id_fields = ["session", "channel"]
    show_full_result_count = False
