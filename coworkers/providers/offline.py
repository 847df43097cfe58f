"""The offline responder: the provider without an API key; deterministic, answering only from its prompt.
Pure: imports the standard library, langchain_core and pure sessions modules (no Django, no ORM, no LLM SDK).

Its replies are built from memory, the summary and what people said, never from a coworker's
earlier replies (its own included), so a reply can never quote another one. The page says once
that answers are offline (office.views), so the replies themselves carry no label."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from sessions.context import MEMORY_HEADER, RECALL_HEADER, SUMMARY_END, SUMMARY_FRAME, SUMMARY_HEADER
from sessions.extract import extract_candidates, states_fact
from sessions.history import TaskRecords, ToolCall
from sessions.relevance import Index, shorten, similarity, split_sentences, stem, tokens
from sessions.summarize import MONTHS, PAST, summarize_extractively

from .base import (
    Completion,
    CompletionRequest,
    ToolSpec,
    Usage,
    estimate_request_tokens,
    estimate_tokens,
    message_text,
    stream_text,
)

# What every completion it makes says it was made by: no model was called, so nothing is billed.
MODEL = "offline"
NOTHING_YET = "I don't have anything on that yet."
NOTHING_TO_ADD = "Nothing to add from me."
FOUND = "Here's what I have on that:"

QUOTE_LIMIT = 3
QUOTE_LIMIT_ALL_HANDS = 1  # in #all-hands every answer is brief
QUOTE_CHARS = 300
TOOL_RESULT_LINES = 3
RELATIVE_CUTOFF = 0.5  # a line scoring below this share of the best one is noise next to it
SAME_LINE = 0.8  # memory and summary often hold one fact twice; quote it once

# relevance.tokens already drops function words; these are the words of asking
# itself ("tell me", "how much"), which say nothing about what is asked about.
ASKING = frozenset(stem(word) for word in "tell know think say said thing anything something remind remember".split())
ASKING_CJK = frozenset("什麼怎樣哪誰幾多少如何")
# Words about deciding and discussing: "what did we decide about pricing?" is about pricing. They
# count only when the instruction names nothing else ("what did we decide?").
SOFT = frozenset(
    stem(word)
    for word in "decide decided decision decisions agree agreed choose chose chosen settle settled conclude "
    "concluded discuss discussed mention mentioned talk talked".split()
) | {"決定", "決", "定", "同意", "討論", "討", "論", "提到"}

# Concepts a value stands for: "what did we decide about pricing?" must find "$29 per month for
# the Pro plan", which never says "price". A question about the concept and a line holding such a
# value both get the concept's word, so BM25 can match them.
CONCEPTS = (
    (
        "price",
        re.compile(r"\b(?:pric\w*|costs?|fees?|how much|charg\w*)\b|價|費|多少錢|收費", re.I),
        re.compile(r"[$€£¥]\s?\d|\d\s?(?:美元|元|塊|dollars?\b|usd\b|eur\b|euros?\b)", re.I),
    ),
    (
        "date",
        re.compile(r"\b(?:when|dates?|deadlines?|what day)\b|什麼時候|何時|日期|幾號|哪天", re.I),
        re.compile(
            rf"\b(?:{MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\b"
            r"|\b\d{4}-\d{1,2}-\d{1,2}\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:tomorrow|next week)\b"
            r"|\d{1,2}\s*月\s*\d{1,2}\s*[日號]|星期[一二三四五六日天]|週[一二三四五六日]|明天|下週|下周",
            re.I,
        ),
    ),
)

_MEMORY_LINE = re.compile(r"^[-*•]\s+\[(?P<kind>[\w-]+)\]\s+(?P<text>.+)$")
_TASK_LINE = re.compile(r"^[-*•]\s+Tasks?\s+(?P<span>\d+(?:\s*[–-]\s*\d+)?)(?:\s*\([^)]*\))?:\s*(?P<text>.+)$")
_SUMMARY_REF = re.compile(r"^[-*•]\s+\((?P<ref>tasks?\s+\d+(?:\s*[–-]\s*\d+)?)(?:,[^)]*)?\)\s*(?P<text>.+)$", re.I)
_BULLET = re.compile(r"^(?:[-*•+]|\d{1,3}[.)])\s+")


@dataclass(frozen=True)
class _Line:
    text: str
    source: str  # "from memory", "summary, task 3", "said in task 12", ...
    tag: str = ""  # searched but not quoted: a memory item's kind ("decision")

    @property
    def searchable(self) -> str:
        concepts = [word for word, _, value in CONCEPTS if value.search(self.text)]
        return " ".join([self.tag, self.text, *concepts]).strip()


class OfflineResponder:
    """Answers every purpose without a model.

    reply: the 1-3 lines of its prompt (memory, the summary, and what people said
    earlier, in the window or recalled) most relevant to the instruction, each
    saying where it came from, in the coworker's voice; "I don't have anything on
    that yet" when nothing matches. Never a coworker's reply. With a write_document
    tool offered and an unmistakable "write a doc called X", it saves a stub; with a
    handoff tool and an unmistakable "hand this to Theo: …", it hands the work over;
    after tool results it reports them. fold: the extractive summary (without the
    replies given offline). extract: the rule-based candidates as JSON (of a task
    answered offline, from what people said only). route: the best-matching
    coworkers' slugs as JSON. Every completion's model is "offline".
    """

    name = "offline"
    offline = True

    def complete(
        self,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Completion:
        calls: tuple[ToolCall, ...] = ()
        if request.purpose == "fold":
            text = _fold(request.payload)
        elif request.purpose == "extract":
            text = _extract(request.payload)
        elif request.purpose == "route":
            text = _route(request.payload)
        elif request.messages and isinstance(request.messages[-1], ToolMessage):
            text = _answer_tool_results(request.messages)
        elif document := _document_call(request):
            text, calls = document
        elif handoff := _handoff_call(request):
            text, calls = handoff
        else:
            text = _reply(request)

        sent, stopped = stream_text(_word_chunks(text), on_text=on_text, should_stop=should_stop)
        if stopped:
            stop_reason, calls = "stopped", ()
        else:
            stop_reason = "tool_use" if calls else "end_turn"
        output = estimate_tokens(sent) + sum(
            estimate_tokens(json.dumps(dict(call.args), ensure_ascii=False)) for call in calls
        )
        return Completion(
            text=sent,
            tool_calls=calls,
            usage=Usage(input_tokens=estimate_request_tokens(request), output_tokens=output),
            model=MODEL,
            stop_reason=stop_reason,
        )


def _word_chunks(text: str, longest: int = 16) -> list[str]:
    # A word and the space after it; long runs (CJK has no spaces) cut into slices. Joined, they are the text.
    chunks: list[str] = []
    for piece in re.findall(r"\S+\s*|\s+", text):
        chunks.extend(piece[i : i + longest] for i in range(0, len(piece), longest))
    return chunks


def _quote(text: str) -> str:
    return "“" + shorten(" ".join(text.split()), QUOTE_CHARS) + "”"


def _topic_tokens(text: str) -> set[str]:
    return {
        token
        for token in tokens(text)
        if token not in ASKING and not (token[0] in ASKING_CJK and all(char in ASKING_CJK for char in token))
    }


# --- reply: where the lines come from ----------------------------------------

# A recalled exchange's header ("## Task 12 of this conversation, May 3") and its people's lines.
_EXCHANGE = re.compile(r"^##\s+Task\s+(?P<turn>\d+)\s+of\s+(?P<where>this conversation|an earlier conversation)")
_SAID_BY_USER = re.compile(r"^User(?:\s+\(the task after\))?:\s*(?P<text>.+)$")
# "Draft…", "Remind me…", "Please…", "Can you…", 「請…」「幫我…」: a request, which answers nothing
# when quoted back. (summarize.PAST holds the verbs of work: draft, write, plan…)
_REQUEST_START = re.compile(
    r"^(?:please|can|could|would|will|let'?s|lets|pls|remind|tell|show|give|explain|list|help|find|check|look"
    r"|get|try|take)\b"
    r"|^(?:請|幫我|麻煩|可以幫|能不能|提醒|告訴)",
    re.I,
)


def _task_source(span: str, *, in_summary: bool) -> str:
    task = f"task{'s' if re.search('[–-]', span) else ''} {span}"
    return f"summary, {task}" if in_summary else f"said in {task}"


def _context_lines(text: str) -> Iterator[_Line]:
    """Lines of the memory, summary and recall blocks (sessions.context's layout), each with its source.

    Anything under another top-level header (the persona, the office) is not
    quoted: it tells the model how to behave, it does not answer anything. Of a
    digest or a recalled exchange only what the user said is taken: a coworker's
    reply is never a source.
    """
    section: str | None = None
    part = "summary"  # inside the summary block: "summary", "digests" or "carried"
    exchange = ""  # inside the recall block: the source of the exchange being read
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# "):
            section = (
                "memory" if line.startswith(MEMORY_HEADER)
                else "summary" if line.startswith(SUMMARY_HEADER)
                else "recall" if line.startswith(RECALL_HEADER)
                else None
            )
            part, exchange = "summary", ""
            continue
        if section == "recall" and (match := _EXCHANGE.match(line)):
            earlier = match["where"].startswith("an earlier")
            exchange = "said in an earlier conversation" if earlier else f"said in task {match['turn']}"
            continue
        if section is None or line.startswith("#") or line in (SUMMARY_FRAME, SUMMARY_END):
            continue  # sub-headers (## Decisions) keep the section they are in
        if not _BULLET.match(line) and line.endswith((":", "：")):
            if line.startswith("Not yet summarized"):
                part = "digests"
            else:
                part = "carried" if line.startswith("Carried") else "summary"
            continue
        if match := _MEMORY_LINE.match(line):
            yield _Line(match["text"], "from memory", match["kind"])
        elif section == "memory":
            continue  # the block's description line
        elif section == "recall":
            if exchange and (said := _SAID_BY_USER.match(line)):
                yield from _said_lines(said["text"], exchange)
            # Anything else there is a coworker's reply, or a line of another layout: not a source.
        elif match := _TASK_LINE.match(line):
            if section == "summary" and part == "summary":  # a topic bullet
                yield _Line(match["text"], _task_source(match["span"], in_summary=True))
            else:  # a digest, "instruction → answer": only the instruction is someone's words
                said = match["text"].split(" → ", 1)[0]
                yield from _said_lines(said, _task_source(match["span"], in_summary=False))
        elif match := _SUMMARY_REF.match(line):
            yield _Line(match["text"], f"summary, {match['ref'].lower()}")
        elif part == "carried":
            yield _Line(_BULLET.sub("", line), "our previous conversation")
        elif section == "summary" and part == "summary":
            yield _Line(_BULLET.sub("", line), "summary")


def _said_lines(text: str, source: str) -> Iterator[_Line]:
    """The sentences of what a person said that state something: not questions, not requests."""
    for sentence in split_sentences(text):
        sentence = sentence.strip()
        first = sentence.split(" ", 1)[0].lower().strip(",:;")
        if first in PAST or _REQUEST_START.match(sentence) or not states_fact(sentence):
            continue
        yield _Line(sentence, source)


def _is_context_block(message: BaseMessage) -> bool:
    # The builder sends recalled tasks and fresh memory as a human message that opens with this header.
    return isinstance(message, HumanMessage) and message_text(message).lstrip().startswith(RECALL_HEADER)


def _message_lines(messages: Sequence[BaseMessage], turns: Sequence[Any] | None) -> list[_Line]:
    """Lines of the earlier tasks: what people said in them (never a reply, nor tool output), and the
    context blocks (recall, fresh memory) shown in front of them."""
    lines: list[_Line] = []
    instructions: list[str] = []
    for message in messages:
        if _is_context_block(message):
            lines.extend(_context_lines(message_text(message)))
        elif isinstance(message, HumanMessage):
            instructions.append(message_text(message))
    if turns is not None and len(turns) != len(instructions):
        turns = None  # a list that does not fit would cite the wrong tasks; better to cite none
    for index, said in enumerate(instructions):
        source = f"said in task {turns[index]}" if turns is not None else "said earlier"
        lines.extend(_said_lines(said, source))
    return lines


def _relevant_lines(instruction: str, lines: Sequence[_Line], limit: int = QUOTE_LIMIT) -> list[_Line]:
    instruction = " ".join([instruction, *(word for word, asked, _ in CONCEPTS if asked.search(instruction))])
    wanted = _topic_tokens(instruction)
    wanted = (wanted - SOFT) or wanted
    if not wanted:
        return []
    # A question is not an answer: an earlier "what is our price?" must not be quoted back.
    usable = [
        line for line in lines
        if not line.text.rstrip().endswith(("?", "？")) and _topic_tokens(line.searchable) & wanted
    ]
    if not usable:
        return []
    ranked = Index((i, line.searchable) for i, line in enumerate(usable)).top(instruction, len(usable))
    if not ranked:
        return []
    best = ranked[0][1]
    chosen: list[_Line] = []
    for key, score in ranked:
        line = usable[key]
        if score < best * RELATIVE_CUTOFF:
            break
        if any(similarity(line.text, other.text) >= SAME_LINE for other in chosen):
            continue
        chosen.append(line)
        if len(chosen) == limit:
            break
    return chosen


def _reply(request: CompletionRequest) -> str:
    instruction = request.instruction
    current = max(
        (i for i, m in enumerate(request.messages) if isinstance(m, HumanMessage) and not _is_context_block(m)),
        default=len(request.messages),
    )
    turns = request.payload.get("turns")
    lines = [line for block in request.system for line in _context_lines(block)]
    lines += _message_lines(request.messages[:current], turns if isinstance(turns, Sequence) else None)
    # A colleague who answered this task before (several answer in shared channels) said these already.
    said_here = " ".join(message_text(m) for m in request.messages[current + 1 :] if isinstance(m, AIMessage))
    fresh = [line for line in lines if _stated(line.text) not in said_here]
    brief = request.payload.get("channel_kind") == "all_hands"
    found = _relevant_lines(instruction, fresh, QUOTE_LIMIT_ALL_HANDS if brief else QUOTE_LIMIT)
    if not found:
        return NOTHING_TO_ADD if len(fresh) < len(lines) and _relevant_lines(instruction, lines) else NOTHING_YET
    return FOUND + "\n\n" + "\n".join(f"- {_stated(line.text)} ({line.source})" for line in found)


def _stated(text: str) -> str:
    """A line as it is said in a reply: on one line, shortened, without its closing full stop."""
    return shorten(" ".join(text.split()), QUOTE_CHARS).rstrip(" .。")


# --- reply: tools --------------------------------------------------------------


def _answer_tool_results(messages: Sequence[BaseMessage]) -> str:
    """The final answer once tool results came back: each tool and the first lines of what it returned."""
    opener = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    names = {call["id"]: call["name"] for call in messages[opener].tool_calls} if opener >= 0 else {}
    reports = []
    for message in messages[opener + 1 :]:
        if not isinstance(message, ToolMessage):
            continue
        first = [line.strip() for line in message_text(message).splitlines() if line.strip()][:TOOL_RESULT_LINES]
        outcome = "failed" if message.status == "error" else "returned"
        name = names.get(message.tool_call_id, "a tool")
        reports.append(f"- {name} {outcome}: {_quote(' / '.join(first) or '(nothing)')}")
    return "Here's what came back:\n\n" + "\n".join(reports)


# Only an unmistakable request to write a document gets a write_document call.
_DOCUMENT_REQUEST = re.compile(
    r"\b(?:write|draft|create|make|start)\b.*?\b(?:doc|document|draft|spec|specification|plan|brief|memo|notes?"
    r"|outline|page|copy)\b.*?\b(?:called|titled|named)\s+(?P<title>.+)$"
    r"|\bsave\b.+?\bas\s+(?P<saved>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_QUOTES = "\"'“”‘’「」『』"


def _asked_for(request: CompletionRequest, tool: str, pattern: re.Pattern, *params: str) -> re.Match | None:
    """The instruction's match of `pattern`, when `tool` is offered (taking `params`) and not yet called."""
    spec = next((spec for spec in request.tools if spec.name == tool), None)
    if spec is None or not _takes(spec, *params):
        return None
    if not request.messages or not isinstance(request.messages[-1], HumanMessage):
        return None  # the current task already made its calls
    return pattern.search(request.instruction.strip())


def _call_id(request: CompletionRequest) -> str:
    # Deterministic, and different for each task of a conversation (providers require unique ids).
    return "offline_" + hashlib.sha1(f"{len(request.messages)}:{request.instruction}".encode()).hexdigest()[:12]


def _document_call(request: CompletionRequest) -> tuple[str, tuple[ToolCall, ...]] | None:
    match = _asked_for(request, "write_document", _DOCUMENT_REQUEST, "title", "content")
    instruction = request.instruction.strip()
    if match is None:
        return None
    title = (match["title"] or match["saved"] or "").strip().rstrip(".!。！").strip().strip(_QUOTES).strip()
    if not title or len(title) > 120 or "\n" in title:
        return None
    content = (
        f"# {title}\n\nStarted in offline mode (no AI model was connected), from this instruction:\n\n"
        f"> {instruction}\n\nTo do: write this document."
    )
    call = ToolCall(id=_call_id(request), name="write_document", args={"title": title, "content": content})
    return f"I'm saving a stub document called “{title}” with your instruction in it.", (call,)


# Only an unmistakable "hand this to Theo: …" (or 「交給 Theo：…」) gets a handoff call.
_HANDOFF_REQUEST = re.compile(
    r"^(?:please\s+)?(?:hand|pass|give)\s+(?:this|it)(?:\s+over)?\s+to\s+@?(?P<who>[^\W\d_][\w-]*)\s*[:,—-]?\s*(?P<brief>.*)$"
    r"|^(?:請)?(?:把這個|這個)?交給\s*@?(?P<zh_who>[\w-]+)\s*[:：，,]?\s*(?P<zh_brief>.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _handoff_call(request: CompletionRequest) -> tuple[str, tuple[ToolCall, ...]] | None:
    match = _asked_for(request, "handoff", _HANDOFF_REQUEST, "coworker", "brief")
    if match is None:
        return None
    who = match["who"] or match["zh_who"]
    brief = (match["brief"] or match["zh_brief"] or "").strip() or request.instruction.strip()
    call = ToolCall(id=_call_id(request), name="handoff", args={"coworker": who, "brief": brief})
    return f"I'm handing this to {who}, as you asked.", (call,)


def _takes(spec: ToolSpec, *names: str) -> bool:
    properties = spec.parameters.get("properties", {})
    return isinstance(properties, Mapping) and all(name in properties for name in names)


# --- fold, extract, route --------------------------------------------------------


def _fold(payload: Mapping[str, Any]) -> str:
    # Replies given offline are left out: folded in, they would come back as "the summary" in the next
    # offline reply, which would then quote an earlier one.
    offline = set(payload.get("answered_offline", ()))
    tasks = [_without_replies(task) if task.turn in offline else task for task in payload["tasks"]]
    return summarize_extractively(
        payload.get("previous", ""),
        tasks,
        max_chars=payload["max_chars"],
        multi_speaker=payload.get("multi_speaker", False),
    )


def _without_replies(task: TaskRecords) -> TaskRecords:
    return TaskRecords(turn=task.turn, records=tuple(r for r in task.records if r.role != "assistant"))


def _extract(payload: Mapping[str, Any]) -> str:
    # A task no model answered holds this responder's own replies: only what people said there is a fact.
    task = payload["task"]
    candidates = extract_candidates(_without_replies(task) if payload.get("answered_offline") else task)
    return json.dumps([{"text": c.text, "kind": c.kind} for c in candidates], ensure_ascii=False)


def _route(payload: Mapping[str, Any]) -> str:
    """Who answers: a coworker named in the instruction, else the best match of role and skills.

    In all_hands, every coworker scoring close to the best (none when nothing
    matches: most stay quiet); elsewhere exactly one (the first listed when
    nothing matches, so someone answers).
    """
    instruction = payload.get("instruction", "")
    coworkers = list(payload.get("coworkers", ()))
    everyone = payload.get("channel_kind") == "all_hands"
    if not coworkers:
        return "[]"
    named = [
        c["slug"] for c in coworkers
        if c.get("name") and re.search(rf"(?<!\w){re.escape(c['name'])}(?!\w)", instruction, re.I)
    ]
    if named:
        return json.dumps(named if everyone else named[:1])
    wanted = _topic_tokens(instruction)
    profiles = [(c["slug"], " ".join([c.get("role", ""), *map(str, c.get("skills", ()))])) for c in coworkers]
    matching = [(slug, text) for slug, text in profiles if _topic_tokens(text) & wanted]
    ranked = Index(matching).top(instruction, len(matching)) if matching else []
    if not ranked:
        return json.dumps([] if everyone else [coworkers[0]["slug"]])
    if not everyone:
        return json.dumps([ranked[0][0]])
    best = ranked[0][1]
    return json.dumps([slug for slug, score in ranked if score >= best * RELATIVE_CUTOFF])
