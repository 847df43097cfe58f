"""The runner: coworkers work on a stored task, in the background.

An instruction is stored first (sessions.posting); the run_task job then calls
run_task here. run_task claims the task with a lease, builds each prompt, streams the
reply to the channel in batched deltas (sessions.deltas), runs the tool loop, stores every message
the moment it exists, and ends the task done, failed or stopped; folding and
memory follow (the jobs module enqueues them when it hears task_finished). A worker
that dies leaves an expired lease; the next delivery resumes from what was stored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.db.models import F, Q, Subquery
from django.db.models.functions import Coalesce
from django.dispatch import Signal
from django.utils import timezone

from coworkers import routing, tools
from coworkers.models import Coworker
from coworkers.providers import Completion, CompletionRequest, Provider, ProviderError, get_provider
from office import background, events
from office.models import Channel

from . import context, meetings, prompts, services, spending, stops, vectors
from .deltas import DeltaBatcher
from .models import Message, Session, Task
from .posting import post_message, task_json

log = logging.getLogger(__name__)

# Model calls per coworker per task; the last one is offered no tools, so it must answer.
MAX_STEPS = 8
# A task whose worker died this many times is failed rather than tried again.
MAX_ATTEMPTS = 3
# How often a running task looks for a stop request (a database read).
STOP_CHECK_SECONDS = 0.5

FAILED_UNEXPECTEDLY = "Something went wrong on our side while working on this. Please try again."
LEFT_BEFORE = "Stopped: {names} left #{channel} before this was answered."
CONVERSATION_ENDED = "Stopped: a new conversation was started while this was being answered."
ENDED_BEFORE = "Stopped: a new conversation was started before this was answered."
# An all-hands message the router found nobody needs to answer: the task is done, and says so.
NOBODY_ANSWERED = "No one had anything to add."

# Sent once a task has finished (done, failed or stopped), with the `task`, inside or outside a
# transaction. The jobs module (sessions.tasks) enqueues what follows: memory extraction and any
# fold that is due. The jobs call the runner, so the runner cannot import them.
task_finished = Signal()


class TaskBusy(Exception):
    """Not this delivery's to run now: an earlier task of its conversation is still to finish
    (`behind_earlier`: that task sends this one when it ends, next_in_line), or a live worker holds
    this task's lease (a killed worker's task delivered again at once: free once the lease runs out)."""

    def __init__(self, retry_in: float, *, behind_earlier: bool = False) -> None:
        super().__init__("an earlier task of its conversation comes first" if behind_earlier else f"task is being worked on; retry in {retry_in:.0f} s")
        self.retry_in, self.behind_earlier = retry_in, behind_earlier


# Delivery -----------------------------------------------------------------------


def abandoned_tasks(session, *, before: int) -> list[int]:
    """Earlier tasks nobody is working on: queued, or running on a lease that ran out.

    Celery redelivers a dead worker's task by itself; the embedded runner cannot (a
    restarted server forgets its thread pool), so the next instruction sends them
    again. Sending one twice is harmless: the claim lets only one delivery work. In turn order.
    """
    earlier = Task.objects.filter(session=session, turn__lt=before)
    left = Q(status=Task.Status.QUEUED) | Q(status=Task.Status.RUNNING, lease_until__lt=timezone.now())
    return list(earlier.filter(left).order_by("turn").values_list("pk", flat=True))


def next_in_line(task_id: int) -> int | None:
    """The queued task of the same conversation that comes next after this one, if this one has
    ended (None while it is queued or running, or when it is gone): the task to send now."""
    task = Task.objects.filter(pk=task_id).values("session_id", "turn", "status").first()
    if task is None or task["status"] in (Task.Status.QUEUED, Task.Status.RUNNING):
        return None
    following = Task.objects.filter(session_id=task["session_id"], turn__gt=task["turn"], status=Task.Status.QUEUED)
    return following.order_by("turn").values_list("pk", flat=True).first()


def stalled_tasks(now, *, queued_for: timedelta, limit: int = 500) -> list[int]:
    """Tasks nobody seems to be working on, anywhere: queued for longer than `queued_for` (their
    delivery was lost: the broker restarted, or was unreachable when the task was stored), or
    running on a lease that ran out. Sending one again is harmless: the claim decides."""
    # Of ended conversations too: their tasks are stopped at the claim, without a model call.
    unfinished = Task.objects.order_by("created_at")
    queued = unfinished.filter(status=Task.Status.QUEUED, created_at__lt=now - queued_for)
    stale = unfinished.filter(status=Task.Status.RUNNING, lease_until__lt=now)
    return list(queued.values_list("pk", flat=True)[:limit]) + list(stale.values_list("pk", flat=True)[:limit])


def request_stop(task: Task) -> bool:
    """Ask a queued or running task to stop. False when it has already finished."""
    now = timezone.now()
    queued = Task.objects.filter(pk=task.pk, status=Task.Status.QUEUED).update(
        status=Task.Status.STOPPED, stop_requested_at=now, finished_at=now
    )
    if queued:
        events.send_event(task.session.channel_id, "task", **task_json(Task.objects.get(pk=task.pk)))
        return True
    return bool(
        Task.objects.filter(pk=task.pk, status=Task.Status.RUNNING, stop_requested_at__isnull=True).update(
            stop_requested_at=now
        )
    )


# Running ------------------------------------------------------------------------


def run_task(task_id: int, *, provider: Provider | None = None) -> Task | None:
    """Do the work of one task. Safe to deliver twice: a finished task is left alone,
    a live one belongs to its worker (TaskBusy), an abandoned one is resumed."""
    task = claim(task_id)
    if task is None:
        return None
    log.info(
        "task %s (session %s, turn %s) started: attempt %s, responders %s",
        task.pk, task.session_id, task.turn, task.attempts, ",".join(task.responders or [task.coworker]),
    )
    if task.attempts > MAX_ATTEMPTS:
        return finish(task, Task.Status.FAILED, "This task was interrupted too many times; please send it again.")
    provider = provider or get_provider()
    responders = task.responders or ([task.coworker] if task.coworker else [])
    still_here = still_in_channel(task.session.channel, responders)
    if responders and not still_here:
        # Taken off the project (or the office) while this waited: a member no longer, so no reply.
        names = " and ".join(slug.capitalize() for slug in responders)
        return finish(task, Task.Status.STOPPED, LEFT_BEFORE.format(names=names, channel=task.session.channel.name))
    responders = still_here
    try:
        if not responders:
            # Only all-hands routes to nobody (coworkers.routing): nothing to run, and nothing failed.
            say_once(task, "", NOBODY_ANSWERED)
        for slug in responders:
            status = work_as(task, slug, provider)
            if status != Task.Status.DONE:
                return finish(task, status)
        if task.origin.get("meeting") and task.session.channel.kind == Channel.Kind.MEETING:
            meetings.close_meeting(task, provider)
        return finish(task, Task.Status.DONE)
    except Interrupted:
        # The server is stopping and the grace period is over: nothing more is stored. Its lease is
        # given up, so the next start resumes it from the store at once instead of after the lease.
        Task.objects.filter(pk=task_id, attempts=task.attempts, status=Task.Status.RUNNING).update(lease_until=timezone.now())
        log.info("task %s: left unfinished, the server is stopping; the next start resumes it", task_id)
        return None
    except Superseded:
        log.warning("task %s: attempt %s stalled past its lease and another took over; leaving it", task_id, task.attempts)
        return None
    except services.SessionEnded:
        # Someone started a new conversation while this one ran: its reply has nowhere to go.
        log.info("task %s: its conversation was ended while it ran; stopped", task_id)
        return finish(task, Task.Status.STOPPED, CONVERSATION_ENDED)
    except ProviderError as error:
        log.warning("task %s: the model call failed: %s", task_id, error)
        return finish(task, Task.Status.FAILED, error.user_message)
    except Exception:
        log.exception("task %s failed", task_id)
        return finish(task, Task.Status.FAILED, FAILED_UNEXPECTEDLY)


def still_in_channel(channel: Channel, slugs: list[str]) -> list[str]:
    """Those of these coworkers who may still answer in the channel (coworkers.routing.team_of):
    a project's members can change while its instructions wait."""
    team = {coworker.slug for coworker in routing.team_of(channel)}
    return [slug for slug in slugs if slug in team]


def claim(task_id: int) -> Task | None:
    """Take the task: a queued one, or a running one whose worker's lease has run out."""
    now = timezone.now()
    taken = {"lease_until": now + lease(), "attempts": F("attempts") + 1}
    if stop_if_ended(task_id):
        return None
    if earlier_task_working(task_id):
        # One task at a time in a session: this one's prompt must see the earlier one finished.
        raise TaskBusy(retry_in=1.0, behind_earlier=True)
    if not Task.objects.filter(pk=task_id, status=Task.Status.QUEUED).update(
        status=Task.Status.RUNNING, started_at=now, **taken
    ):
        if not Task.objects.filter(pk=task_id, status=Task.Status.RUNNING, lease_until__lt=now).update(**taken):
            # 0 rows: finished, gone, or another worker is on it right now.
            held_until = (
                Task.objects.filter(pk=task_id, status=Task.Status.RUNNING).values_list("lease_until", flat=True).first()
            )
            if held_until is not None:
                raise TaskBusy(retry_in=max((held_until - now).total_seconds(), 1.0))
            return None
    task = Task.objects.select_related("session__channel__office").get(pk=task_id)
    with events.unawaited():
        # Nothing here needs it sent yet (the stream that follows queues behind it), and this thread
        # holds a pooled connection the next task's claim is waiting for.
        events.send_event(task.session.channel_id, "task", **task_json(task))
    return task


def earlier_task_working(task_id: int) -> bool:
    """Is an earlier task of the same session still to finish: queued, or running (a running
    one whose lease ran out too: its worker died, and the sweep or the chain resumes it first,
    so a later task never overtakes it)?"""
    this = Task.objects.filter(pk=task_id).order_by()  # no default ordering: it joins the session
    # One statement: every task claims through here, a hundred of them at once in a burst.
    return Task.objects.filter(
        status__in=(Task.Status.QUEUED, Task.Status.RUNNING),
        session_id=Subquery(this.values("session_id")),
        turn__lt=Subquery(this.values("turn")),
    ).exists()


def stop_if_ended(task_id: int) -> bool:
    """Stop a task nobody is working on whose conversation was ended: queued (it never ran), or
    running on a lease that ran out (its worker died). Its reply would have nowhere to go, and
    its model call would be paid for nothing. True when it stopped it."""
    now = timezone.now()
    left = Q(status=Task.Status.QUEUED) | Q(status=Task.Status.RUNNING, lease_until__lt=now)
    ended = Task.objects.filter(left, pk=task_id).exclude(session__status=Session.Status.ACTIVE)
    # Read first: nearly every claim finds nothing to stop, and on SQLite even an update of no rows
    # takes the database's write lock, which a burst of claims would queue for.
    status = ended.values_list("status", flat=True).first()
    if status is None:
        return False
    why = ENDED_BEFORE if status == Task.Status.QUEUED else CONVERSATION_ENDED
    if not ended.update(status=Task.Status.STOPPED, error=why, finished_at=now, lease_until=None):
        return False
    task = Task.objects.select_related("session").get(pk=task_id)
    log.info("task %s: its conversation was ended before it finished; stopped", task_id)
    events.send_event(task.session.channel_id, "task", **task_json(task))
    return True


def work_as(task: Task, slug: str, provider: Provider) -> str:
    """One coworker's turn on the task: model calls and tool calls until it answers."""
    session, channel = task.session, task.session.channel
    coworker = Coworker.objects.filter(office_id=channel.office_id, slug=slug).first()
    if coworker is None:
        raise ProviderError(f"The coworker “{slug}” is no longer part of this office.")
    refusal = spending.limit_refusal(coworker)
    if refusal:
        # Over the month's limit: no model call, and the person reads why instead of a failure.
        say_once(task, slug, refusal)
        return Task.Status.DONE
    policy = prompts.resolve_policy(channel, coworker)
    cache = spending.choose_cache_lifetime(task, policy, coworker.model or policy.reply_model)
    tool_context = tools.ToolContext(
        office_id=channel.office_id, channel_id=channel.pk, session_id=session.pk, task_id=task.pk, turn=task.turn, coworker=slug
    )
    stopped = StopCheck(task.pk, task.attempts)
    for step in range(MAX_STEPS):
        if stopped():
            return stopped.outcome()
        # One read of the task's own messages: its instruction (the first person's message), then the rest.
        rows = list(services.task_messages(session, turn=task.turn))
        instruction = next((row.content for row in rows if row.role == Message.Role.USER), "")
        current = [services.record_from_row(row) for row in rows][1:]
        if step == 0 and policy.recall_chars and vectors.searchable(instruction, channel.pk):
            # The request's vector first, with no pooled connection held: replies that start
            # together are embedded together, and none keeps a connection the others' claims and
            # prompts need while it waits its turn at the model.
            release_connection()
            vectors.query_vector(instruction)
        prompt = prompts.build_for_task(
            session=session, instruction=instruction, turn=task.turn, coworker=coworker, current=current, policy=policy
        )
        if task.prompt_report is None:
            task.prompt_report = {**prompt.report, "cache": cache.as_report()}  # the report says how long it was cached
            task.save(update_fields=["prompt_report"])
        last_step = step == MAX_STEPS - 1
        request = CompletionRequest(
            purpose="reply",
            system=prompt.system,
            messages=prompt.messages,
            model=coworker.model or policy.reply_model,
            max_output_tokens=policy.max_output_tokens,
            tools=() if last_step else tools.TOOL_SPECS,
            cache_after=cache_breakpoints(prompt),
            cache_ttl=cache.lifetime,
            payload={
                "turns": prompt.report["detailed_tasks"],
                "said_on": said_on(session, prompt.report["detailed_tasks"]),
                "channel_kind": channel.kind,
                # The meeting's own task (its turns), not a person's question in its channel afterwards.
                "meeting_turn": bool(task.origin.get("meeting")),
            },
        )
        with DeltaBatcher(channel.pk, task.pk, slug) as deltas:
            release_connection()
            try:
                completion = provider.complete(request, on_text=deltas.push, should_stop=stopped.while_streaming)
            except ProviderError as error:
                deltas.finish()
                partial = getattr(error, "partial_text", "")
                if partial.strip() and not stopped.superseded:
                    # Keep what was said before the connection broke; the task then fails clearly.
                    store_reply(task, slug, Completion(text=partial), provider)
                raise
            deltas.finish()
        if stopped(fresh=True) and stopped.superseded:
            # Checked right before storing: a stale (or interrupted) attempt adds nothing.
            raise Interrupted() if stopped.interrupted else Superseded()
        renew_lease(task)
        store_reply(task, slug, completion, provider, coworker=coworker)
        if completion.stop_reason == "stopped":
            return stopped.outcome()
        if not completion.tool_calls:
            # The reply is whole and stored: a stop asked for while it was being stored came too
            # late to cut anything, and "Stopped" over a finished reply would not be true.
            return Task.Status.DONE
        for call in completion.tool_calls:
            if stopped():
                # The remaining calls stay without results; the next prompt shows them as interrupted.
                return stopped.outcome()
            outcome = tools.run_tool(tool_context, call.name, call.args)
            # The record has no error flag: a failed call says so in its text, for the model and the history.
            content = f"Error: {outcome.content}" if outcome.is_error else outcome.content
            post_message(session=session, turn=task.turn, role=Message.Role.TOOL, content=content, tool_call_id=call.id, coworker=slug)
            renew_lease(task)
    return Task.Status.DONE


def cache_breakpoints(prompt: context.Prompt) -> tuple[int, ...]:
    """After the detailed window (what the next task reuses even when this one's tail changes),
    and after the last message: the next call, a step of this tool loop or the next task's first,
    begins with the whole of this one (docs/context.md, "Tails")."""
    return tuple(sorted({index for index in (prompt.window_end, len(prompt.messages) - 1) if index >= 0}))


def say_once(task: Task, slug: str, text: str) -> None:
    """A notice under the task (shown to people, never sent to a model), once even if the task is resumed."""
    if services.task_messages(task.session, turn=task.turn).filter(role=Message.Role.NOTICE, content=text).exists():
        return
    post_message(session=task.session, turn=task.turn, role=Message.Role.NOTICE, content=text, coworker=slug)


def store_reply(task: Task, slug: str, completion: Completion, provider: Provider, *, coworker: Coworker | None = None) -> None:
    """Store one model step (text and tool calls) and add its usage and cost to the task (and to the
    coworker's usage, call by call)."""
    # The call is paid for whether or not its text can still be stored (a conversation ended
    # meanwhile refuses it), so its usage is counted first.
    usage = completion.usage
    spending.record_call(
        office_id=task.session.channel.office_id, task=task, coworker=coworker, slug=slug, completion=completion, provider=provider
    )
    cost = spending.call_cost(completion, provider)
    Task.objects.filter(pk=task.pk).update(
        provider=provider.name,
        model=completion.model or "",
        input_tokens=F("input_tokens") + usage.input_tokens,
        cache_write_tokens=F("cache_write_tokens") + usage.cache_write_tokens,
        cache_read_tokens=F("cache_read_tokens") + usage.cache_read_tokens,
        output_tokens=F("output_tokens") + usage.output_tokens,
    )
    if cost is not None:
        Task.objects.filter(pk=task.pk).update(cost_usd=Coalesce(F("cost_usd"), Decimal("0")) + cost)
    if completion.text.strip() or completion.tool_calls:
        post_message(
            session=task.session, turn=task.turn, role=Message.Role.ASSISTANT, content=completion.text,
            tool_calls=completion.tool_calls, coworker=slug,
        )


def finish(task: Task, status: str, error: str = "") -> Task | None:
    """End the task, if this attempt still holds it (None when another attempt took it over)."""
    now = timezone.now()
    held = Task.objects.filter(pk=task.pk, attempts=task.attempts, status=Task.Status.RUNNING)
    if not held.update(status=status, error=error, finished_at=now, lease_until=None):
        log.warning("task %s: attempt %s no longer holds it; leaving it to the attempt that does", task.pk, task.attempts)
        return None
    task.refresh_from_db()
    log.info(
        "task %s (session %s, turn %s) %s in %.1f s: %s input + %s cached tokens, %s output, cost %s%s",
        task.pk, task.session_id, task.turn, status,
        (now - (task.started_at or task.created_at)).total_seconds(),
        task.input_tokens + task.cache_write_tokens, task.cache_read_tokens, task.output_tokens,
        task.cost_usd if task.cost_usd is not None else "n/a", f" ({error})" if error else "",
    )
    events.send_event(task.session.channel_id, "task", **task_json(task))
    task_finished.send(sender=Task, task=task)
    return task


def lease() -> timedelta:
    return timedelta(seconds=settings.TASK_LEASE_SECONDS)


def renew_lease(task: Task) -> None:
    renew_lease_of(task.pk, task.attempts)


def renew_lease_of(task_id: int, attempt: int | None) -> None:
    """Only the attempt that holds the task renews it."""
    holder = Task.objects.filter(pk=task_id, status=Task.Status.RUNNING)
    if attempt is not None:
        holder = holder.filter(attempts=attempt)
    holder.update(lease_until=timezone.now() + lease())


def said_on(session, turns: list[int]) -> list[str | None]:
    """The day (ISO, server time) each of these tasks' instructions was given, so an offline reply can say
    "you said this on Dec 1" instead of a task number people never see."""
    days = {
        turn: timezone.localtime(when).date().isoformat() if timezone.is_aware(when) else when.date().isoformat()
        for turn, when in services.task_messages(session, turn__in=turns)
        .filter(role=Message.Role.USER)
        .values_list("turn", "created_at")
        .reverse()  # the first instruction of a task wins
    }
    return [days.get(turn) for turn in turns]


# Helpers for the stream -----------------------------------------------------------


def release_connection() -> None:
    """With pooled connections (DATABASE_POOL_SIZE), give this thread's back while it waits on
    the model: a reply streams for seconds, and holding a connection that long is what would
    cap how many stream at once. Without a pool a connection is kept (reopening costs more)."""
    if settings.DATABASE_POOL_SIZE and not connection.in_atomic_block:
        connection.close()


class StopCheck:
    """Has a stop been asked for, or has this attempt lost the task? Reads the database at most every
    STOP_CHECK_SECONDS, and renews the lease while the work goes on (a long stream included), so
    a live attempt's lease never runs out under it.

    If another worker took the task over anyway (this one stalled past its lease), `superseded`
    turns true and the check reads as stopped: this attempt must store and finish nothing more.
    """

    def __init__(self, task_id: int, attempt: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.task_id, self.attempt, self.clock = task_id, attempt, clock
        self.checked_at = float("-inf")
        # Made right after the claim (or a renewal) set the lease: the first renewal is due a third of it later.
        self.renewed_at = clock()
        self.stopped = self.superseded = self.interrupted = False
        self.watched_since = _stop_board.watch(self, task_id)

    def __call__(self, *, fresh: bool = False) -> bool:
        if background.leaving():
            # The server is stopping: leave as a superseded attempt does, storing nothing more.
            self.stopped = self.superseded = self.interrupted = True
        if not self.stopped and (fresh or self.clock() - self.checked_at >= STOP_CHECK_SECONDS):
            self.checked_at = self.clock()
            # Fresh (right before storing): this task's row itself. Else the board's read, shared
            # by every stream of this process (sessions.stops).
            seen = _read_stops({self.task_id}).get(self.task_id, stops.GONE) if fresh else _stop_board.look(self.task_id, self.watched_since)
            self.superseded = seen.attempts is None or (self.attempt is not None and seen.attempts != self.attempt)
            self.stopped = self.superseded or seen.stop_requested
            if not self.stopped and self.clock() - self.renewed_at >= lease().total_seconds() / 3:
                self.renewed_at = self.clock()
                renew_lease_of(self.task_id, self.attempt)
        return self.stopped

    def while_streaming(self) -> bool:
        """The check the model's stream makes (should_stop): then the connection goes back to the
        pool, since the stream goes on waiting. The runner's own checks keep it: work on the
        database follows them, and a connection given back mid-start is waited for again at the
        back of the queue, behind every reply that started meanwhile (in a burst, all of them).
        The one exception is the request's vector (work_as): waiting for the model's turn while
        holding a connection cost more than queueing for one again."""
        stopped = self()
        release_connection()
        return stopped

    def outcome(self) -> str:
        """What a halted attempt reports: stopped, unless it was taken over (then it must leave quietly)."""
        if self.interrupted:
            raise Interrupted()
        if self.superseded:
            raise Superseded()
        return Task.Status.STOPPED


def _read_stops(task_ids: set[int]) -> dict[int, stops.Seen]:
    rows = Task.objects.filter(pk__in=task_ids).values_list("pk", "stop_requested_at", "attempts")
    return {pk: stops.Seen(stop_requested=requested is not None, attempts=attempts) for pk, requested, attempts in rows}


_stop_board = stops.Board(every=STOP_CHECK_SECONDS, read=_read_stops)


class Superseded(Exception):
    """Another attempt holds the task now; this one leaves without storing or finishing anything."""


class Interrupted(Superseded):
    """The server is stopping: this attempt leaves without storing or finishing anything."""
