"""Folding tasks into the rolling summary: new summary = summarize(old summary, tasks being folded).

Runs in the background. A failure leaves the old summary in place and the
tasks as digests in the prompt; the job is retried, and the next finished task
asks again. Every fold is kept as a SummaryVersion.
"""

from __future__ import annotations

import json
import logging

from django.db import IntegrityError, transaction

from coworkers.providers import ANSWERED_WITHOUT_A_MODEL, CompletionRequest, Provider, get_provider

from . import context, history, spending, summarize
from .models import Session, SummaryVersion, Task
from .prompts import answering_coworker, latest_summary, resolve_policy
from .services import record_from_row, task_messages

log = logging.getLogger(__name__)

FOLD_INSTRUCTIONS = """You maintain the rolling summary of a long work conversation in a virtual office.
Update the previous summary with the tasks below. Do not rewrite it from scratch: keep what is still true,
add what is new, and compress the oldest material first when space is short.
Write these sections, in this order, omitting empty ones:
## Decisions (each with its reason)
## Facts and numbers
## Commitments and next steps (each with its owner)
## Open questions
## Topics covered (with task ranges, e.g. "Tasks 5–8: …")
Write finished work as past-tense facts. Keep who said what when several coworkers took part.
Stay within {max_chars} characters. Reply with the summary only."""


def fold_target(session: Session, *, completed: int) -> int:
    """The turn through which the session should be summarized now that `completed` tasks are done.

    The batch rule from where the last fold (or the last prompt's plan) left
    off, and never less than an early fold the last prompt asked for.
    """
    summary = latest_summary(session)
    return _target(session, completed=completed, done=summary.through_turn if summary else 0)


def fold_due(session: Session, *, completed: int) -> int | None:
    """The turn a fold should reach now that `completed` tasks are done, or None when the summary
    is there already (what a finished task asks before enqueuing a fold)."""
    summary = latest_summary(session)
    done = summary.through_turn if summary else 0
    target = _target(session, completed=completed, done=done)
    return target if target > done else None


def _target(session: Session, *, completed: int, done: int) -> int:
    policy = resolve_policy(session.channel, answering_coworker(session.channel, session))
    # Only the number the last plan asked for: the whole report is large, and every finished task asks.
    asked = (
        Task.objects.filter(session=session, turn__lte=completed + 1, prompt_report__isnull=False)
        .order_by("-turn")
        .values_list("prompt_report__fold_through", flat=True)
        .first()
    )
    asked = int(asked or 0)
    return max(context.batch_boundary(policy, completed=completed, boundary=max(done, asked)), asked, done)


def fold_summary(*, session_id: int, through_turn: int, provider: Provider | None = None) -> SummaryVersion | None:
    """Fold tasks up to `through_turn` into the summary. Idempotent: a fold already done returns None."""
    session = Session.objects.select_related("channel", "channel__office").filter(pk=session_id).first()
    if session is None:
        return None
    previous = latest_summary(session)
    done = previous.through_turn if previous else 0
    if through_turn <= done:
        return None
    coworker = answering_coworker(session.channel, session)
    policy = resolve_policy(session.channel, coworker)
    rows = task_messages(session, turn__gt=done, turn__lte=through_turn)
    tasks = history.group_tasks([record_from_row(row) for row in rows])
    if not tasks:
        return None
    max_chars = context.summary_room(
        policy,
        previous_chars=len(previous.text) if previous else 0,
        folded_chars=sum(len(r.content) for task in tasks for r in task.records),
    )
    speakers = {r.coworker for task in tasks for r in task.records if r.coworker}
    # Tasks no model answered: the offline responder leaves their replies out of its summary.
    answered_offline = Task.objects.filter(
        session=session, turn__in=[task.turn for task in tasks], provider__in=ANSWERED_WITHOUT_A_MODEL
    ).values_list("turn", flat=True)
    provider = provider or get_provider()
    request = CompletionRequest(
        purpose="fold",
        system=(FOLD_INSTRUCTIONS.format(max_chars=max_chars),),
        messages=(_fold_message(previous.text if previous else "", tasks, policy.tool_digest_chars),),
        model=policy.summary_model,
        max_output_tokens=max(512, max_chars // 2),
        payload={
            "previous": previous.text if previous else "",
            "tasks": tasks,
            "max_chars": max_chars,
            "multi_speaker": len(speakers) > 1,
            "answered_offline": sorted(answered_offline),
        },
    )
    completion = provider.complete(request)
    spending.record_call(office_id=session.channel.office_id, coworker=coworker, completion=completion, provider=provider)
    text = completion.text.strip()
    if len(text) > max_chars:
        # A model that overshoots is compressed by the same rules, oldest first, never cut mid-sentence.
        text = summarize.summarize_extractively(text, [], max_chars=max_chars, multi_speaker=len(speakers) > 1)
    try:
        with transaction.atomic():
            return SummaryVersion.objects.create(
                session=session,
                text=text,
                from_turn=done + 1,
                through_turn=tasks[-1].turn,
                model=completion.model,
            )
    except IntegrityError:
        # Another delivery of this fold got there first.
        return None


def _fold_message(previous: str, tasks: list[history.TaskRecords], digest_chars: int):
    from langchain_core.messages import HumanMessage

    lines = [f"Previous summary:\n{previous or '(none yet)'}", "", "Tasks to fold in:"]
    for task in tasks:
        lines.append(f"### Task {task.turn}")
        for record in task.records:
            if record.role == "notice":
                continue
            who = record.coworker or ("user" if record.role == "user" else record.role)
            body = record.content
            if record.role == "tool":
                body = context.shorten(body, digest_chars)
            if record.tool_calls:
                body += " " + " ".join(f"[calls {c.name} {json.dumps(dict(c.args), ensure_ascii=False)}]" for c in record.tool_calls)
            lines.append(f"{who}: {body.strip()}")
    return HumanMessage("\n".join(lines))
