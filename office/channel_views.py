"""The pages that open channels: "New meeting" (coworkers, an agenda, rounds; the meeting starts at
once) and "New project" (a name, a topic, coworkers); and a link that opens a task wherever its
conversation is now (the meeting notes link to their follow-ups with it).

Plain forms with POST and CSRF. Members of the office only; everyone else gets a 404. Writes go
through sessions.meetings and office.projects.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from sessions import meetings
from sessions.models import Session, Task
from sessions.posting import InstructionRejected

from . import projects, ratelimit
from .models import Channel, Office
from .views import offices_of, sidebar

# Per person: each new meeting is a run of model calls, so a script must not start hundreds.
CHANNELS_PER_MINUTE = 5


class CoworkerChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, coworker) -> str:
        return f"{coworker.name} · {coworker.role}"


class MeetingForm(forms.Form):
    title = forms.CharField(
        max_length=meetings.MAX_TITLE_CHARS,
        error_messages={
            "required": "Give the meeting a title, such as “Launch sync”.",
            "max_length": f"Keep the title under {meetings.MAX_TITLE_CHARS} characters.",
        },
    )
    coworkers = CoworkerChoices(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        help_text=f"Two to {meetings.MAX_PARTICIPANTS}.",
        error_messages={
            "required": "Pick at least two coworkers: a meeting is a conversation between them.",
            "invalid_choice": "Pick coworkers of this office.",
            "invalid_pk_value": "Pick coworkers of this office.",
        },
    )
    agenda = forms.CharField(
        max_length=meetings.MAX_AGENDA_CHARS,
        widget=forms.Textarea(
            attrs={"rows": 6, "placeholder": "Pick the launch date.\nWho updates the pricing page, and by when?"}
        ),
        help_text="What the meeting is to decide, one point a line. Each coworker reads it and speaks in turn.",
        error_messages={
            "required": "Write an agenda: what should the meeting decide?",
            "max_length": f"Keep the agenda under {meetings.MAX_AGENDA_CHARS:,} characters (it is %(show_value)d).",
        },
    )
    rounds = forms.TypedChoiceField(
        coerce=int,
        choices=[(n, f"{n} round{'s' if n > 1 else ''}") for n in range(1, meetings.MAX_ROUNDS + 1)],
        initial=2,
        help_text="Each coworker speaks once a round.",
        error_messages={"invalid_choice": f"Choose from 1 to {meetings.MAX_ROUNDS} rounds."},
    )

    def __init__(self, *args, office: Office, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["coworkers"].queryset = office.coworkers.order_by("name")

    def clean_coworkers(self):
        chosen = self.cleaned_data["coworkers"]
        if len(chosen) < 2:
            raise forms.ValidationError("Pick at least two coworkers: a meeting is a conversation between them.")
        if len(chosen) > meetings.MAX_PARTICIPANTS:
            raise forms.ValidationError(f"A meeting can have at most {meetings.MAX_PARTICIPANTS} coworkers.")
        return chosen


class ProjectForm(forms.Form):
    name = forms.CharField(
        max_length=projects.MAX_NAME_CHARS,
        error_messages={
            "required": "A project needs a name, such as “Spring launch”.",
            "max_length": f"Keep the name under {projects.MAX_NAME_CHARS} characters.",
        },
    )
    topic = forms.CharField(
        required=False,
        max_length=projects.MAX_TOPIC_CHARS,
        help_text="One line on what the project is about; every coworker in it reads it.",
        error_messages={"max_length": f"Keep the topic under {projects.MAX_TOPIC_CHARS} characters."},
    )
    coworkers = CoworkerChoices(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        help_text="Who works in the channel. With no @mention, the most relevant of them answers.",
        error_messages={
            "required": "Pick at least one coworker to work on it.",
            "invalid_choice": "Pick coworkers of this office.",
            "invalid_pk_value": "Pick coworkers of this office.",
        },
    )

    def __init__(self, *args, office: Office, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["coworkers"].queryset = office.coworkers.order_by("name")


@login_required
def new_meeting(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    if request.method != "POST":
        return _page(request, office, "office/new_meeting.html", MeetingForm(office=office))
    form = MeetingForm(request.POST, office=office)
    if not form.is_valid() or not _within_rate(request, form):
        return _page(request, office, "office/new_meeting.html", form, status=400)
    data = form.cleaned_data
    try:
        channel, _ = meetings.start_meeting(
            office=office, title=data["title"], agenda=data["agenda"], participants=list(data["coworkers"]), rounds=data["rounds"]
        )
    except InstructionRejected as error:
        form.add_error(error.code if error.code in form.fields else None, error.detail)
        return _page(request, office, "office/new_meeting.html", form, status=400)
    return redirect(channel)


@login_required
def new_project(request: HttpRequest, slug: str) -> HttpResponse:
    office = get_object_or_404(offices_of(request.user), slug=slug)
    if request.method != "POST":
        return _page(request, office, "office/new_project.html", ProjectForm(office=office))
    form = ProjectForm(request.POST, office=office)
    if not form.is_valid() or not _within_rate(request, form):
        return _page(request, office, "office/new_project.html", form, status=400)
    data = form.cleaned_data
    try:
        channel = projects.create_project(office=office, name=data["name"], topic=data["topic"], members=list(data["coworkers"]))
    except projects.ProjectRejected as error:
        form.add_error(error.field if error.field in form.fields else None, error.detail)
        return _page(request, office, "office/new_project.html", form, status=400)
    return redirect(channel)


@login_required
def edit_project(request: HttpRequest, channel_id: int) -> HttpResponse:
    """A project's name, topic and coworkers, changed after it began (anyone who can see it may)."""
    channel = get_object_or_404(Channel.objects.visible_to(request.user).select_related("office"), pk=channel_id, kind=Channel.Kind.PROJECT)
    office = channel.office
    if request.method != "POST":
        initial = {"name": channel.name, "topic": channel.topic, "coworkers": list(channel.members.all())}
        return _page(request, office, "office/new_project.html", ProjectForm(initial=initial, office=office), editing=channel)
    form = ProjectForm(request.POST, office=office)
    if not form.is_valid():
        return _page(request, office, "office/new_project.html", form, status=400, editing=channel)
    data = form.cleaned_data
    try:
        projects.update_project(channel, name=data["name"], topic=data["topic"], members=list(data["coworkers"]))
    except projects.ProjectRejected as error:
        form.add_error(error.field if error.field in form.fields else None, error.detail)
        return _page(request, office, "office/new_project.html", form, status=400, editing=channel)
    return redirect(channel)


@login_required
def open_task(request: HttpRequest, task_id: int) -> HttpResponse:
    """The conversation a task is in, at that task: the channel while it is the active one, else
    the past conversation. A link to it keeps working after "New conversation"."""
    visible = Channel.objects.visible_to(request.user)
    task = get_object_or_404(Task.objects.select_related("session"), pk=task_id, session__channel__in=visible)
    session = task.session
    if session.status == Session.Status.ACTIVE:
        return redirect(reverse("channel", args=[session.channel_id]) + f"#turn-{task.turn}")
    return redirect(reverse("past_session", args=[session.channel_id, session.pk]) + f"#turn-{task.turn}")


def _within_rate(request: HttpRequest, form: forms.Form) -> bool:
    verdict = ratelimit.hit(f"channels:{request.user.pk}", limit=CHANNELS_PER_MINUTE, period=60)
    if not verdict.allowed:
        form.add_error(
            None,
            f"You have opened {CHANNELS_PER_MINUTE} channels in the last minute. "
            f"Try again in {ratelimit.wait_phrase(verdict.retry_after)}.",
        )
    return verdict.allowed


def _page(
    request: HttpRequest, office: Office, template: str, form: forms.Form, status: int = 200, editing: Channel | None = None
) -> HttpResponse:
    for name in form.errors:
        if name in form.fields:
            # Screen readers announce the message with the field (and its help, as Django does).
            field = form[name]
            described = [f"{field.auto_id}_helptext"] if field.help_text else []
            form.fields[name].widget.attrs.update(
                {"aria-invalid": "true", "aria-describedby": " ".join([*described, f"{field.auto_id}-error"])}
            )
    return render(
        request,
        template,
        {
            "office": office,
            "form": form,
            "coworker_count": office.coworkers.count(),
            "new_channel_page": "meeting" if template.endswith("meeting.html") else "project",
            "editing": editing,
            **sidebar(office, request.user),
        },
        status=status,
    )
