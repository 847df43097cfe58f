"""Admin for coworkers: find them by office, name, role or skill."""

from django.contrib import admin
from django.utils.html import format_html

from office.admin import DeletesWholeSessions

from .models import Coworker, hex_colour


@admin.register(Coworker)
class CoworkerAdmin(DeletesWholeSessions, admin.ModelAdmin):
    list_display = ["name", "slug", "role", "office", "show_colour", "model", "created_at"]
    list_filter = ["office"]
    # `skills` is a JSON list; icontains matches against its text on SQLite and PostgreSQL alike.
    search_fields = ["name", "slug", "role", "skills"]
    autocomplete_fields = ["office"]
    list_select_related = ["office"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at"]
    fields = ["office", "name", "slug", "role", "persona", "skills", "model", "colour", "created_at"]

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
