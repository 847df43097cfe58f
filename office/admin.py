"""Admin for offices, memberships, channels and documents, and the delete rule shared by every admin whose
rows cascade to sessions. Must not import sessions or coworkers modules (they import this one)."""

from django import forms
from django.apps import apps
from django.contrib import admin
from django.utils.text import capfirst

from .models import Channel, ChannelEvent, ChannelRead, Document, DocumentVersion, Membership, Office, RenderedMessage


class DeletesWholeSessions:
    """For admins whose deletes cascade to sessions (office, channel, coworker, session).

    Messages are append-only: nobody may delete one on its own, so the admin would
    refuse any delete that reaches them. They do go, all at once, with their whole
    session; that is allowed. The confirmation page counts them instead of listing
    each one, so deleting a long session does not render a page per message. A
    channel's events (what its watchers were sent) are kept the same way.
    """

    def get_deleted_objects(self, objs, request):
        to_delete, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        for label, what in _KEPT_WHOLE:
            name = apps.get_model(label)._meta.verbose_name
            perms_needed.discard(name)
            to_delete = _collapse(to_delete, f"{capfirst(name)}: ", what)
        return to_delete, model_count, perms_needed, protected


# Rows nobody deletes one by one, and how the delete page counts them.
_KEPT_WHOLE = (
    ("work_sessions.Message", "messages (the append-only history, deleted with its session)"),
    ("office.ChannelEvent", "channel events (what watchers were sent, deleted with their channel)"),
    ("office.RenderedMessage", "rendered messages (each message's HTML, deleted with it)"),
)


def _collapse(items: list, prefix: str, what: str) -> list:
    """The nested delete list with every entry starting with `prefix` replaced by one count."""
    kept, hidden = [], 0
    for item in items:
        if isinstance(item, list):
            kept.append(_collapse(item, prefix, what))
        elif str(item).startswith(prefix):
            hidden += 1
        else:
            kept.append(item)
    if hidden:
        kept.append(f"{hidden:,} {what}")
    return kept


class ReadOnlyAdmin:
    """Records written by the app, looked at here: never added or edited by hand."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class AppendOnlyAdmin(ReadOnlyAdmin):
    """Append-only records: not even deleted one by one (they go with what they belong to)."""

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at"]


@admin.register(Office)
class OfficeAdmin(DeletesWholeSessions, admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "office", "role", "created_at"]
    list_filter = ["role", "office"]
    search_fields = ["user__username", "user__email", "office__name"]
    autocomplete_fields = ["user", "office"]
    list_select_related = ["user", "office"]
    readonly_fields = ["created_at"]


class ChannelForm(forms.ModelForm):
    class Meta:
        model = Channel
        fields = "__all__"

    def clean(self) -> dict:
        # Members are many-to-many, saved after Channel.clean(), so they are checked here.
        data = super().clean()
        office, members = data.get("office"), data.get("members") or []
        strangers = [m.name for m in members if office and m.office_id != office.pk]
        if strangers:
            self.add_error("members", f"Not in this office: {', '.join(strangers)}.")
        return data


@admin.register(Channel)
class ChannelAdmin(DeletesWholeSessions, admin.ModelAdmin):
    form = ChannelForm
    list_display = ["name", "office", "kind", "coworker", "topic", "created_at"]
    list_filter = ["kind", "office"]
    search_fields = ["name", "topic", "office__name"]
    autocomplete_fields = ["office", "coworker", "members"]
    list_select_related = ["office", "coworker"]
    readonly_fields = ["created_at"]
    fields = ["office", "kind", "name", "topic", "coworker", "members", "agenda", "created_at"]


class DocumentVersionInline(admin.TabularInline):
    """A document's history, newest first: versions are only ever added (by write_document), never edited."""

    model = DocumentVersion
    extra = 0
    can_delete = False
    ordering = ["-number"]
    fields = ["number", "author", "source_task", "created_at", "content"]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "office", "kind", "created_by", "updated_at"]
    list_filter = ["kind", "office"]
    search_fields = ["title", "office__name"]
    autocomplete_fields = ["office"]
    list_select_related = ["office"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    inlines = [DocumentVersionInline]

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.created_by = "user"  # a person, as write_document records one
        super().save_model(request, obj, form, change)


@admin.register(DocumentVersion)
class DocumentVersionAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ["document", "number", "author", "created_at"]
    list_filter = ["document__office"]
    search_fields = ["document__title", "content", "author"]
    list_select_related = ["document"]
    fields = ["document", "number", "author", "source_task", "created_at", "content"]
    readonly_fields = fields


@admin.register(ChannelEvent)
class ChannelEventAdmin(AppendOnlyAdmin, admin.ModelAdmin):
    """What a channel's watchers were sent, for looking into a report of a missed or doubled event.
    Read only: resync replays these rows, so they are never edited, and go only with their channel."""

    list_display = ["channel", "seq", "type", "created_at"]
    list_filter = ["type", "channel__office"]
    search_fields = ["channel__name", "type"]
    list_select_related = ["channel"]
    fields = ["channel", "seq", "type", "payload", "created_at"]
    readonly_fields = fields



@admin.register(ChannelRead)
class ChannelReadAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ["user", "channel", "last_seen_seq", "updated_at"]
    list_filter = ["channel__office"]
    search_fields = ["user__username", "channel__name"]
    list_select_related = ["user", "channel"]


@admin.register(RenderedMessage)
class RenderedMessageAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """Each message's stored HTML. Deleting one is safe: the next view renders it again and stores it."""

    list_display = ["message"]
    fields = ["message", "html"]
    readonly_fields = fields
