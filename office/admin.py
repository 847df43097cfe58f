"""Admin for offices, memberships and channels, and the delete rule shared by every admin whose
rows cascade to sessions. Must not import sessions or coworkers modules (they import this one)."""

from django import forms
from django.apps import apps
from django.contrib import admin
from django.utils.text import capfirst

from .models import Channel, Membership, Office


class DeletesWholeSessions:
    """For admins whose deletes cascade to sessions (office, channel, coworker, session).

    Messages are append-only: nobody may delete one on its own, so the admin would
    refuse any delete that reaches them. They do go, all at once, with their whole
    session; that is allowed. The confirmation page counts them instead of listing
    each one, so deleting a long session does not render a page per message.
    """

    def get_deleted_objects(self, objs, request):
        to_delete, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        message_name = apps.get_model("work_sessions", "Message")._meta.verbose_name
        perms_needed.discard(message_name)
        return _collapse(to_delete, f"{capfirst(message_name)}: "), model_count, perms_needed, protected


def _collapse(items: list, prefix: str) -> list:
    """The nested delete list with every entry starting with `prefix` replaced by one count."""
    kept, hidden = [], 0
    for item in items:
        if isinstance(item, list):
            kept.append(_collapse(item, prefix))
        elif str(item).startswith(prefix):
            hidden += 1
        else:
            kept.append(item)
    if hidden:
        kept.append(f"{hidden:,} messages (the append-only history, deleted with its session)")
    return kept


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
