"""The memory page: what the office and each coworker remember, and the person's edits to it.

Plain forms with POST and CSRF. Members of the office only; everyone else gets a 404.
Writes go through office.memory, which keeps the audit log.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.db.models.functions import Length
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from sessions.models import MemoryItem, Session
from sessions.policy import default_policy
from sessions.prompts import resolve_policy

from . import memory as memory_service
from .models import Channel, Office
from .views import offices_of, sidebar

# One fact, one or two sentences: longer text would crowd every prompt it is in.
MAX_ITEM_CHARS = 1_000
# The page shows this many items, pinned first, then the most recently changed: each is a form, and
# 11,000 of them made a 29 MB page that took 18 s to build. The usage bars still count them all.
PAGE_ITEMS = 300


class MemoryItemForm(forms.Form):
    text = forms.CharField(
        max_length=MAX_ITEM_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={
            "required": "A memory needs some text. To remove it, use Delete.",
            "max_length": f"Keep a memory under {MAX_ITEM_CHARS:,} characters (it is %(show_value)d). "
            "Split it into separate facts.",
        },
    )
    kind = forms.ChoiceField(
        choices=MemoryItem.Kind.choices, error_messages={"invalid_choice": "Pick one of the listed kinds."}
    )
    pinned = forms.BooleanField(required=False, help_text="Pinned items are always in the prompt, first.")


@login_required
def memory(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    return _render_page(request, office)


@login_required
@require_POST
def edit_item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    office, item = _office_and_item(request, slug, item_id)
    form = MemoryItemForm(request.POST, prefix=f"item{item.pk}")
    if not form.is_valid():
        for name in form.errors:
            if name in form.fields:
                # Screen readers announce the message with the field; the cursor lands on the first one.
                form.fields[name].widget.attrs.update(
                    {"aria-invalid": "true", "aria-describedby": f"{form[name].id_for_label}-error"}
                )
        first = next((name for name in form.fields if name in form.errors), None)
        if first:
            form.fields[first].widget.attrs["autofocus"] = True
        return _render_page(request, office, invalid=(item.pk, form), status=400)
    event = memory_service.edit_memory_item(
        item=item,
        text=form.cleaned_data["text"],
        kind=form.cleaned_data["kind"],
        pinned=form.cleaned_data["pinned"],
        user=request.user,
    )
    messages.success(request, "Memory saved." if event else "Nothing changed.")
    return _back(office, item)


@login_required
@require_POST
def pin_item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    office, item = _office_and_item(request, slug, item_id)
    if request.POST.get("pinned") not in ("0", "1"):
        # The page's forms always send one of the two; anything else must not silently unpin.
        messages.error(request, "Pin or unpin: the request said neither, so nothing changed.")
        return _render_page(request, office, status=400)
    pinned = request.POST["pinned"] == "1"
    memory_service.set_memory_pinned(item=item, pinned=pinned, user=request.user)
    messages.success(request, "Pinned: always in the prompt, first." if pinned else "Unpinned.")
    return _back(office, item)


@login_required
@require_POST
def delete_item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    office, item = _office_and_item(request, slug, item_id)
    memory_service.forget_memory_item(item=item, user=request.user)
    messages.success(request, f"Deleted “{_short(item.text)}”; the audit log keeps it.")
    return redirect(reverse("memory", args=[office.slug]))


def _office_and_item(request: HttpRequest, slug: str, item_id: int) -> tuple[Office, MemoryItem]:
    """The member's office and one of its active memory items; 404 for anything else."""
    office = get_object_or_404(offices_of(request.user), slug=slug)
    return office, get_object_or_404(MemoryItem, pk=item_id, office=office, active=True)


def _back(office: Office, item: MemoryItem) -> HttpResponse:
    return redirect(reverse("memory", args=[office.slug]) + f"#item-{item.pk}")


def _render_page(
    request: HttpRequest, office: Office, *, invalid: tuple[int, MemoryItemForm] | None = None, status: int = 200
) -> HttpResponse:
    active = MemoryItem.objects.filter(office=office, active=True)
    items = list(
        active.select_related("coworker", "channel", "source_task__session__channel").order_by("-pinned", "-updated_at")[:PAGE_ITEMS]
    )
    # What each prompt's memory holds, counted over every item, shown or not (one query).
    totals = active.values_list("scope", "coworker_id").annotate(chars=Sum(Length("text")), count=Count("pk")).order_by()
    chars_of, total_items = {}, 0
    for scope, coworker, chars, count in totals:
        chars_of[scope, coworker] = chars or 0
        total_items += count
    for item in items:
        if invalid and invalid[0] == item.pk:
            item.form, item.invalid = invalid[1], True
        else:
            item.form = MemoryItemForm(
                initial={"text": item.text, "kind": item.kind, "pinned": item.pinned}, prefix=f"item{item.pk}"
            )
        item.source_url = _source_url(item)

    office_items = [i for i in items if i.scope == MemoryItem.Scope.OFFICE]
    office_chars = chars_of.get((MemoryItem.Scope.OFFICE, None), 0)
    bars = sidebar(office, request.user)
    direct_by_coworker = {c.coworker_id: c for c in bars["direct_channels"]}

    coworkers = []
    for coworker in office.coworkers.all():
        own = [i for i in items if i.scope == MemoryItem.Scope.COWORKER and i.coworker_id == coworker.pk]
        channel = direct_by_coworker.get(coworker.pk)
        budget = (resolve_policy(channel, coworker) if channel else default_policy(Channel.Kind.DIRECT)).memory_chars
        chars = office_chars + chars_of.get((MemoryItem.Scope.COWORKER, coworker.pk), 0)
        usage = _usage(chars, budget)
        usage["label"] = f"{coworker.name}'s prompts (office + {coworker.name})"
        coworkers.append({"coworker": coworker, "items": own, "usage": usage})

    channel_groups: dict[int, dict] = {}
    for item in items:
        if item.scope == MemoryItem.Scope.CHANNEL:
            group = channel_groups.setdefault(item.channel_id, {"channel": item.channel, "items": []})
            group["items"].append(item)

    return render(
        request,
        "office/memory.html",
        {
            "office": office,
            "office_items": office_items,
            "office_usage": _usage(office_chars, _office_budget(bars["direct_channels"])),
            "coworker_groups": coworkers,
            "channel_groups": list(channel_groups.values()),
            "item_count": len(items),
            "total_items": total_items,
            "kinds": MemoryItem.Kind.choices,
            "memory_page": True,
            **bars,
        },
        status=status,
    )


def _office_budget(direct_channels: list[Channel]) -> int:
    """The 1:1 policy's memory budget: every prompt's memory layer holds the office's items first."""
    if direct_channels:
        return resolve_policy(direct_channels[0]).memory_chars
    return default_policy(Channel.Kind.DIRECT).memory_chars


def _usage(chars: int, budget: int) -> dict:
    percent = round(100 * chars / budget) if budget else 0
    return {
        "chars": chars,
        "budget": budget,
        "budget_label": f"{budget:,}",
        "percent": percent,
        "width": min(percent, 100),
        "over": chars > budget,
    }


def _source_url(item: MemoryItem) -> str:
    task = item.source_task
    if task is None:
        return ""
    session = task.session
    if session.status == Session.Status.ACTIVE:
        return reverse("channel", args=[session.channel_id]) + f"#turn-{task.turn}"
    return reverse("past_session", args=[session.channel_id, session.pk]) + f"#turn-{task.turn}"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
