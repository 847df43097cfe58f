"""The office pages. Every view loads only what the signed-in member may see:
anything else is a 404, so an outsider cannot even tell that it exists."""

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from sessions.models import Session

from .models import Channel, Office

# Past this, the page shows the latest messages only (the full UI pages through them).
MESSAGES_SHOWN = 200


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
    return render(request, "office/office.html", {"office": office, **_sidebar(office)})


@login_required
def channel(request: HttpRequest, channel_id: int) -> HttpResponse:
    visible = Channel.objects.visible_to(request.user).select_related("office", "coworker")
    channel = get_object_or_404(visible, pk=channel_id)
    session = Session.objects.filter(channel=channel, status=Session.Status.ACTIVE).first()
    messages = []
    if session:
        newest = session.messages.order_by("-position")[:MESSAGES_SHOWN]
        messages = list(reversed(newest))
        names = dict(channel.office.coworkers.values_list("slug", "name"))
        for message in messages:
            # History keeps the slug it was written with; show today's name where there is one.
            message.speaker = names.get(message.coworker, message.coworker)
    return render(
        request,
        "office/channel.html",
        {
            "office": channel.office,
            "channel": channel,
            "session": session,
            "history": messages,
            "task_count": session.tasks.count() if session else 0,
            "truncated": bool(messages) and messages[0].position > 1,
            "past_sessions": channel.sessions.filter(status=Session.Status.ENDED)[:20],
            **_sidebar(channel.office),
        },
    )


def _sidebar(office: Office) -> dict:
    channels = list(office.channels.select_related("coworker"))
    return {
        "direct_channels": [c for c in channels if c.kind == Channel.Kind.DIRECT],
        "team_channels": [c for c in channels if c.kind in (Channel.Kind.MAIN, Channel.Kind.ALL_HANDS)],
        "project_channels": [c for c in channels if c.kind == Channel.Kind.PROJECT],
        "meeting_channels": [c for c in channels if c.kind == Channel.Kind.MEETING],
    }
