"""The office pages. Every view loads only what the signed-in member may see:
anything else is a 404, so an outsider cannot even tell that it exists.

Reads only; the channel's writes go through the websocket (office.consumers) and
memory edits through office.memory_views.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast, Coalesce, Length, Substr
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from coworkers.routing import team_of
from coworkers.providers import offline_responder_answers
from sessions import relevance
from sessions.senders import asked_again, person_names, sent_by, written_by
from sessions.meetings import NOTES_MARK  # a meeting's notes: the one notice shown formatted, with its links
from sessions.models import MemoryItem, Message, Session, SummaryVersion, Task

from . import events, presence, reading, report_text
from .markdown import few_marks, render as render_markdown
from .models import Channel, Office
from .rendering import html_of

# Past this, the page shows the latest messages only (the full UI pages through them).
MESSAGES_SHOWN = 200
# A past conversation is read in one page; longer ones show their latest messages.
PAST_MESSAGES_SHOWN = 2000
# And at most this many characters of them (text and rendered HTML): 100 messages of one long
# highlighted code block each made a 54 MB page that took Chromium 50 s to open.
PAGE_CHARS = 3_000_000
# The order of the prompt's layers, most stable first, as the context bar draws them.
LAYERS = ("system", "memory", "summary", "recent", "recalled", "current")
# What each layer is called on the page (static/js/report.js uses the same words).
LAYER_TITLES = {
    "system": "Instructions", "memory": "Memory", "summary": "Summary",
    "recent": "Recent tasks", "recalled": "Recalled", "current": "This task",
}
# How an instruction's task state reads on the page (the page script uses the same words).
TASK_LABELS = {"queued": "Queued", "running": "Working", "failed": "Failed", "stopped": "Stopped"}
# The notice that suggests a new conversation starts with this (it is stored as a message).
NUDGE_MARK = "💡"
# A past conversation is listed by its first instruction and the start of its first reply.
TITLE_CHARS, PREVIEW_CHARS = 70, 110
# Spaces and tabs only around a mark: "\s*" ran over every following line break from each one.
_LINE_MARKS = re.compile(r"(?m)^[ \t]*+(?:#{1,6}|[-+*]|\d+[.)]|>)(?:[ \t]++|$)")
# A mark that opens or closes something (**bold**, `code`): touching a word on one side only.
# "n * 12" keeps its star, "snake_case" its underscore.
_INLINE_MARKS = re.compile(r"(?<![\w*_`~])[*_`~]+(?=[^\s*_`~])|(?<=[^\s*_`~])[*_`~]+(?![\w*_`~])")
# A code fence with its language ("```python"), whole (possessive: linear on any line).
_FENCE_LINE = re.compile(r"(?m)^[ \t]*+(?:`{3,}+|~{3,}+)[^\n`]*+$")


def offices_of(user) -> QuerySet[Office]:
    return Office.objects.filter(memberships__user=user)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    offices = list(offices_of(request.user))
    if len(offices) == 1:
        return redirect(offices[0])
    return render(request, "office/home.html", {"offices": offices})


@login_required
def office(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    return render(request, "office/office.html", {"office": office, **sidebar(office, request.user)})


@login_required
def channel(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _visible_channel(request, channel_id)
    # Read before the history: the page script resyncs from here, so nothing after it is missed.
    seq = channel.last_event_seq
    reading.mark_read(user=request.user, channel_id=channel.pk, seq=seq)
    session = Session.objects.filter(channel=channel, status=Session.Status.ACTIVE).first()
    messages: list[Message] = []
    open_tasks: list[dict] = []
    if session:
        messages = newest_messages(session, MESSAGES_SHOWN)
        open_tasks = [
            {"id": t.pk, "turn": t.turn, "status": t.status, "coworker": t.coworker, "error": t.error}
            for t in session.tasks.filter(status__in=[Task.Status.QUEUED, Task.Status.RUNNING])
        ]
    messages = nudges_under_their_instruction(messages)
    reports = _prepare_history(channel, session, messages, viewer=request.user.pk)
    coworkers = list(channel.office.coworkers.all())
    page = {
        "channel": channel.pk,
        "kind": channel.kind,
        "session": session.pk if session else None,
        "seq": seq,
        "socket": f"/ws/channels/{channel.pk}/",
        "reportUrl": _report_url_template(channel),
        "coworkers": {c.slug: {"name": c.name, "role": c.role, "colour": c.colour} for c in coworkers},
        "tasks": open_tasks,
        "reports": reports,
        "nudgeMark": NUDGE_MARK,
        # Who an @mention can pick here (the composer suggests them): the channel's team.
        "members": [] if channel.kind == Channel.Kind.DIRECT else [c.slug for c in team_of(channel)],
        "notesMark": NOTES_MARK,
    }
    return render(
        request,
        "office/channel.html",
        {
            "office": channel.office,
            "channel": channel,
            "session": session,
            "history": messages,
            "carried_note_html": events.carried_note_html(session) if session else "",
            "task_count": session.tasks.count() if session else 0,
            "truncated": bool(messages) and messages[0].position > 1,
            "meeting_ended": channel.kind == Channel.Kind.MEETING
            and Message.objects.filter(session__channel=channel, role=Message.Role.NOTICE, content__startswith=NOTES_MARK).exists(),
            "past_sessions": _past_sessions(channel),
            "page": page,
            "offline": _offline(),
            **sidebar(channel.office, request.user),
        },
    )


def newest_messages(session: Session, limit: int) -> list[Message]:
    """The session's newest messages, oldest first: at most `limit`, and those whose text and HTML
    fit in PAGE_CHARS together (the newest always). Their sizes are read first, so a page of large
    messages never loads more of them than it shows."""
    sizes = _sized(session.messages.order_by("-position")).values_list("pk", "size")[:limit]
    return _fitting(sizes)


def messages_around(session: Session, position: int, around: int) -> list[Message]:
    """The message at `position` and up to `around` on each side, in order: the nearest first
    while they fit in PAGE_CHARS (the message itself always), sizes read first as above."""
    near = session.messages.filter(position__gte=position - around, position__lte=position + around)
    rows = sorted(_sized(near).values_list("pk", "position", "size"), key=lambda row: (abs(row[1] - position), row[1]))
    return _fitting((pk, size) for pk, _, size in rows)


def _sized(messages):
    # Tool calls count as stored (each is shown cut to ARGS_SHOWN_CHARS, but they are all loaded).
    return messages.annotate(
        size=Length("content") + Coalesce(Length("rendered__html"), 0) + Coalesce(Length(Cast("tool_calls", TextField())), 0)
    )


def _fitting(sizes) -> list[Message]:
    kept, used = [], 0
    for pk, size in sizes:
        used += size or 0
        if kept and used > PAGE_CHARS:
            break
        kept.append(pk)
    return list(Message.objects.filter(pk__in=kept).order_by("position"))


# The pages name this icon inline; the admin's pages and JSON views do not, and browsers then ask
# for /favicon.ico (a 404 in every log and console).
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#4f46e5"/>'
    '<text x="16" y="22" font-size="18" text-anchor="middle" fill="white" font-family="sans-serif">V</text></svg>'
)


def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@login_required
def past_session(request: HttpRequest, channel_id: int, session_id: int) -> HttpResponse:
    """An ended conversation, read-only. The active one lives on the channel page."""
    channel = _visible_channel(request, channel_id)
    session = get_object_or_404(channel.sessions, pk=session_id)
    if session.status == Session.Status.ACTIVE:
        return redirect(channel)
    messages = nudges_under_their_instruction(newest_messages(session, PAST_MESSAGES_SHOWN))
    _prepare_history(channel, session, messages, viewer=request.user.pk)  # its context bars are rendered on the page
    past = _past_sessions(channel)
    first = next((m.content for m in messages if m.role == Message.Role.USER and m.turn == 1), "")
    title = next((s.title for s in past if s.pk == session.pk), "") or shorten(first, TITLE_CHARS)
    page = {
        "channel": channel.pk,
        "session": session.pk,
        "reportUrl": _report_url_template(channel),
        "coworkers": {c.slug: {"name": c.name, "role": c.role, "colour": c.colour} for c in channel.office.coworkers.all()},
        "readOnly": True,
    }
    return render(
        request,
        "office/session.html",
        {
            "office": channel.office,
            "channel": channel,
            "session": session,
            "history": messages,
            "task_count": session.tasks.count(),
            "truncated": bool(messages) and messages[0].position > 1,
            "meeting_ended": channel.kind == Channel.Kind.MEETING
            and Message.objects.filter(session__channel=channel, role=Message.Role.NOTICE, content__startswith=NOTES_MARK).exists(),
            "past_sessions": past,
            "title": title or "Untitled conversation",
            "page": page,
            **sidebar(channel.office, request.user),
        },
    )


@login_required
def task_report(request: HttpRequest, channel_id: int, turn: int) -> JsonResponse:
    """What one task's prompt was made of, what it cost, the summary and memory the model saw."""
    channel = _visible_channel(request, channel_id)
    session_id = request.GET.get("session")
    if session_id:
        if not _is_id(session_id):
            raise Http404
        session = get_object_or_404(channel.sessions, pk=int(session_id))
    else:
        session = get_object_or_404(channel.sessions, status=Session.Status.ACTIVE)
    task = get_object_or_404(session.tasks, turn=turn)
    report = task.prompt_report or {}
    layers = report.get("layers") or {}

    summary = None
    through = report.get("summarized_through") or 0
    if through:
        # Every fold up to the one the prompt saw, each with the model that wrote it.
        versions = list(SummaryVersion.objects.filter(session=session, through_turn__lte=through).order_by("through_turn"))
        version = versions[-1] if versions and versions[-1].through_turn == through else None
        if version:
            folds = [
                {"from_turn": v.from_turn, "through_turn": v.through_turn, "model": v.model, "created_at": v.created_at.isoformat()}
                for v in versions
            ]
            summary = {
                "text": version.text,
                # Rendered on request: a summary is at most summary_chars long, and read only here.
                "html": render_markdown(version.text),
                "from_turn": version.from_turn,
                "through_turn": version.through_turn,
                "model": version.model,
                "created_at": version.created_at.isoformat(),
                "folds": folds,
                "written_by": report_text.folds_line(folds),
            }
    carried = None
    if report and report_text.carried_note(report) and session.carried_note.strip():
        carried = {"text": session.carried_note, "html": render_markdown(session.carried_note)}

    recalled_layer = layers.get("recalled") or {}
    in_memory = _ids((layers.get("memory") or {}).get("items"))
    recalled = _ids(recalled_layer.get("memory_items"))
    kept = _ids(recalled_layer.get("kept_memory_items"))
    items = MemoryItem.objects.filter(office_id=channel.office_id, pk__in=[*in_memory, *recalled, *kept])
    by_id = {item.pk: item for item in items.select_related("coworker", "channel")}
    memory = [
        {
            "id": item.pk,
            "text": item.text,
            "kind": item.kind,
            "scope": item.scope,
            "scope_name": _scope_name(item),
            "pinned": item.pinned,
            "active": item.active,
            # Where the prompt showed it: the memory layer, this task's tail (new since the summary),
            # or the tail kept in front of an earlier task.
            "layer": "memory" if pk in in_memory else "recalled" if pk in recalled else "kept",
        }
        for pk in dict.fromkeys([*in_memory, *recalled, *kept])
        if (item := by_id.get(pk)) is not None
    ]
    lifetimes = list(task.model_calls.values_list("cache_ttl", flat=True))
    usage = {
        "provider": task.provider,
        "model": task.model,
        "input_tokens": task.input_tokens,
        "cache_write_tokens": task.cache_write_tokens,
        "cache_read_tokens": task.cache_read_tokens,
        "output_tokens": task.output_tokens,
        "cost_usd": str(task.cost_usd) if task.cost_usd is not None else None,
        # Input tokens add up every call of the task (a tool loop makes several); the bar shows one prompt.
        "calls": len(lifetimes),
        # How long the calls' prompts were cached ("5m", "1h"); none offline.
        "cache_ttl": sorted({ttl for ttl in lifetimes if ttl}),
    }
    coworker = channel.office.coworkers.filter(slug=task.coworker).first() if task.coworker else None
    who = coworker.name if coworker else (task.coworker or "The coworker")

    return JsonResponse(
        {
            "channel": channel.pk,
            "session": session.pk,
            "task": task.pk,
            "turn": task.turn,
            "status": task.status,
            "coworker": task.coworker,
            "report": task.prompt_report,
            "usage": usage,
            "summary": summary,
            "carried_note": carried,
            "memory_items": memory,
            "overview": report_text.describe(task.prompt_report, who=who, usage=usage),
        },
        json_dumps_params={"ensure_ascii": False},
    )


def sidebar(office: Office, user=None) -> dict:
    channels = list(office.channels.select_related("coworker"))
    unread = reading.unread_counts(user=user, office=office) if user is not None else {}
    for c in channels:
        c.unread = unread.get(c.pk, 0)
    # The same answer the office socket keeps live (office.presence).
    working = presence.working_coworkers(office_id=office.pk, user=user)
    direct = [c for c in channels if c.kind == Channel.Kind.DIRECT]
    for c in direct:
        c.working = c.coworker.slug in working
    return {
        "direct_channels": direct,
        "team_channels": [c for c in channels if c.kind in (Channel.Kind.MAIN, Channel.Kind.ALL_HANDS)],
        "project_channels": _by_name(c for c in channels if c.kind == Channel.Kind.PROJECT),
        "meeting_channels": _by_name(c for c in channels if c.kind == Channel.Kind.MEETING),
    }


def _by_name(channels) -> list:
    """By name as people read it: "alpha launch" beside "Alpha", not after every capital letter."""
    return sorted(channels, key=lambda c: (c.name.casefold(), c.pk))


def _report_url_template(channel: Channel) -> str:
    """The report endpoint's address with a {turn} placeholder, for the page script."""
    return reverse("task_report", args=[channel.pk, 0]).replace("/tasks/0/", "/tasks/{turn}/")


def _visible_channel(request: HttpRequest, channel_id: int) -> Channel:
    visible = Channel.objects.visible_to(request.user).select_related("office", "coworker")
    return get_object_or_404(visible, pk=channel_id)


def _past_sessions(channel: Channel) -> list[Session]:
    """The channel's ended conversations, newest first, each with a title (its first instruction)
    and a preview (the start of its first reply)."""
    ended = channel.sessions.filter(status=Session.Status.ENDED).order_by("-started_at")
    messages = Message.objects.filter(session=OuterRef("pk")).order_by("position").values("content")
    sessions = list(
        ended.annotate(
            task_total=Count("tasks"),
            first_instruction=Substr(Subquery(messages.filter(role=Message.Role.USER)[:1]), 1, 400),
            first_reply=Substr(Subquery(messages.filter(role=Message.Role.ASSISTANT).exclude(content="")[:1]), 1, 400),
        )[:20]
    )
    for session in sessions:
        session.title = shorten(session.first_instruction or "", TITLE_CHARS) or "Untitled conversation"
        session.preview = shorten(plain_words(session.first_reply or ""), PREVIEW_CHARS)
    return sessions


def shorten(text: str, limit: int) -> str:
    """One line of at most `limit` characters, cut at a word where one is near."""
    return relevance.shorten(" ".join(text.split()), limit)


def plain_words(markdown_text: str) -> str:
    """Markdown's punctuation left out of a preview line (heading, list and quote marks, `**`,
    backticks, code fences, a table's rules and bars), not the underscores inside a word."""
    lines = (line for line in markdown_text.split("\n") if not _table_rule(line))
    text = _FENCE_LINE.sub(" ", "\n".join(lines)).replace("|", " ")
    return " ".join(_INLINE_MARKS.sub("", _LINE_MARKS.sub(" ", few_marks(text))).split())


def _table_rule(line: str) -> bool:
    """A table's delimiter row, "|---|:-:|"."""
    row = line.strip()
    return "-" in row and "|" in row and not row.strip("|-: \t")


def nudges_under_their_instruction(messages: list[Message]) -> list[Message]:
    """The long-conversation nudge is stored as a notice of its task; it is shown right under that task's instruction."""
    nudges = [m for m in messages if m.role == Message.Role.NOTICE and m.content.startswith(NUDGE_MARK)]
    if not nudges:
        return messages
    ordered = [m for m in messages if m not in nudges]
    for notice in nudges:
        instruction = next((i for i, m in enumerate(ordered) if m.role == Message.Role.USER and m.turn == notice.turn), None)
        if instruction is None:
            ordered.append(notice)
        else:
            ordered.insert(instruction + 1, notice)
    return ordered


def _prepare_history(channel: Channel, session: Session | None, messages: list[Message], *, viewer: int | None) -> dict[str, dict]:
    """Decorate messages for the template (speaker, rendered HTML, tool calls, context bar).

    Returns the context bars by turn, for the page script. Only the server's sanitized
    HTML is ever marked safe; user text and tool output are escaped by the template.
    """
    coworkers = {c.slug: c for c in channel.office.coworkers.all()}
    turns = {m.turn for m in messages}
    reports: dict[str, dict] = {}
    states: dict[int, tuple[str, str]] = {}
    meetings_of: dict[int, int] = {}  # a follow-up's turn -> the meeting channel it came from
    handoffs_of: dict[int, tuple[int, int]] = {}  # a handoff's turn -> the task and channel it came from
    origins: dict[int, dict] = {}
    if session and turns:
        rows = session.tasks.filter(turn__in=turns).values_list("turn", "status", "error", "prompt_report", "coworker", "origin")
        for turn, status, error, report, coworker, origin in rows:
            states[turn] = (status, error)
            if (origin or {}).get("follow_up") and origin.get("meeting"):
                meetings_of[turn] = origin["meeting"]
            if isinstance((origin or {}).get("handoff_from"), int) and isinstance(origin.get("channel"), int):
                handoffs_of[turn] = (origin["handoff_from"], origin["channel"])
            origins[turn] = origin
            if report:
                # The report is of the prompt built for the task's (first) coworker: its bar goes on their replies.
                reports[str(turn)] = {**bar(report), "coworker": coworker}
    call_names: dict[str, str] = {}
    # Rendered when stored; rendering history again on every page view was seconds of CPU a view.
    html = html_of([m for m in messages if (m.role in (Message.Role.USER, Message.Role.ASSISTANT) and m.content) or _is_notes(m)])
    meeting_names = dict(Channel.objects.filter(office_id=channel.office_id, pk__in=meetings_of.values()).values_list("pk", "name"))
    handed_from = {
        c.pk: c for c in Channel.objects.filter(office_id=channel.office_id, pk__in={c for _, c in handoffs_of.values()}).select_related("coworker")
    } if handoffs_of else {}
    names = {slug: c.name for slug, c in coworkers.items()}
    people = person_names(origins.values())
    for message in messages:
        coworker = coworkers.get(message.coworker)
        # History keeps the slug it was written with; show today's name where there is one.
        message.speaker = coworker.name if coworker else message.coworker
        message.colour = coworker.colour if coworker else ""
        message.is_nudge = message.role == Message.Role.NOTICE and message.content.startswith(NUDGE_MARK)
        if _is_notes(message):
            message.is_notes, message.html = True, html.get(str(message.pk), "")
        if message.role == Message.Role.ASSISTANT:
            message.html = html.get(str(message.pk), "")
            message.calls = [_call(call) for call in message.tool_calls or ()]
            call_names.update({c["id"]: c["name"] for c in message.calls})
            context = reports.get(str(message.turn))
            if not message.tool_calls and context and context["coworker"] in ("", message.coworker):
                message.context = context
        elif message.role == Message.Role.USER:
            message.html = html.get(str(message.pk), "")
            # The instruction shows how its task ended when that is not simply "done".
            message.task_status, message.task_error = states.get(message.turn, ("", ""))
            if message.task_status == Task.Status.DONE:
                message.task_status = ""
            message.task_label = TASK_LABELS.get(message.task_status, "")
            if (meeting := meetings_of.get(message.turn)) in meeting_names:
                message.meeting = {"name": meeting_names[meeting], "url": reverse("channel", args=[meeting])}
            if (handoff := handoffs_of.get(message.turn)) and (source := handed_from.get(handoff[1])):
                where = f"the 1:1 with {source.coworker.name}" if source.kind == Channel.Kind.DIRECT and source.coworker else f"#{source.name}"
                message.handed_from = {"where": where, "url": reverse("open_task", args=[handoff[0]])}
            # Not typed by this person (a handoff, a meeting's follow-up, someone else in a shared
            # channel): who wrote it, as live; a coworker's or a meeting's shows as handed on.
            origin = origins.get(message.turn)
            message.sent_by = written_by(origin, names, people, viewer)
            message.handed_on = bool(sent_by(origin, names))
            message.asked_again = asked_again(origin)
        elif message.role == Message.Role.TOOL:
            message.tool_name = call_names.get(message.tool_call_id, "")
    return reports


def _is_notes(message: Message) -> bool:
    return message.role == Message.Role.NOTICE and message.content.startswith(NOTES_MARK)


def _call(call: dict) -> dict:
    args = call.get("args") or {}
    preview = ""
    if isinstance(args, dict) and args:
        first = next(iter(args.values()))
        preview = first if isinstance(first, str) else json.dumps(first, ensure_ascii=False)
        preview = preview if len(preview) <= 60 else preview[:59] + "…"
    return {"id": call.get("id", ""), "name": call.get("name", "tool"), "args_json": args_shown(args), "preview": preview}


# A tool call's arguments on the page, in characters: as a tool result's text is shown. Imported
# arguments may hold up to a million characters nested 50 deep, which indented were 29 MB each.
ARGS_SHOWN_CHARS = 4_000


def args_shown(args) -> str:
    """The arguments as indented JSON when short, else compact, cut at ARGS_SHOWN_CHARS."""
    compact = json.dumps(args, ensure_ascii=False)
    shown = json.dumps(args, ensure_ascii=False, indent=2) if len(compact) <= ARGS_SHOWN_CHARS else compact
    if len(shown) <= ARGS_SHOWN_CHARS:
        return shown
    return f"{shown[:ARGS_SHOWN_CHARS]}… ({len(compact):,} characters in all)"


def bar(report: dict) -> dict:
    """The context bar of one prompt report: each layer's share, with characters and estimated tokens."""
    layers = report.get("layers") or {}
    segments = []
    for name in LAYERS:
        layer = layers.get(name) or {}
        chars = int(layer.get("chars") or 0)
        tokens = layer.get("tokens")
        segments.append(
            {"name": name, "title": LAYER_TITLES[name], "chars": chars, "tokens": tokens, "label": _amount(chars, tokens)}
        )
    total = report.get("total_chars") or sum(s["chars"] for s in segments)
    tokens = report.get("estimated_tokens")
    return {"segments": segments, "total_chars": total, "estimated_tokens": tokens, "label": _amount(total, tokens)}


def _amount(chars: int, tokens: int | None) -> str:
    return f"{chars:,} characters" + (f" · ~{tokens:,} tokens" if tokens is not None else "")


def _ids(values: Iterable | None) -> list[int]:
    return [int(v) for v in values or () if isinstance(v, int) or (isinstance(v, str) and _is_id(v))]


def _is_id(value: str) -> bool:
    """ASCII digits only: str.isdigit() is also true of '²' and other digits int() refuses."""
    return value.isascii() and value.isdigit() and len(value) <= 18


def _scope_name(item: MemoryItem) -> str:
    if item.scope == MemoryItem.Scope.COWORKER and item.coworker:
        return item.coworker.name
    if item.scope == MemoryItem.Scope.CHANNEL and item.channel:
        return f"# {item.channel.name}"
    return "Office"


def _offline() -> bool:
    """The offline responder answers (no API key, or MODEL_PROVIDER=offline): the page says so, once."""
    return offline_responder_answers()
