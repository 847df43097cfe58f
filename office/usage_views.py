"""The usage page: what the office's coworkers used and cost, per coworker and per day.

Members of the office only; everyone else gets a 404. Reads the recorded model calls
(sessions.ModelCall) in one grouped query; office.usage sums them, office.charts draws them.
"""

from __future__ import annotations

from datetime import datetime, time
from decimal import Decimal

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.utils.safestring import mark_safe

from coworkers.providers import ANSWERED_WITHOUT_A_MODEL
from sessions.models import ModelCall
from sessions.spending import MEETING_NOTES, month_start

from . import charts
from .usage import RANGES, Row, choose_range, format_cache_kept, format_cost, format_share, format_tokens, summarize
from .views import offices_of, sidebar

# Calls made for the office rather than for one coworker, by the name the page gives them.
UPKEEP_NAMES = {MEETING_NOTES: "Meeting notes"}


@login_required
def usage(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    today = timezone.localdate()
    chosen = choose_range(request.GET.get("range"), today)
    start = timezone.make_aware(datetime.combine(chosen.first, time.min))
    coworkers = list(office.coworkers.order_by("name"))
    figures = summarize(
        load_rows(office_id=office.pk, since=start), days=chosen.days, coworkers=[c.slug for c in coworkers]
    )
    by_slug = {c.slug: c for c in coworkers}
    spent = month_to_date(office_id=office.pk)

    people = []
    for coworker_slug in figures.coworkers:
        coworker = by_slug.get(coworker_slug)
        totals = figures.by_coworker[coworker_slug]
        limit = coworker.monthly_limit_usd if coworker else None
        month = spent.get(coworker_slug, Decimal("0"))
        people.append(
            {
                "slug": coworker_slug,
                "name": coworker.name if coworker else UPKEEP_NAMES.get(coworker_slug, coworker_slug),
                "role": coworker.role if coworker else "the office" if coworker_slug in UPKEEP_NAMES else "no longer in this office",
                "colour": coworker.colour if coworker else charts.FALLBACK_COLOUR,
                "totals": totals,
                "tokens": format_tokens(totals.tokens),
                "share": format_share(totals.cache_read_share),
                "kept": format_cache_kept(totals),
                "cost": format_cost(totals.cost, totals.unpriced),
                "limit": format_cost(limit) if limit is not None else "",
                "month": format_cost(month),
                "limit_reached": limit is not None and month >= limit,
            }
        )
    days = [
        {
            "day": day,
            "tokens": format_tokens(figures.by_day[day].tokens),
            "share": format_share(figures.by_day[day].cache_read_share),
            "kept": format_cache_kept(figures.by_day[day]),
            "cost": format_cost(figures.by_day[day].cost, figures.by_day[day].unpriced),
        }
        for day in reversed(figures.days)
    ]
    labels = [f"{day:%a} {day.day}" if len(figures.days) <= 10 else f"{day:%b} {day.day}" for day in figures.days]

    def bars(value, label) -> list[list[charts.Segment]]:
        """Each day's bar: one segment per coworker who worked that day, in the legend's order."""
        days_bars = []
        for day in figures.days:
            worked = [(p, figures.by_day_and_coworker.get((day, p["slug"]))) for p in people]
            days_bars.append([charts.Segment(p["name"], p["colour"], value(t), label(t)) for p, t in worked if t])
        return days_bars

    token_chart = charts.stacked_bars(
        title=f"Tokens per day, {chosen.label.lower()}, by coworker",
        labels=labels,
        bars=bars(lambda t: t.tokens, lambda t: f"{t.tokens:,} tokens ({format_share(t.cache_read_share)} read from the cache)"),
        axis_label=lambda v: format_tokens(int(v)),
    )
    cost_chart = charts.stacked_bars(
        title=f"Cost per day, {chosen.label.lower()}, by coworker",
        labels=labels,
        bars=bars(lambda t: float(t.cost), lambda t: format_cost(t.cost, t.unpriced)),
        axis_label=lambda v: f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:,.4f}",
        empty_text="Nothing billed in this range.",
    )
    # Who answered in the range: offline only, and the figures are the offline coworker's prompts,
    # counted as a model would (about four characters a token), with nothing cached or billed.
    in_range = ModelCall.objects.filter(office_id=office.pk, created_at__gte=start)
    providers = set(in_range.order_by().values_list("provider", flat=True).distinct())
    return render(
        request,
        "office/usage.html",
        {
            "office": office,
            "offline_only": bool(providers) and providers <= set(ANSWERED_WITHOUT_A_MODEL),
            "range": chosen,
            "ranges": RANGES.items(),
            "total": figures.total,
            "total_tokens": format_tokens(figures.total.tokens),
            "total_share": format_share(figures.total.cache_read_share),
            "total_cost": format_cost(figures.total.cost, figures.total.unpriced),
            "people": people,
            "days": days,
            # Built by office.charts from numbers and escaped names only.
            "token_chart": mark_safe(token_chart),
            "cost_chart": mark_safe(cost_chart),
            "usage_page": True,
            **sidebar(office, request.user),
        },
    )


def load_rows(*, office_id: int, since: datetime) -> list[Row]:
    """The office's calls since `since`, summed per day (in the office's time zone) and coworker."""
    grouped = (
        ModelCall.objects.filter(office_id=office_id, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
        .values("day", "coworker_slug")
        .annotate(
            calls=Count("id"),
            input_tokens=Sum("input_tokens"),
            cache_write_tokens=Sum("cache_write_tokens"),
            cache_read_tokens=Sum("cache_read_tokens"),
            output_tokens=Sum("output_tokens"),
            cost=Sum("cost_usd"),
            unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
            cached_calls=Count("id", filter=~Q(cache_ttl="")),
            hour_cached_calls=Count("id", filter=Q(cache_ttl="1h")),
        )
        .order_by()
    )
    return [
        Row(
            day=row["day"],
            coworker=row["coworker_slug"],
            calls=row["calls"],
            input_tokens=row["input_tokens"] or 0,
            cache_write_tokens=row["cache_write_tokens"] or 0,
            cache_read_tokens=row["cache_read_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cost=row["cost"] or Decimal("0"),
            unpriced=row["unpriced"],
            cached_calls=row["cached_calls"],
            hour_cached_calls=row["hour_cached_calls"],
        )
        for row in grouped
    ]


def month_to_date(*, office_id: int) -> dict[str, Decimal]:
    """Each coworker's spending this calendar month: what their monthly limit is measured against."""
    rows = (
        ModelCall.objects.filter(office_id=office_id, created_at__gte=month_start())
        .values("coworker_slug")
        .annotate(cost=Sum("cost_usd"))
        .order_by()
    )
    return {row["coworker_slug"]: row["cost"] or Decimal("0") for row in rows}
