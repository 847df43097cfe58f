"""One context policy per channel kind, with the documented defaults (docs/context.md).

The values are written out here, not imported, so this migration means the
same thing forever whatever later code says.
"""

from django.db import migrations

SHARED = {
    "detailed_tasks": 8,
    "detailed_chars": 16_000,
    "fold_batch": 4,
    "summary_chars": 6_000,
    "memory_chars": 4_000,
    "tool_digest_chars": 300,
    "nudge_after_tasks": 20,
    "max_output_tokens": 2_048,
    "reply_model": "claude-sonnet-4-5",
    "summary_model": "claude-haiku-4-5",
}
DEFAULTS = {
    "direct": {**SHARED, "detailed_chars": 20_000},
    "main": SHARED,
    "all_hands": SHARED,
    "project": SHARED,
    "meeting": SHARED,
}


def create_policies(apps, schema_editor):
    ContextPolicy = apps.get_model("work_sessions", "ContextPolicy")
    for kind, values in DEFAULTS.items():
        ContextPolicy.objects.get_or_create(channel_kind=kind, defaults=values)


def remove_policies(apps, schema_editor):
    ContextPolicy = apps.get_model("work_sessions", "ContextPolicy")
    ContextPolicy.objects.filter(channel_kind__in=DEFAULTS).delete()


class Migration(migrations.Migration):
    dependencies = [("work_sessions", "0001_initial")]
    operations = [migrations.RunPython(create_policies, remove_policies)]
