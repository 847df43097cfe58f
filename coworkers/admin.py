"""Admin for coworkers: find them by office, name, role or skill."""

from django.contrib import admin
from django.db.models import Q, Sum
from django.utils.html import format_html

from office.admin import DeletesWholeSessions

from .models import Coworker, hex_colour


@admin.register(Coworker)
class CoworkerAdmin(DeletesWholeSessions, admin.ModelAdmin):
    list_display = ["name", "slug", "role", "office", "show_colour", "model", "monthly_limit_usd", "show_spent"]
    list_filter = ["office"]
    # `skills` is a JSON list; icontains matches against its text on SQLite and PostgreSQL alike.
    search_fields = ["name", "slug", "role", "skills"]
    autocomplete_fields = ["office"]
    list_select_related = ["office"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["show_spent", "created_at"]
    fields = [
        "office", "name", "slug", "role", "persona", "skills", "model", "colour", "monthly_limit_usd", "show_spent", "created_at",
    ]

    def get_queryset(self, request):
        from sessions.spending import month_start  # sessions' models import this app's

        # This month's spending, what the monthly limit is measured against, in the same query.
        this_month = Q(model_calls__created_at__gte=month_start())
        return super().get_queryset(request).annotate(spent=Sum("model_calls__cost_usd", filter=this_month))

    @admin.display(description="spent this month")
    def show_spent(self, coworker: Coworker) -> str:
        spent = getattr(coworker, "spent", None)
        return f"${spent or 0:,.2f}" if coworker.pk else "—"

    @admin.display(description="colour", ordering="colour")
    def show_colour(self, coworker: Coworker):
        # Only a checked hex value goes into a style attribute (rows written by code skip validators).
        if not hex_colour.regex.match(coworker.colour):
            return coworker.colour
        return format_html(
            '<span style="display:inline-block;width:1em;height:1em;border-radius:50%;'
            'vertical-align:middle;background:{}"></span> {}',
            coworker.colour,
            coworker.colour,
        )
