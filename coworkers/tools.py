"""The tools coworkers call (documents, handoff, memory, history search): their specs and run_tool.
Must not import an LLM SDK, the web layer or the runner (sessions.pipeline runs these tools); a handoff
posts its instruction through sessions.posting.

run_tool never raises: whatever goes wrong comes back as an error result the
model can act on, so one bad call never crashes a task. Every lookup is
bounded by the context's office: no tool sees another office's rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from office import documents
from office.markdown import literal
from office.models import Channel, Document
from sessions import context as prompt_context
from sessions import extract, posting, prompts, relevance
from sessions.memory import apply_decision
from sessions.models import MemoryItem, Session, Task

from .models import Coworker
from .providers.base import ToolSpec

logger = logging.getLogger(__name__)

LIST_LIMIT = 50
MEMORY_TEXT_CHARS = 1_000
MEMORY_ROWS = 500  # the newest active items a remember or forget compares against, as extraction does
SEARCH_DEFAULT, SEARCH_MAX = 5, 10
SEARCH_INSTRUCTION_CHARS, SEARCH_ANSWER_CHARS = 300, 400
BRIEF_CHARS = 8_000
# A coworker handing to a coworker handing to a coworker…: past this many links, it is a loop.
MAX_HANDOFF_CHAIN = 5
# And how wide: a person's own request may be split among a few coworkers, and work handed on may
# be handed on once more. Without it one reply could hand on to everyone, each of them to everyone
# again, five deep: thousands of paid replies from one instruction. With it at most 3 + 3 × 4.
MAX_HANDOFFS_PER_REQUEST = 3
MAX_HANDOFFS_PER_HANDOFF = 1


@dataclass(frozen=True)
class ToolContext:
    office_id: int
    channel_id: int
    session_id: int
    task_id: int
    turn: int
    coworker: str  # slug of the coworker running the tool


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool = False


class ToolFailed(Exception):
    """An expected failure; its message goes back to the model as an error result."""


def _string(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


def _schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_documents",
        "List the office's shared documents (drafts, specs, plans, copy, notes), most recently updated first, "
        "with their kind and current version. Give a query to keep only documents whose title or text contains "
        "all of its words.",
        _schema({"query": _string("Words to look for in titles and text. Omit to list every document.")}),
    ),
    ToolSpec(
        "read_document",
        "Read an office document by its title (any capitalisation): its current text, or an earlier version.",
        _schema(
            {
                "title": _string("The document's title, as list_documents shows it."),
                "version": {"type": "integer", "minimum": 1, "description": "An earlier version's number. Omit for the current text."},
            },
            ("title",),
        ),
    ),
    ToolSpec(
        "write_document",
        "Save a document's full text. A new title creates the document; an existing title (any capitalisation) "
        "gets a new version with this text, and earlier versions are kept. Always send the whole text, not a change. "
        f"At most {documents.MAX_CONTENT_CHARS:,} characters.",
        _schema(
            {
                "title": _string("The document's title."),
                "content": _string("The complete text of the document (Markdown is fine)."),
                "kind": _string("What it is. Omit to keep an existing document's kind (new ones are drafts).", enum=list(Document.Kind.values)),
            },
            ("title", "content"),
        ),
    ),
    ToolSpec(
        "remember",
        "Store a durable fact in the office's long-term memory, to be known in future conversations: a preference "
        "of the user, a fact about the company, a project fact (dates, prices, names), a working rule or a decision. "
        "Write one short standalone sentence. A fact already known changes nothing; a new value for a known fact "
        "replaces the old one.",
        _schema(
            {
                "text": _string("The fact, as one short standalone sentence, e.g. “The launch is on May 4.”"),
                "kind": _string("The kind of fact; defaults to project.", enum=list(extract.KINDS)),
            },
            ("text",),
        ),
    ),
    ToolSpec(
        "forget",
        "Remove a fact from the office's long-term memory, e.g. when the user says it is wrong or no longer true. "
        "Describe the fact; the closest stored item is removed.",
        _schema({"text": _string("The fact to forget, e.g. “the launch date”.")}, ("text",)),
    ),
    ToolSpec(
        "search_history",
        "Search the earlier tasks of this conversation and this channel's earlier conversations for what was "
        "asked and answered, best match first, with dates. Use it when the user refers to something discussed "
        "before that is not in front of you.",
        _schema(
            {
                "query": _string("Keywords to look for, e.g. “Team plan price”."),
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX, "description": f"How many exchanges to return (default {SEARCH_DEFAULT})."},
            },
            ("query",),
        ),
    ),
    ToolSpec(
        "handoff",
        "Hand work to another coworker of the office with a brief. It starts a task for them, in this project "
        "channel when they are a member of it, otherwise in their 1:1 channel. Write the brief so they can act on "
        "it alone: what to do, why, what you know, what to deliver.",
        _schema(
            {
                "coworker": _string("Who takes the work: their name or handle."),
                "brief": _string("What they should do, with everything they need to know."),
            },
            ("coworker", "brief"),
        ),
    ),
)

_SPECS = {spec.name: spec for spec in TOOL_SPECS}


def run_tool(context: ToolContext, name: str, args: Mapping) -> ToolOutcome:
    """Run one tool call. Never raises: failures come back with is_error=True and a message to act on."""
    spec = _SPECS.get(name) if isinstance(name, str) else None
    if spec is None:
        return ToolOutcome(f"There is no tool called “{name}”. The tools are: {', '.join(_SPECS)}.", is_error=True)
    try:
        checked = _check_args(spec, args)
        tool, writes = _TOOLS[name]
        if writes:
            # A failed write rolls back alone, and leaves any surrounding transaction usable.
            with transaction.atomic():
                return tool(context, checked)
        return tool(context, checked)
    except (ToolFailed, documents.DocumentError) as error:
        return ToolOutcome(str(error), is_error=True)
    except Exception as error:
        logger.exception("Tool %s failed (task %s, args %.500r)", name, context.task_id, args)
        return ToolOutcome(
            f"The {name} tool failed because of an internal error ({type(error).__name__}). Try once more; "
            "if it fails again, tell the user it is not working right now.",
            is_error=True,
        )


# Arguments -----------------------------------------------------------------------------

_TYPES = {"string": (str,), "integer": (int,)}
_A = {"string": "a string", "integer": "an integer"}
# Kept exactly as sent: leading spaces and blank lines can matter in a document.
_RAW = frozenset({"content"})


def _check_args(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """The arguments checked against the spec's schema: types, required, enums, ranges, no strangers."""
    if not isinstance(args, Mapping):
        raise ToolFailed(f"{spec.name} takes an object of arguments, not {type(args).__name__}.")
    properties: Mapping[str, Mapping] = spec.parameters["properties"]
    takes = ", ".join(properties) or "no arguments"
    unknown = [key for key in args if key not in properties]
    if unknown:
        raise ToolFailed(f"{spec.name} got unexpected argument(s) {', '.join(map(str, unknown))}; it takes: {takes}.")
    checked: dict[str, Any] = {}
    for key, schema in properties.items():
        value = args.get(key)
        if value is None:
            if key in spec.parameters["required"]:
                raise ToolFailed(f"{spec.name} needs the argument “{key}” ({schema['description']}).")
            continue
        kind = schema["type"]
        # bool is an int in Python, never in JSON.
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool):
            raise ToolFailed(f"“{key}” must be {_A[kind]}, got {type(value).__name__}: {str(value)[:80]!r}.")
        if kind == "string":
            if not value.strip():
                if key in spec.parameters["required"]:
                    raise ToolFailed(f"“{key}” must not be empty ({schema['description']}).")
                continue
            value = value if key in _RAW else value.strip()
        if "enum" in schema and value not in schema["enum"]:
            raise ToolFailed(f"“{key}” must be one of: {', '.join(schema['enum'])}; got “{value}”.")
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ToolFailed(f"“{key}” must be {bounds}; got {value}.")
        checked[key] = value
    return checked


# Documents -----------------------------------------------------------------------------


def _list_documents(context: ToolContext, args: dict) -> ToolOutcome:
    query = args.get("query", "")
    found = documents.list_documents(context.office_id, query)
    if not found:
        if query:
            return ToolOutcome(f"No documents match “{query}”. Call list_documents without a query to see them all.")
        return ToolOutcome("The office has no documents yet. Create one with write_document.")
    lines = [
        f"- {doc.title} ({doc.kind}, version {doc.current_number}, updated {_when(doc.updated_at)})"
        for doc in found[:LIST_LIMIT]
    ]
    header = f"{len(found)} document{'s' if len(found) != 1 else ''}" + (f" matching “{query}”" if query else "") + ":"
    if len(found) > LIST_LIMIT:
        lines.append(f"… and {len(found) - LIST_LIMIT} more; give a query to narrow the list.")
    return ToolOutcome("\n".join([header, *lines]))


def _read_document(context: ToolContext, args: dict) -> ToolOutcome:
    document, version = documents.read_document(context.office_id, args["title"], args.get("version"))
    newest = document.versions.order_by("-number").values_list("number", flat=True).first()
    which = f"version {version.number}" + (" (current)" if version.number == newest else f" of {newest}")
    header = f"“{document.title}” ({document.kind}), {which}, by {version.author}, {_when(version.created_at)}:"
    return ToolOutcome(f"{header}\n\n{version.content}")


def _write_document(context: ToolContext, args: dict) -> ToolOutcome:
    task = _current_task(context)
    version = documents.write_document(
        office_id=context.office_id,
        title=args["title"],
        content=args["content"],
        author=context.coworker,
        kind=args.get("kind"),
        source_task=task,
    )
    title = version.document.title
    if getattr(version, "unchanged", False):
        return ToolOutcome(f"“{title}” already has exactly this text; it stays at version {version.number}.")
    return ToolOutcome(f"Saved “{title}” as version {version.number}.")


# Memory --------------------------------------------------------------------------------


def _remember(context: ToolContext, args: dict) -> ToolOutcome:
    text = args["text"]
    if len(text) > MEMORY_TEXT_CHARS:
        raise ToolFailed(
            f"A memory item is one short fact; this one has {len(text):,} characters (at most {MEMORY_TEXT_CHARS:,}). "
            "Shorten it, or keep longer material in a document with write_document."
        )
    candidate = extract.Candidate(text=text, kind=args.get("kind", "project"))
    known = _known_items(context.office_id)
    decision = extract.decide(candidate, extract.most_similar(text, known))
    event = apply_decision(decision, office_id=context.office_id, task=_current_task(context), actor=context.coworker)
    if decision.action == "add":
        return ToolOutcome(f"Remembered as item {event.item_id} ({candidate.kind}): “{event.after}”")
    if decision.action == "update":
        return ToolOutcome(f"Updated memory item {event.item_id}: “{event.before}” is now “{event.after}”")
    item = next((entry for entry in known if entry.id == decision.item_id), None)
    return ToolOutcome(f"Already remembered as item {decision.item_id}, nothing changed: “{item.text if item else text}”")


def _forget(context: ToolContext, args: dict) -> ToolOutcome:
    text = args["text"]
    known = _known_items(context.office_id)
    similar = extract.most_similar(text, known)
    decision = extract.match_forget(text, similar)
    apply_decision(decision, office_id=context.office_id, task=_current_task(context), actor=context.coworker)
    if decision.action == "delete":
        return ToolOutcome(f"Forgot memory item {decision.item_id}: “{decision.text}”")
    closest = next((item for item in similar if relevance.similarity(text, item.text) > 0), None)
    hint = f" The closest stored item is {closest.id}: “{closest.text}”" if closest else " Memory holds nothing like it."
    return ToolOutcome(f"Nothing in memory matches “{text}” closely enough, so nothing was forgotten.{hint}")


def _known_items(office_id: int) -> list[extract.Existing]:
    items = MemoryItem.objects.filter(office_id=office_id, active=True).order_by("-updated_at")[:MEMORY_ROWS]
    return [extract.Existing(id=item.pk, text=item.text, kind=item.kind) for item in items]


# History -------------------------------------------------------------------------------


def _search_history(context: ToolContext, args: dict) -> ToolOutcome:
    """The recalled layer's search, asked by the coworker: this conversation's earlier tasks and
    the channel's earlier conversations, best first."""
    query, limit = args["query"], args.get("limit", SEARCH_DEFAULT)
    session = Session.objects.filter(pk=context.session_id, channel__office_id=context.office_id).first()
    if session is None:
        raise ToolFailed("This conversation's history is not available.")
    found = prompts.find_recall_candidates(session, query, through=context.turn - 1)[:limit]
    if not found:
        return ToolOutcome(f"Nothing earlier in this channel mentions “{query}”. Try other words.")
    lines = [f"Earlier exchanges matching “{query}”, best first:"]
    lines.extend(prompt_context.render_exchange(candidate) for candidate in found)
    return ToolOutcome("\n\n".join(lines))


# Handoff -------------------------------------------------------------------------------


def _handoff(context: ToolContext, args: dict) -> ToolOutcome:
    wanted, brief = args["coworker"], args["brief"]
    if len(brief) > BRIEF_CHARS:
        raise ToolFailed(
            f"The brief has {len(brief):,} characters (at most {BRIEF_CHARS:,}). Put the details in a document "
            "with write_document and point to it in a shorter brief."
        )
    team = list(Coworker.objects.filter(office_id=context.office_id).order_by("name"))
    target = next((c for c in team if wanted.lower().lstrip("@") in (c.slug.lower(), c.name.lower())), None)
    others = [c for c in team if c.slug != context.coworker]
    roster = ", ".join(f"{c.name} (@{c.slug}, {c.role})" for c in others) or "nobody else"
    if target is None:
        raise ToolFailed(f"There is no coworker “{wanted}” in this office. The team: {roster}.")
    if target.slug == context.coworker:
        raise ToolFailed(f"You cannot hand work to yourself. Hand it to one of: {roster}.")
    me = next((c for c in team if c.slug == context.coworker), None)
    current = _current_task(context)
    if _chain_length(current) >= MAX_HANDOFF_CHAIN:
        raise ToolFailed(
            f"This work has already been handed on {MAX_HANDOFF_CHAIN} times. Do it yourself, or ask the user "
            "who should take it."
        )
    if current is not None:
        wide = MAX_HANDOFFS_PER_HANDOFF if current.handed_off_from_id else MAX_HANDOFFS_PER_REQUEST
        if Task.objects.filter(handed_off_from=current).count() >= wide:
            raise ToolFailed(
                f"You have already handed on {'this handed-on work' if current.handed_off_from_id else 'parts of this request'} "
                f"{wide} time{'s' if wide > 1 else ''}. Do the rest yourself, or say in your reply who should take it."
            )
    channel = _handoff_channel(context, target)
    task = posting.post_instruction(
        channel=channel,
        text=f"Handoff from {me.name if me else context.coworker}: {brief}",
        coworker=target,
        # "by": who handed it on, which the page shows instead of "You" (the task's own coworker
        # is only its first responder).
        origin={"handoff_from": context.task_id, "channel": context.channel_id, "by": context.coworker},
        handed_off_from=current,
    )
    where = f"the 1:1 with {target.name}" if channel.kind == Channel.Kind.DIRECT else f"#{channel.name}"
    # A link people can follow from the reply that reports it (the model reads it as it is).
    return ToolOutcome(f"Handed off to {literal(target.name)}: [task {task.turn} in {literal(where)}]({reverse('open_task', args=[task.pk])}).")


def _handoff_channel(context: ToolContext, target: Coworker) -> Channel:
    """The current project channel when the target is in it, else the target's 1:1 (opened if missing)."""
    here = Channel.objects.filter(pk=context.channel_id, office_id=context.office_id).first()
    if here is not None and here.kind == Channel.Kind.PROJECT and here.members.filter(pk=target.pk).exists():
        return here
    channel, _ = Channel.objects.get_or_create(
        office_id=context.office_id,
        kind=Channel.Kind.DIRECT,
        coworker=target,
        defaults={"name": target.name},
    )
    return channel


def _chain_length(task: Task | None) -> int:
    """How many handoffs led to this task (bounded: stops counting at the limit)."""
    length = 0
    while task is not None and task.handed_off_from_id and length < MAX_HANDOFF_CHAIN:
        length += 1
        task = Task.objects.filter(pk=task.handed_off_from_id).only("pk", "handed_off_from_id").first()
    return length


# Helpers -------------------------------------------------------------------------------


def _current_task(context: ToolContext) -> Task | None:
    return Task.objects.filter(
        pk=context.task_id, session_id=context.session_id, session__channel__office_id=context.office_id
    ).first()


def _when(moment) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M}"


# name -> (function, whether it writes: writes run in their own transaction)
_TOOLS: dict[str, tuple[Callable[[ToolContext, dict], ToolOutcome], bool]] = {
    "list_documents": (_list_documents, False),
    "read_document": (_read_document, False),
    "write_document": (_write_document, True),
    "remember": (_remember, True),
    "forget": (_forget, True),
    "search_history": (_search_history, False),
    "handoff": (_handoff, True),
}
