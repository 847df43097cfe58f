"""The long-conversation nudge, shown once per session, and its answer: a new conversation that
carries a short note from the old one's summary. Must not import the pipeline or a provider:
it never calls a model, and the consumer and the jobs both call it.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from office import events, rendering
from office.models import Channel

from . import prompts, services
from .jsonl import record_to_dict
from .models import Message, Session, Task

NUDGE_TEXT = {
    "en": (
        "💡 This conversation is getting long. If the topic has changed, starting a new conversation "
        "will give sharper answers and lower AI cost. If you want to keep going, the earlier work stays "
        "available as a summary."
    ),
    "zh-hant": (
        "💡 這段對話已經很長了。如果話題已經改變，開始新的對話會讓回答更精準，也能降低 AI 成本。"
        "如果想繼續，先前的內容會以摘要的形式保留。"
    ),
}
TRIGGERS = ("instruction", "entry")
# How much of the old session's summary a new conversation carries into its prompt.
CARRIED_NOTE_CHARS = 600

# Regions whose Chinese is written in Traditional characters.
_TRADITIONAL = {"tw", "hk", "mo", "hant"}


def language_from_header(accept_language: str) -> str:
    """"zh-hant" for a browser that prefers Traditional Chinese (zh-TW, zh-Hant, zh-HK…), else "en"."""
    best, best_q = "en", -1.0
    for part in accept_language.split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        subtags = tag.strip().lower().replace("_", "-").split("-")
        if not subtags[0] or q <= best_q:
            continue
        best_q = q
        best = "zh-hant" if subtags[0] == "zh" and _TRADITIONAL & set(subtags[1:]) else "en"
    return best


def maybe_nudge(session_id: int, trigger: str, language: str = "en") -> bool:
    """Show the nudge if the session is active, long enough and not nudged yet. True if this call showed it.

    Claimed with a conditional UPDATE, so two tabs, a reconnect, both triggers or a
    race between workers still show it once; the notice is stored as a message of the
    latest task (it appears under that instruction), and a failure rolls the claim back.
    """
    session = (
        Session.objects.select_related("channel__coworker")
        .filter(pk=session_id, status=Session.Status.ACTIVE, nudged_at__isnull=True)
        .first()
    )
    if session is None:
        return False
    channel = session.channel
    # Read first, so the usual answer ("not yet") takes no write lock.
    if Task.objects.filter(session=session).count() < prompts.resolve_policy(channel, channel.coworker).nudge_after_tasks:
        return False
    text = NUDGE_TEXT.get(language, NUDGE_TEXT["en"])
    html = rendering.render(text)  # before the transaction: rendering holds no lock
    with transaction.atomic():
        claimed = Session.objects.filter(
            pk=session_id, status=Session.Status.ACTIVE, nudged_at__isnull=True
        ).update(nudged_at=timezone.now())
        if not claimed:
            return False  # 0 rows: already shown (another tab, the other trigger), or the session ended
        turn = Task.objects.filter(session=session).order_by("-turn").values_list("turn", flat=True).first()
        notice = services.append_message(session=session, turn=turn, role=Message.Role.NOTICE, content=text, html=html)
        events.send_event(channel.pk, "message", message=record_to_dict(services.record_from_row(notice)))
        events.send_event(channel.pk, "nudge", session=session.pk, text=text, trigger=trigger)
    return True


def start_new_conversation(*, channel: Channel) -> Session:
    """End the active session and open a new one carrying a short note; tell every watcher (other tabs switch too).

    Long-term memory needs nothing: it belongs to the office, coworker or channel, not the session.
    """
    with transaction.atomic():
        old = Session.objects.filter(channel=channel, status=Session.Status.ACTIVE).first()
        session = services.start_session(channel=channel, carried_note=carried_note(old) if old else "")
        events.send_event(channel.pk, "session", session=events.session_json(session, tasks=0), messages=[])
    return session


def carried_note(session: Session) -> str:
    """The session's latest summary, shortened; with no summary yet, the note it carried itself."""
    summary = prompts.latest_summary(session)
    return shorten(summary.text if summary else session.carried_note, CARRIED_NOTE_CHARS)


def shorten(text: str, limit: int) -> str:
    """At most about `limit` characters, ended at a line or a word where there is one nearby."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for separator in ("\n", " "):
        at = cut.rfind(separator)
        if at >= limit * 2 // 3:
            cut = cut[:at]
            break
    return cut.rstrip() + " …"
