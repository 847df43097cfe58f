"""Offices, who belongs to them, the channels people talk in (and the events sent to their watchers),
and the documents the team works on."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.urls import reverse


class Office(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("office", args=[self.slug])


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    office = models.ForeignKey(Office, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["office", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.office} ({self.role})"


class ChannelQuerySet(models.QuerySet):
    def visible_to(self, user) -> "ChannelQuerySet":
        """Channels of the offices the user belongs to; nothing for anyone else."""
        return self.filter(office__memberships__user=user)


class Channel(models.Model):
    class Kind(models.TextChoices):
        DIRECT = "direct", "1:1"
        MAIN = "main", "Main"
        ALL_HANDS = "all_hands", "All hands"
        PROJECT = "project", "Project"
        MEETING = "meeting", "Meeting"

    office = models.ForeignKey(Office, on_delete=models.CASCADE, related_name="channels")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    name = models.CharField(max_length=100)
    topic = models.CharField(max_length=300, blank=True)
    # The one coworker of a direct channel; empty for every other kind.
    coworker = models.ForeignKey(
        "coworkers.Coworker", null=True, blank=True, on_delete=models.CASCADE, related_name="direct_channels"
    )
    # Who takes part in a project or meeting; main and all_hands include the whole team.
    members = models.ManyToManyField("coworkers.Coworker", blank=True, related_name="channels")
    agenda = models.TextField(blank=True, help_text="Meetings only: what the meeting is to decide.")
    created_at = models.DateTimeField(auto_now_add=True)
    # The seq of the newest ChannelEvent; raised only by office.events.send_event, with this row locked.
    last_event_seq = models.PositiveIntegerField(default=0, editable=False)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["office", "kind", "name"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="direct") & Q(coworker__isnull=False))
                | (~Q(kind="direct") & Q(coworker__isnull=True)),
                name="direct_channel_has_exactly_one_coworker",
                violation_error_message="A 1:1 channel has exactly one coworker; other kinds have none.",
            ),
            models.UniqueConstraint(
                fields=["office", "coworker"],
                condition=Q(kind="direct"),
                name="one_direct_channel_per_coworker",
                violation_error_message="This coworker already has a 1:1 channel.",
            ),
            models.UniqueConstraint(
                fields=["office", "kind"],
                condition=Q(kind__in=["main", "all_hands"]),
                name="one_main_and_one_all_hands_per_office",
                violation_error_message="An office has one main and one all-hands channel.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.office} / {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("channel", args=[self.pk])

    def clean(self) -> None:
        if self.coworker_id and self.coworker.office_id != self.office_id:
            raise ValidationError({"coworker": "This coworker belongs to another office."})


class ChannelEvent(models.Model):
    """One event sent to a channel's watchers, kept so a client that reconnects can replay what it missed.

    `seq` counts up from 1 in each channel, with no gaps: it is allocated in the
    transaction that stores the event, with the channel row locked.
    """

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    # The frame without "type" and "seq" (those are columns), exactly as it was sent.
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["channel", "seq"]
        constraints = [models.UniqueConstraint(fields=["channel", "seq"], name="one_event_per_channel_seq")]
        # The session frame looks up the seqs of the channel's latest message events.
        indexes = [models.Index(fields=["channel", "type", "seq"], name="channel_event_type_seq")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq} in channel {self.channel_id}"


class Document(models.Model):
    """A shared document of an office (a draft, a spec, a plan): its text is its newest version."""

    class Kind(models.TextChoices):
        DRAFT = "draft", "Draft"
        SPEC = "spec", "Spec"
        PLAN = "plan", "Plan"
        COPY = "copy", "Copy"
        NOTES = "notes", "Notes"

    office = models.ForeignKey(Office, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.DRAFT)
    # A coworker's slug, or "user" for a person.
    created_by = models.CharField(max_length=60)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["office", "-updated_at"]
        constraints = [
            # "Launch plan" and "launch plan" are one document: coworkers refer to titles loosely.
            models.UniqueConstraint(
                Lower("title"),
                "office",
                name="unique_document_title_per_office",
                violation_error_message="This office already has a document with this title.",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class DocumentVersion(models.Model):
    """One saved text of a document; never edited. The highest number is the current text."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content = models.TextField()
    # A coworker's slug, or "user".
    author = models.CharField(max_length=60)
    source_task = models.ForeignKey(
        "work_sessions.Task", null=True, blank=True, on_delete=models.SET_NULL, related_name="document_versions"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["document", "number"], name="unique_version_number_per_document"),
            models.CheckConstraint(condition=Q(number__gte=1), name="document_version_starts_at_one"),
        ]

    def __str__(self) -> str:
        return f"{self.document} v{self.number}"


class ChannelRead(models.Model):
    """How far a person has read a channel: the last event seq they were shown."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channel_reads")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="reads")
    last_seen_seq = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "channel"], name="one_read_mark_per_user_and_channel")]

    def __str__(self) -> str:
        return f"{self.user} read {self.channel} up to {self.last_seen_seq}"


class RenderedMessage(models.Model):
    """A message's sanitized HTML, rendered once when it was stored (office/rendering.py).

    A side table, not a column of Message: messages are append-only records of what was said,
    and this is derived from them (it can be dropped and rebuilt). Pages, the `session` frame and
    message events read it, so no page view or connect ever renders history again.
    """

    message = models.OneToOneField(
        "work_sessions.Message", primary_key=True, on_delete=models.CASCADE, related_name="rendered"
    )
    html = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"HTML of message {self.message_id}"
