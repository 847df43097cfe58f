"""What coworkers' model calls cost: each call recorded as it is stored, and the monthly spending limit.

The ORM side of usage; the figures people read are computed from these rows by office.usage (pure).
Must not import the pipeline (the pipeline calls this).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from coworkers.models import Coworker
from coworkers.providers import Completion, Provider
from coworkers.providers.wire import cost_usd, price_of

from . import cache_lifetime
from .models import ModelCall, Task
from .policy import Policy


# Who a meeting's notes are recorded for: the office, no coworker (the usage page names the row).
MEETING_NOTES = "meeting-notes"


def record_call(
    *,
    office_id: int,
    completion: Completion,
    provider: Provider,
    task: Task | None = None,
    coworker: Coworker | None = None,
    slug: str = "",
) -> ModelCall | None:
    """One model call: a step of a reply, or upkeep done for a coworker's conversation (a fold,
    a memory extraction, meeting notes). Offline work costs 0 (no model was called, nothing was
    billed); a model with no price in settings.MODEL_PRICES is recorded with no cost. A call
    that used no tokens is not recorded."""
    usage = completion.usage
    if not (usage.total_input_tokens or usage.output_tokens):
        return None
    return ModelCall.objects.create(
        office_id=office_id,
        coworker=coworker,
        coworker_slug=slug or (coworker.slug if coworker else ""),
        task=task,
        provider=provider.name,
        model=completion.model or "",
        input_tokens=usage.input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        output_tokens=usage.output_tokens,
        cache_ttl="" if provider.offline else completion.cache_ttl,
        cost_usd=call_cost(completion, provider),
    )


def call_cost(completion: Completion, provider: Provider) -> Decimal | None:
    """What one call cost in US dollars: 0 offline (no model was called, nothing was billed),
    None for a model with no price in settings.MODEL_PRICES (unknown is not free)."""
    if provider.offline:
        return Decimal("0")
    dollars = cost_usd(completion.model, completion.usage, settings.MODEL_PRICES)
    return None if dollars is None else Decimal(str(round(dollars, 6)))


def choose_cache_lifetime(task: Task, policy: Policy, model: str) -> cache_lifetime.Choice:
    """How long this task's reply prompts stay cached: the policy's lifetime, or the cheaper one for the
    pace of the task's conversation (its latest pauses, up to and including the one before this task)
    and how its latest tasks used the cache. Two queries over the last few tasks."""
    if policy.cache_lifetime in cache_lifetime.LIFETIMES:
        return cache_lifetime.choose((), setting=policy.cache_lifetime)
    rows = list(
        Task.objects.filter(session_id=task.session_id, turn__lte=task.turn)
        .order_by("-turn")
        .values_list("pk", "created_at", "finished_at", "cache_write_tokens", "cache_read_tokens")[
            : cache_lifetime.RECENT_PAUSES + 1
        ]
    )[::-1]
    pauses = cache_lifetime.pauses_between([(created, finished) for _, created, finished, *_ in rows])
    earlier = [row for row in rows if row[0] != task.pk]
    # What each earlier task's first reply call read (the task's later calls are its tool loop's, and
    # upkeep recorded for it comes after them).
    first_read: dict[int, int] = {}
    for task_id, read in (
        ModelCall.objects.filter(task_id__in=[row[0] for row in earlier])
        .order_by("created_at", "pk")
        .values_list("task_id", "cache_read_tokens")
    ):
        first_read.setdefault(task_id, read)
    reuse = cache_lifetime.reuse_of([(written, read, first_read.get(pk, 0)) for pk, _, _, written, read in earlier])
    rates = cache_lifetime.rates_for(price_of(model, settings.MODEL_PRICES))
    return cache_lifetime.choose(pauses, setting=policy.cache_lifetime, rates=rates, reuse=reuse)


def month_start(now: datetime | None = None) -> datetime:
    """The first moment of the current calendar month, in the office's time zone (UTC)."""
    local = timezone.localtime(now or timezone.now())
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def spent_this_month(coworker: Coworker, now: datetime | None = None) -> Decimal:
    total = ModelCall.objects.filter(coworker=coworker, created_at__gte=month_start(now)).aggregate(
        total=Sum("cost_usd")
    )["total"]
    return total or Decimal("0")


def limit_refusal(coworker: Coworker, now: datetime | None = None) -> str:
    """The plain message a coworker answers with once this month's spending reached their limit, or ""."""
    limit = coworker.monthly_limit_usd
    if limit is None:
        return ""
    spent = spent_this_month(coworker, now)
    if spent < limit:
        return ""
    return (
        f"{coworker.name} has reached this month's spending limit (${spent:,.2f} of ${limit:,.2f}), "
        f"so {coworker.name} did not answer this. An admin can raise the limit in Admin → Coworkers; "
        "otherwise it starts again on the 1st."
    )
