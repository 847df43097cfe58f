"""Each session keeps its vectors' count, newest id and ids' sum (see Session.vector_count)."""

from django.db import migrations, models
from django.db.models import Count, Max, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce


def fill_totals(apps, schema_editor):
    Session = apps.get_model("work_sessions", "Session")
    ExchangeVector = apps.get_model("work_sessions", "ExchangeVector")
    of_session = ExchangeVector.objects.filter(session=OuterRef("pk")).order_by().values("session")

    def total(aggregate):
        return Coalesce(Subquery(of_session.annotate(value=aggregate).values("value")), 0)

    Session.objects.update(
        vector_count=total(Count("id")), vector_last=total(Max("id")), vector_ids=total(Sum("id"))
    )


class Migration(migrations.Migration):
    dependencies = [("work_sessions", "0011_exchange_vectors")]

    operations = [
        migrations.AddField("session", "vector_count", models.PositiveIntegerField(default=0)),
        migrations.AddField("session", "vector_last", models.BigIntegerField(default=0)),
        migrations.AddField("session", "vector_ids", models.BigIntegerField(default=0)),
        migrations.RunPython(fill_totals, migrations.RunPython.noop),
    ]
