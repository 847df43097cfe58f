"""The app's own context builder as a benchmark strategy: the real database path, end to end.

Each task is stored as the app stores it (the instruction first, then every
step), a prompt is loaded and built before each of its model calls as for a
live task (timed, loading included), and after the task the same upkeep runs: the recall index, memory
extraction and folds, with the offline responder. A scratch office holds it all
and is deleted at the end.
"""

from __future__ import annotations

import time
import uuid

from langchain_core.messages import BaseMessage

from benchmarks.metrics import SEPARATOR, Request
from coworkers.models import Coworker
from coworkers.providers import OfflineResponder
from office.models import Channel, Office
from sessions import context, history, prompts, services, upkeep
from sessions.models import ContextPolicy, Task

# Each request's build is timed this many times; the fastest counts.
BUILD_TIMINGS = 3

COWORKERS = {
    "mina": "Marketing lead",
    "theo": "Software engineer",
    "iris": "Product designer",
    "sam": "Account executive",
    "omar": "Operations manager",
}


class BuilderStrategy:
    timed = True  # its build times are measured (the baselines' are not worth it)

    def __init__(self, fold_batch: int):
        self.fold_batch = fold_batch
        self.name = f"builder (fold_batch {fold_batch})"
        self.provider = OfflineResponder()

    def start(self, conversation) -> None:
        self.office = Office.objects.create(name="Benchmark", slug=f"bench-{uuid.uuid4().hex[:12]}")
        for slug, role in COWORKERS.items():
            Coworker.objects.create(office=self.office, name=slug.title(), slug=slug, role=role, persona=f"You are {slug.title()}, the {role.lower()}.")
        # A 1:1: one coworker answers throughout, as in most of a person's work. (In a shared
        # channel the persona at the front changes with whoever answers; caching is per coworker.)
        mina = Coworker.objects.get(office=self.office, slug="mina")
        self.channel = Channel.objects.create(office=self.office, kind=Channel.Kind.DIRECT, name="Mina", coworker=mina)
        ContextPolicy.objects.create(channel=self.channel, fold_batch=self.fold_batch)
        # The budgets this run is held to (the command checks every request against them).
        self.policy = prompts.resolve_policy(self.channel, mina)
        self.session = services.get_active_session(channel=self.channel)
        self.tasks = {task.turn: task for task in history.group_tasks(list(conversation.records))}
        self.summarized = (0, 0)  # (summarized_through, fold_through) of the last request

    def request(self, turn: int, instruction: str) -> Request:
        task, _ = services.start_task(session=self.session, instruction=instruction)
        self.stored = 1  # the instruction
        request = self._build(turn, instruction)
        # As the pipeline does at a task's first model call: its later calls show the same tail.
        Task.objects.filter(pk=task.pk).update(prompt_report=request.details["report"])
        return request

    def step(self, turn: int, upto: int) -> Request:
        """The next model call of the task's tool loop: its records so far are stored first."""
        self._store(turn, upto)
        return self._build(turn, self.tasks[turn].instruction)

    def _build(self, turn: int, instruction: str) -> Request:
        # The current task's records as the pipeline reads them, before each model call.
        current = [services.record_from_row(row) for row in services.task_messages(self.session, turn=turn)][1:]
        # Loading and building has no side effects, so the same build is timed a few times and
        # the fastest kept (as timeit does): the slower runs measure the machine's other work
        # (other processes, a garbage collection), not the builder.
        timings = []
        for _ in range(BUILD_TIMINGS):
            started = time.perf_counter()
            prompt = prompts.build_for_task(session=self.session, instruction=instruction, turn=turn, current=current)
            timings.append(time.perf_counter() - started)
        build_seconds = min(timings)
        # A fold changes the prompt's front twice when it is early: tasks leave the window (the
        # plan's boundary moves; their digests wait in the summary layer), then the summary lands.
        # A batch fold runs before the next request, so both happen at once. Either is a fold.
        fold = (prompt.report["summarized_through"], prompt.report["fold_through"])
        folded = fold[0] != self.summarized[0] or fold[1] != self.summarized[1]
        self.summarized = fold
        return request_of(prompt, build_seconds=build_seconds, folded=folded)

    def _store(self, turn: int, upto: int | None = None) -> None:
        """Store the task's records up to `upto` (all when None) that are not stored yet."""
        records = self.tasks[turn].records
        upto = len(records) if upto is None else upto
        for record in records[self.stored : upto]:
            services.append_message(
                session=self.session,
                turn=turn,
                role=record.role,
                content=record.content,
                tool_calls=record.tool_calls,
                tool_call_id=record.tool_call_id or "",
                coworker=record.coworker or "",
            )
        self.stored = max(self.stored, upto)

    def finish_task(self, turn: int) -> None:
        self._store(turn)
        task = Task.objects.get(session=self.session, turn=turn)
        Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE)
        # The same upkeep a live task gets, run inline instead of in the background (storing indexed it).
        upkeep.memory.extract_memory(task_id=task.pk, provider=self.provider)
        upkeep.vectors.embed_exchanges(self.session, [turn])
        target = upkeep.folding.fold_target(self.session, completed=turn)
        if target > self.summarized[0]:
            upkeep.folding.fold_summary(session_id=self.session.pk, through_turn=target, provider=self.provider)

    def close(self) -> None:
        self.office.delete()


def request_of(prompt: context.Prompt, *, build_seconds: float = 0.0, folded: bool = False) -> Request:
    """A built prompt as the benchmark measures it: its layers, and what its layer budgets cover."""
    return Request(
        layers=layers_of(prompt),
        build_seconds=build_seconds,
        folded=folded,
        details={"report": prompt.report},
        budgeted_chars=budgeted_chars(prompt),
    )


def layers_of(prompt: context.Prompt) -> dict[str, str]:
    """Name each part of a built prompt the way the benchmark's layers are named."""
    blocks, window, tail, current = _parts(prompt)
    # Messages are joined as layers are, so a tail or a tool loop that moves into the window
    # reads the same there: the next request begins with the whole previous one.
    return {
        **blocks,
        "recent": SEPARATOR.join(_serialize(m) for m in window),
        "recalled": _serialize(tail) if tail is not None else "",
        "current": SEPARATOR.join(_serialize(m) for m in current),
    }


def budgeted_chars(prompt: context.Prompt) -> int:
    """What the layer budgets cover in a built prompt, counted from what it sends: the memory and
    summary blocks, and every message before the current task (the window, the tails kept in it
    and this task's tail), each as its text and tool calls (`context.message_chars`, the builder's
    measure). Not the role prefixes and blank lines `layers_of` adds: no model is sent those as text."""
    blocks, window, tail, _ = _parts(prompt)
    messages = [*window, tail] if tail is not None else window
    return len(blocks["memory"]) + len(blocks["summary"]) + sum(context.message_chars(m) for m in messages)


def _parts(prompt: context.Prompt) -> tuple[dict[str, str], list[BaseMessage], BaseMessage | None, list[BaseMessage]]:
    """The system blocks by layer, the window's messages, this task's tail (or None), the current task's messages."""
    blocks = {"system": "", "memory": "", "summary": ""}
    for block in prompt.system:
        if block.startswith(context.MEMORY_HEADER):
            blocks["memory"] = block
        elif block.startswith(context.SUMMARY_HEADER):
            blocks["summary"] = block
        else:
            blocks["system"] = block
    window = list(prompt.messages[: prompt.window_end + 1])
    rest = list(prompt.messages[prompt.window_end + 1 :])
    tail = rest.pop(0) if rest and _text(rest[0]).startswith(context.RECALL_HEADER) else None
    return blocks, window, tail, rest


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def _serialize(message: BaseMessage) -> str:
    calls = "".join(f" [tool {c['name']} {c['args']}]" for c in getattr(message, "tool_calls", None) or ())
    return f"{message.type}: {_text(message)}{calls}"
