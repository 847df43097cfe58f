"""People's search box: the office's conversations, found by the history's search engine
(sessions.search, the same one recall and the coworkers' search_history use), and a page that
opens a conversation at a message.

Membership is checked exactly as for the other pages: an office or channel the person is not
a member of is a 404, so an outsider cannot tell what exists, and results come only from
channels they can see.
"""

from __future__ import annotations

import uuid
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlsplit

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.dateformat import format as format_date
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from sessions import relevance, search
from sessions.models import Message, Session, Task
from sessions.senders import coworker_names, needs_coworker_names, person_names, written_by

from . import ratelimit
from .models import Channel
from .views import (
    _prepare_history,
    _visible_channel,
    messages_around,
    nudges_under_their_instruction,
    offices_of,
    plain_words,
    sidebar,
)

RESULTS = 30
QUERY_CHARS = 300
SNIPPET_CHARS = 240
# Opening a conversation at a message shows this many messages on either side of it.
AROUND = 40
# A search reads every channel the person can see: far more than a person types in a minute,
# few enough that one script cannot keep the database busy for everyone else.
SEARCHES_PER_MINUTE = 60


@login_required
def office_search(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    query = request.GET.get("q", "").strip()[:QUERY_CHARS]
    refused, results = "", []
    if query:
        verdict = ratelimit.hit(f"search:{request.user.pk}", limit=SEARCHES_PER_MINUTE, period=60)
        if verdict.allowed:
            results = found_messages(query, Channel.objects.visible_to(request.user).filter(office=office), viewer=request.user.pk)
        else:
            refused = (
                f"You have searched {SEARCHES_PER_MINUTE} times in the last minute. "
                f"Try again in {ratelimit.wait_phrase(verdict.retry_after)}."
            )
    # A query of nothing but words too common to search ("what", "可以") is told so, not "no match".
    only_common = bool(query) and not refused and not search.query_terms(query)
    response = render(
        request,
        "office/search.html",
        {"office": office, "query": query, "results": results, "refused": refused, "only_common": only_common,
         "search_page": True, **sidebar(office, request.user)},
        status=429 if refused else 200,
    )
    if refused:
        response["Retry-After"] = str(verdict.retry_after)
    return response


def found_messages(query: str, channels, *, viewer: int | None) -> list[dict]:
    """The messages of these channels that best match the query, best first, ready to show."""
    by_id = {c.pk: c for c in channels}
    hits = search.search(query, channel_ids=list(by_id), limit=RESULTS)
    rows = Message.objects.filter(pk__in=[h.message_id for h in hits]).select_related("session")
    messages = {str(m.pk): m for m in rows}
    coworkers = {c.slug: c.name for channel in by_id.values() for c in [channel.coworker] if c}
    origins = _instruction_origins([m for m in messages.values() if m.role == Message.Role.USER])
    names = coworker_names(next(iter(by_id.values())).office_id) if needs_coworker_names(origins.values()) else {}
    people = person_names(origins.values())
    results = []
    for hit in hits:
        message = messages.get(hit.message_id)
        if message is None:
            continue
        channel = by_id[hit.channel_id]
        results.append(
            {
                "message": message,
                "channel": channel,
                "speaker": _speaker(message, coworkers, written_by(origins.get((message.session_id, message.turn)), names, people, viewer)),
                # Plain words, as past conversations are previewed: a reply's markdown marks mean nothing in a line.
                "snippet": highlighted(plain_words(_searchable(message)), hit.matched),
                "active": message.session.status == Session.Status.ACTIVE,
                "where": conversation_heading(channel, message.session),
            }
        )
    return results


def conversation_title(channel: Channel, session: Session) -> str:
    """"Launch sync · current conversation", "Mina · conversation of Dec 1, 09:30" (server time, for
    a page's <title>): the channel, then which of its conversations (by when it began: two of one
    day are told apart)."""
    name = _channel_name(channel)
    if session.status == Session.Status.ACTIVE:
        return f"{name} · current conversation"
    return f"{name} · conversation of {format_date(session.started_at, 'M j, H:i')}"


def conversation_heading(channel: Channel, session: Session) -> SafeString:
    """conversation_title as the page shows it: the time a <time> the page gives in the reader's
    own zone and format, as it does every message's."""
    if session.status == Session.Status.ACTIVE:
        return format_html("{}", conversation_title(channel, session))
    return format_html(
        '{} · conversation of <time datetime="{}" data-with-day>{}</time>',
        _channel_name(channel), session.started_at.isoformat(), format_date(session.started_at, "M j, H:i"),
    )


def _channel_name(channel: Channel) -> str:
    return channel.coworker.name if channel.kind == Channel.Kind.DIRECT and channel.coworker else channel.name


def _instruction_origins(instructions: list[Message]) -> dict[tuple[int, int], dict]:
    """The origin of each instruction's task, by (session, turn): who wrote it, when not the person."""
    wanted = {(m.session_id, m.turn) for m in instructions}
    if not wanted:
        return {}
    rows = Task.objects.filter(session_id__in={s for s, _ in wanted}, turn__in={t for _, t in wanted})
    return {(s, t): origin for s, t, origin in rows.values_list("session_id", "turn", "origin") if (s, t) in wanted}


def _speaker(message: Message, coworkers: dict[str, str], written_by: str = "") -> str:
    if message.role == Message.Role.USER:
        return written_by or "You"
    if message.role == Message.Role.TOOL:
        return "Tool result"
    return coworkers.get(message.coworker) or message.coworker.capitalize() or "Coworker"


def _searchable(message: Message) -> str:
    return search.entry_text(message.role, message.content, message.tool_calls)


def highlighted(text: str, terms, limit: int = SNIPPET_CHARS) -> SafeString:
    """A piece of `text` around its first match, escaped, with the matched words in <mark>."""
    spans = relevance.matching_spans(text, terms)
    start = max(spans[0][0] - limit // 3, 0) if spans else 0
    end = min(start + limit, len(text))
    if start:  # begin at a word
        space = text.find(" ", start, spans[0][0] if spans else end)
        start = space + 1 if space >= 0 else start
    out, at = [], start
    for s, e in spans:
        if s < start or e > end:
            continue
        out.append(escape(text[at:s]))
        out.append(f"<mark>{escape(text[s:e])}</mark>")
        at = e
    out.append(escape(text[at:end]))
    return mark_safe(("…" if start else "") + "".join(out) + ("…" if end < len(text) else ""))


@login_required
def message_in_context(request: HttpRequest, channel_id: int, message_id: uuid.UUID) -> HttpResponse:
    """A conversation opened at one message: the messages around it, the message marked."""
    channel = _visible_channel(request, channel_id)
    target = Message.objects.filter(pk=message_id, session__channel=channel).select_related("session").first()
    if target is None:
        raise Http404("No such message here.")
    session = target.session
    messages = nudges_under_their_instruction(messages_around(session, target.position, AROUND))
    _prepare_history(channel, session, messages, viewer=request.user.pk)
    query = _query_of(request)
    if terms := search.query_terms(query) if query else []:
        # The words searched for, marked in the message found, as they are in the results.
        for message in messages:
            if message.pk == target.pk and getattr(message, "html", ""):
                message.html = marked(message.html, terms)
    return render(
        request,
        "office/message_context.html",
        {
            "office": channel.office,
            "channel": channel,
            "session": session,
            "target": target,
            "title": conversation_title(channel, session),
            "heading": conversation_heading(channel, session),
            "results_url": _results_url(request, channel.office.slug),
            "history": messages,
            "more_before": messages and messages[0].position > 1,
            **sidebar(channel.office, request.user),
        },
    )


def _results_url(request: HttpRequest, slug: str) -> str:
    """The results the person came from (their query), else the search page. A link, not
    history.back(): a result opened in a new tab or from a shared link has no history to go back to."""
    page = reverse("office_search", args=[slug])
    query = _query_of(request, page)
    return f"{page}?{urlencode({'q': query})}" if query else page


def _query_of(request: HttpRequest, page: str | None = None) -> str:
    """The query a result was opened from: its link's `q`, else the referring search page's."""
    if query := request.GET.get("q", "").strip()[:QUERY_CHARS]:
        return query
    referer = request.headers.get("referer", "")
    parts = urlsplit(referer)
    if not parts.path.endswith("/search/") or (page and parts.path != page):
        return ""
    if not url_has_allowed_host_and_scheme(referer, {request.get_host()}, request.is_secure()):
        return ""
    return parse_qs(parts.query).get("q", [""])[0].strip()[:QUERY_CHARS]


class _Marker(HTMLParser):
    """Sanitized HTML again, with <mark> around the searched words in its text (not in tags or
    attributes): tags are copied as they came, text is marked where it says the words."""

    def __init__(self, terms) -> None:
        super().__init__(convert_charrefs=False)
        self.terms, self.out = list(terms), []

    def handle_starttag(self, tag, attrs) -> None:
        self.out.append(self.get_starttag_text())

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag) -> None:
        self.out.append(f"</{tag}>")

    def handle_data(self, data) -> None:
        at = 0
        for start, end in relevance.matching_spans(data, self.terms):
            if start >= at:  # words are letters: never inside an entity or a tag
                self.out.append(f"{data[at:start]}<mark>{data[start:end]}</mark>")
                at = end
        self.out.append(data[at:])

    def handle_entityref(self, name) -> None:
        self.out.append(f"&{name};")

    def handle_charref(self, name) -> None:
        self.out.append(f"&#{name};")


# A message's HTML larger than this is shown unmarked: marking parses it again in Python, about
# 0.25 s a megabyte, on every opening of the result (a long code paste can be megabytes).
MARKED_HTML_CHARS = 200_000


def marked(html: str, terms) -> SafeString:
    """`html` (the server's sanitized HTML of a message: it is trusted as it is, tags and all)
    with the words of `terms` marked; unmarked past MARKED_HTML_CHARS."""
    if len(html) > MARKED_HTML_CHARS:
        return mark_safe(html)
    marker = _Marker(terms)
    marker.feed(html)
    marker.close()
    return mark_safe("".join(marker.out))
