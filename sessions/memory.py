"""Long-term memory: extracting durable facts after each task, and remembering or forgetting on request.

Candidates come from what the user said and what was decided in one task,
never from summaries. Each is compared with the most similar existing items
(ADD, UPDATE, DELETE or NOOP) and every decision is written to the audit log.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from langchain_core.messages import HumanMessage

from coworkers.providers import ANSWERED_WITHOUT_A_MODEL, CompletionRequest, Provider, ProviderError, get_provider

from . import extract, history, relevance, senders, spending
from .models import MemoryEvent, MemoryItem, Task
from .prompts import answering_coworker, resolve_policy
from .services import record_from_row, task_messages

log = logging.getLogger(__name__)

SIMILAR_ITEMS = 5
# A candidate is compared with at most this many items, the most recently changed: what a
# task is likely to restate or change, at a cost that stops growing with the office's memory.
KNOWN_ITEMS = 500
EXTRACTOR = "memory extractor"
# At most this many new facts from one task, the first ones said: a message of 19,000 characters
# of "Remember that …" made 390 office-wide items at once, in every coworker's prompts after it.
ITEMS_PER_TASK = 12

EXTRACT_INSTRUCTIONS = """From this task of a work conversation, list the durable facts worth remembering
for weeks: the user's stated preferences, facts about the company and its customers, project facts
(prices, dates, deadlines, names) and decisions that were made. Only what the user said or what was
decided; no small talk, no tool output, nothing temporary. Each fact one short standalone sentence.
Reply with JSON only: [{"text": "...", "kind": "preference|company|project|rule|decision"}]"""


def extract_memory(*, task_id: int, provider: Provider | None = None) -> list[MemoryEvent]:
    """Extract memory from one finished task. Idempotent: a task is extracted once."""
    task = Task.objects.select_related("session__channel__office").filter(pk=task_id).first()
    if task is None or task.memory_extracted_at is not None:
        return []
    if senders.sent_by(task.origin, {}):
        # Not the person's words (a handoff's brief, a meeting's follow-up): nothing of theirs to
        # remember, and a meeting's decisions are remembered with its notes. Once stored, such a
        # line was quoted back as "you said".
        Task.objects.filter(pk=task.pk, memory_extracted_at__isnull=True).update(memory_extracted_at=timezone.now())
        return []
    rows = task_messages(task.session, turn=task.turn)
    records = history.TaskRecords(turn=task.turn, records=tuple(record_from_row(row) for row in rows))
    if not records.records:
        return []
    channel = task.session.channel
    provider = provider or get_provider()
    coworker = answering_coworker(channel, task.session)
    policy = resolve_policy(channel, coworker)
    completion = provider.complete(
        CompletionRequest(
            purpose="extract",
            system=(EXTRACT_INSTRUCTIONS,),
            messages=(HumanMessage(records.transcript()),),
            model=policy.summary_model,
            max_output_tokens=1024,
            # Its replies were the offline responder's own: never facts to remember.
            payload={"task": records, "answered_offline": task.provider in ANSWERED_WITHOUT_A_MODEL},
        )
    )
    spending.record_call(office_id=channel.office_id, task=task, coworker=coworker, completion=completion, provider=provider)
    candidates = parse_candidates(completion.text)[:ITEMS_PER_TASK]
    forget = extract.forget_requests(records)
    # Most tasks give nothing to remember or forget: then the office's memory is not read at all.
    known = known_items(channel.office_id) if candidates or forget else []
    decisions = [extract.decide(c, most_similar(c.text, known)) for c in candidates]
    decisions += [extract.match_forget(text, most_similar(text, known)) for text in forget]

    with transaction.atomic():
        claimed = Task.objects.filter(pk=task.pk, memory_extracted_at__isnull=True).update(
            memory_extracted_at=timezone.now()
        )
        if not claimed:
            return []  # another delivery of this job did it
        return [apply_decision(decision, office_id=channel.office_id, task=task, actor=EXTRACTOR) for decision in decisions]


def unextracted_tasks(
    now: datetime, *, older_than: timedelta, within: timedelta, limit: int = 200, session_id: int | None = None
) -> list[int]:
    """Tasks that finished between `within` and `older_than` ago and whose memory was never
    extracted: the job's delivery was lost (the broker was away when the task finished).

    Only tasks a worker claimed (`attempts`): one stopped before it started never gets an
    extraction, and an imported one is extracted by the import itself, in order. Older ones
    are left alone too: by then a failure is not a lost delivery, and the model would be
    asked again and again.
    """
    lost = Task.objects.filter(
        memory_extracted_at__isnull=True,
        attempts__gt=0,
        finished_at__lt=now - older_than,
        finished_at__gte=now - within,
    )
    if session_id is not None:
        lost = lost.filter(session_id=session_id)
    return list(lost.order_by("finished_at").values_list("pk", flat=True)[:limit])


def parse_candidates(text: str) -> list[extract.Candidate]:
    """The extractor's JSON answer; anything else is a failed call worth retrying."""
    start, end = text.find("["), text.rfind("]")
    try:
        items = json.loads(text[start : end + 1]) if start != -1 and end > start else None
    except json.JSONDecodeError:
        items = None
    if not isinstance(items, list):
        raise ProviderError("The memory extractor did not answer with a list of facts.", retryable=True)
    return [
        extract.Candidate(text=str(item["text"]).strip(), kind=item.get("kind") if item.get("kind") in extract.KINDS else "project")
        for item in items
        if isinstance(item, dict) and str(item.get("text", "")).strip()
    ]


def known_items(office_id: int) -> list[extract.Existing]:
    """The office's KNOWN_ITEMS most recently changed active items, as plain values (an index
    keeps them in that order: the read does not sort the office's whole memory)."""
    rows = (
        MemoryItem.objects.filter(office_id=office_id, active=True)
        .order_by("-updated_at")
        .values_list("pk", "text", "kind")[:KNOWN_ITEMS]
    )
    return [extract.Existing(id=pk, text=text, kind=kind) for pk, text, kind in rows]


def most_similar(text: str, items: list[extract.Existing]) -> list[extract.Existing]:
    ranked = sorted(items, key=lambda item: -relevance.similarity(text, item.text))
    return ranked[:SIMILAR_ITEMS]


def apply_decision(decision: extract.Decision, *, office_id: int, task: Task | None, actor: str) -> MemoryEvent:
    item = MemoryItem.objects.filter(pk=decision.item_id, office_id=office_id).first() if decision.item_id else None
    before = item.text if item else ""
    if decision.action == "add":
        item = MemoryItem.objects.create(
            office_id=office_id, text=decision.text, kind=decision.candidate.kind, source_task=task
        )
    elif decision.action == "update" and item:
        item.text = decision.text
        item.source_task = task
        item.save(update_fields=["text", "source_task", "updated_at"])
    elif decision.action == "delete" and item:
        item.active = False
        item.save(update_fields=["active", "updated_at"])
    return MemoryEvent.objects.create(
        office_id=office_id,
        item=item,
        action=decision.action,
        before=before,
        after=item.text if item and decision.action in ("add", "update") else "",
        reason=decision.reason,
        source_task=task,
        actor=actor,
    )
