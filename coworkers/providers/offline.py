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
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from office import markdown
from sessions.context import MEMORY_HEADER, RECALL_HEADER, SUMMARY_END, SUMMARY_FRAME, SUMMARY_HEADER
from sessions.extract import asked_to_forget, extract_candidates, forget_requests, forgets, remember_request, states_fact
from sessions.history import Record, TaskRecords, ToolCall
from sessions.relevance import Index, shorten, similarity, split_sentences, stem, strip_chatter, tokens
from sessions.summarize import MONTHS, PAST, QUESTION, QUESTION_CHARS, summarize_extractively

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
NOTHING_YET, NOTHING_YET_ZH = "I don't have anything on that yet.", "這件事我這裡還沒有資料。"
ASKED_BEFORE = "I can't read what was answered without a model, but you asked about this before:"
ASKED_BEFORE_ZH = "沒有模型我讀不出當時的回答，不過你之前問過這件事："
NOTHING_TO_ADD = "Nothing to add from me."
# News the person states: kept in memory after the task, or not.
NOTED, NOTED_ZH = "Thanks, noted.", "收到，記下了。"
THANKS, THANKS_ZH = "Thanks for letting me know.", "收到，謝謝告知。"
FOUND, FOUND_ZH = "Here's what I have on that:", "我這裡有的是："
# Writing, drafting, coding or translating needs a model; pretending to have nothing on it would mislead.
NEEDS_A_MODEL = "Writing that needs an AI model, and none is connected yet (the note at the top of the page says how to connect one)."
NEEDS_A_MODEL_ZH = "這需要 AI 模型才能寫，目前還沒有連接模型（頁面上方的說明寫了怎麼連接）。"
FROM_AGENDA = "On the agenda:"
FROM_AGENDA_ZH = "議程上寫著："
NOTHING_TO_REMEMBER = "I couldn't find a fact to remember in that; say it as one, like “Remember that the launch is on May 4.”"
NOTHING_TO_REMEMBER_ZH = "我看不出要記住什麼；請寫成一句事實，例如「請記住上線日期是5月4日」。"

QUOTE_LIMIT = 3
QUOTE_LIMIT_ALL_HANDS = 1  # in #all-hands every answer is brief
QUOTE_CHARS = 300
CODE_CHARS = 1_500  # a pasted file comes back as its opening lines, not whole
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
    source: str  # "from memory", "from the summary", "you said this on Dec 1", ...
    tag: str = ""  # searched but not quoted: a memory item's kind ("decision")
    code: str = ""  # a fenced code block a person wrote, quoted whole under the line
    # "" for what was said; "asked" for a request ("Draft three taglines…"), never an answer, only
    # what was asked; "forget" for what a person asked to forget (the text to forget).
    kind: str = ""

    @property
    def searchable(self) -> str:
        concepts = [word for word, _, value in CONCEPTS if value.search(self.text)]
        return " ".join([self.tag, self.text, *concepts, _code_words(self.code)]).strip()


class OfflineResponder:
    """Answers every purpose without a model.

    reply: the 1-3 lines of its prompt (memory, the summary, and what people said
    earlier, in the window or recalled, code blocks whole) most relevant to the
    instruction, each saying where it came from in words people see, in the
    coworker's voice; "I don't have anything on that yet" when nothing matches.
    Never a coworker's reply. A request to remember or forget is acknowledged
    ("Noted: …"); one to write, draft, translate or code says that needs a model,
    then adds the relevant lines; in a meeting a turn lists the agenda's points. With a write_document
    tool offered and an unmistakable "write a doc called X", it saves a stub; with a
    handoff tool and a plain "hand this to Theo: …" or "pass the pricing page to Theo"
    starting the instruction, it hands the work over;
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
            text = _acknowledge(request) or _reply(request)

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

# A recalled block's header ("## Task 12, Mon 4 May 2026", "## Tasks 4–5, …", "## Task 3 of an
# earlier conversation, …") and its people's lines.
_EXCHANGE = re.compile(
    r"^##\s+Tasks?\s+(?P<turn>\d+)(?:–\d+)?(?:\s+of\s+(?P<where>this conversation|an earlier conversation))?(?:,\s*(?P<when>.+))?$"
)
_SAID_BY_USER = re.compile(r"^User(?:\s+\(the task after\))?:\s*(?P<text>.*)$")
# Any speaker's line there ("User:", "Mina:", "Mina (the task before):"): a message's later lines
# (a pasted code block, a list) are the lines up to the next one.
_TOP_HEADERS = (MEMORY_HEADER, SUMMARY_HEADER, RECALL_HEADER)
_SPEAKER = re.compile(r"^[A-Z0-9][\w-]*(?:\s+\(the task (?:before|after)\))?:(?:\s|$)")
_FENCE = re.compile(r"^\s*```")
# "Draft…", "Remind me…", "Please…", "Can you…", 「請…」「幫我…」: a request, which answers nothing
# when quoted back. (summarize.PAST holds the verbs of work: draft, write, plan…)
_REMEMBER_TO = re.compile(r"^(?:please\s+)?remember\s+to\b", re.I)
_REQUEST_START = re.compile(
    r"^(?:please|can|could|would|will|let'?s|lets|pls|remind|tell|show|give|explain|list|help|find|check|look"
    r"|get|try|take)\b"
    r"|^(?:請|幫我|麻煩|可以幫|能不能|提醒|告訴)",
    re.I,
)


# Sources in words people see: the page never shows task numbers.
FROM_MEMORY = "from memory"
FROM_SUMMARY = "from the summary"
FROM_PREVIOUS = "from our previous conversation"
SAID_EARLIER = "you said this earlier"
SAID_BEFORE = "you said this in an earlier conversation"


# The payload's ISO day ("2026-12-01") and a recall header's ("Tue 1 Dec 2026", sessions.prompts).
DAY_LAYOUTS = ("%Y-%m-%d", "%a %d %b %Y")


_SOURCES_ZH = {
    FROM_MEMORY: "來自記憶",
    FROM_SUMMARY: "來自摘要",
    FROM_PREVIOUS: "來自我們上一次的對話",
    SAID_EARLIER: "你之前說的",
    SAID_BEFORE: "你在之前的對話說的",
}
_SAID_ON = re.compile(r"^(.+?) said this on ([A-Z][a-z]{2}) (\d{1,2})$")
_SAID_BY = re.compile(r"^(.+?) said this (earlier|in an earlier conversation)$")
_FROM_MEETING = re.compile(r"^from the meeting “(.+)”$")
# An instruction no person typed starts by saying who sent it (coworkers.tools' handoff,
# sessions.meetings' follow-up): quoted back, it is theirs, not "you said this".
_HANDED_ON = re.compile(r"^(?:Handoff from (?P<by>[^:\n]{1,60}): |Follow-up from the meeting “(?P<meeting>[^”\n]{1,100})”: )")


def _source_in_chinese(source: str) -> str:
    """A line's source for a reply in Chinese: "you said this on Dec 1" is "你在12月1日說的"."""
    if source in _SOURCES_ZH:
        return _SOURCES_ZH[source]
    if said := _SAID_ON.match(source):
        who = "你" if said.group(1) == "you" else said.group(1)
        return f"{who}在{datetime.strptime(said.group(2), '%b').month}月{said.group(3)}日說的"
    if said := _SAID_BY.match(source):
        return f"{said.group(1)}{'之前說的' if said.group(2) == 'earlier' else '在之前的對話說的'}"
    if meeting := _FROM_MEETING.match(source):
        return f"來自會議「{meeting.group(1)}」"
    return source


def _handed_on(text: str, source: str) -> tuple[str, str]:
    """The words of an instruction a coworker or a meeting sent, and their source ("Mina said this
    on Dec 3", "from the meeting “Launch”"); the text and source unchanged for a person's own."""
    match = _HANDED_ON.match(text)
    if match is None:
        return text, source
    if match["meeting"]:
        return text[match.end():], f"from the meeting “{match['meeting']}”"
    said_by = f"{match['by']} said" + source.removeprefix("you said") if source.startswith("you said") else source
    return text[match.end():], said_by


def _said_on(day: str) -> str:
    """ "you said this on Dec 1"; plain "earlier" when the day cannot be read."""
    for layout in DAY_LAYOUTS:
        try:
            when = datetime.strptime(day.strip(), layout)
        except ValueError:
            continue
        return f"you said this on {when:%b} {when.day}"
    return SAID_EARLIER


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
    person: list[str] | None = None  # there, the lines of the person's message being read
    fenced = False  # inside a code block of that message
    for raw in text.splitlines():
        line = raw.strip()
        if person is not None:
            # Inside a code block the person wrote, "Content-Type: text/html" is code, not a speaker.
            if not fenced and (_SPEAKER.match(line) or _EXCHANGE.match(line) or line.startswith(_TOP_HEADERS)):
                yield from _said_lines("\n".join(person).strip(), exchange, requests=True)
                person = None
            else:
                person.append(raw)  # as written: a code block keeps its indentation
                fenced ^= bool(_FENCE.match(raw))
                continue
        if not line:
            continue
        if line.startswith("# ") and (section != "recall" or line.startswith(_TOP_HEADERS)):
            # (In the recall block a "# " line is someone's code or heading, not a new block.)
            section = (
                "memory" if line.startswith(MEMORY_HEADER)
                else "summary" if line.startswith(SUMMARY_HEADER)
                else "recall" if line.startswith(RECALL_HEADER)
                else None
            )
            part, exchange = "summary", ""
            continue
        if section == "recall" and (match := _EXCHANGE.match(line)):
            earlier = (match["where"] or "").startswith("an earlier")
            exchange = _said_on(match["when"]) if match["when"] else SAID_BEFORE if earlier else SAID_EARLIER
            continue
        if section == "recall" and exchange and not _MEMORY_LINE.match(line):
            if user := _SAID_BY_USER.match(line):
                person, fenced = [user["text"]], bool(_FENCE.match(user["text"]))
            # Anything else there is a coworker's reply, or a line of another layout: not a source.
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
            yield _Line(match["text"], FROM_MEMORY, match["kind"])
        elif section == "memory":
            continue  # the block's description line
        elif match := _TASK_LINE.match(line):
            if section == "summary" and part == "summary":  # a topic bullet
                yield _Line(match["text"], FROM_SUMMARY)
            else:  # a digest, "instruction → answer": only the instruction is someone's words
                said = match["text"].split(" → ", 1)[0]
                yield from _said_lines(said, SAID_EARLIER)
        elif match := _SUMMARY_REF.match(line):
            yield _Line(match["text"], FROM_SUMMARY)
        elif part == "carried":
            yield _Line(_BULLET.sub("", line), FROM_PREVIOUS)
        elif section == "summary" and part == "summary":
            yield _Line(_BULLET.sub("", line), FROM_SUMMARY)
    if person is not None:
        yield from _said_lines("\n".join(person).strip(), exchange, requests=True)


def _said_lines(text: str, source: str, *, requests: bool = False) -> Iterator[_Line]:
    """The sentences of what a person said that state something (not questions, not requests), and
    the code blocks they wrote, each under the sentence that led into it; with `requests` (a
    recalled exchange, which the person no longer sees above), its requests too, marked `asked`."""
    text, source = _handed_on(text, source)
    leads, code_lines = set(), set()
    for before, language, code in _code_blocks(text):
        code_lines.update(split_sentences(code))
        lead = (split_sentences(before) or [""])[-1].strip()
        if lead.endswith(("?", "？")) or _REQUEST_START.match(lead) or not lead:
            lead = "Your code"  # a question or request is never quoted, not even in front of code
        leads.add(lead)
        yield _Line(lead.rstrip(" :："), source, code=f"```{language}\n{_clip_code(code)}\n```")
    for sentence in split_sentences(text):
        sentence = sentence.strip()
        if sentence in leads or sentence in code_lines:
            continue  # said with its code already, or code itself
        if forgotten := asked_to_forget(sentence):
            yield _Line(forgotten, source, kind="forget")  # "Forget that the beta goes live on Friday"
            continue
        if (told := remember_request(sentence)) and not _REMEMBER_TO.match(sentence):
            sentence = told[:1].upper() + told[1:]  # "Remember that X" told X ("remember to X" asks)
        if asks_for_work(sentence) or _REQUEST_START.match(sentence):
            if requests:
                yield _Line(sentence, source, kind="asked")
        elif states_fact(sentence):
            yield _Line(sentence, source)


def asks_for_work(sentence: str) -> bool:
    """Does it open with a verb of work ("Draft…", "Summarise…", "Analyse…"): a request, not news?
    British spellings count as the American ones summarize.PAST lists."""
    first = (sentence.split(maxsplit=1) or [""])[0].lower().strip(",:;.!")
    return first in PAST or (first.endswith(("ise", "yse")) and first[:-2] + "ze" in PAST)


def _is_context_block(message: BaseMessage) -> bool:
    # The builder sends recalled tasks and fresh memory as a human message that opens with this header.
    return isinstance(message, HumanMessage) and message_text(message).lstrip().startswith(RECALL_HEADER)


# A fence opens at the first of its backticks only: "```" × 5,000 was otherwise tried from each.
_CODE_BLOCK = re.compile(r"(?<!`)```[ \t]*(?P<language>[\w+#.-]*)[^\n`]*\n(?P<code>.*?)\n?```", re.S)
# Code pasted without a fence: lines that open a definition or a block, or continue one indented.
_CODE_OPENS = re.compile(
    r"^\s*(?:def|class|function|async def|import|from \S+ import|fn|func|public|private|#include)\b"
    r"|^\s*(?:const|let|var)\s+\w+\s*="
    r"|\)\s*(?:->\s*[\w\[\], .]+)?[:{]\s*$|\{\s*$"  # "def add(a, b):", "add(a, b) {"; not "My function:"
)
_CODE_GOES_ON = re.compile(r"^(?:\s{2,}|\t)\S|^\s*[}\])]|;\s*$")


def _code_blocks(text: str) -> Iterator[tuple[str, str, str]]:
    """Each code block a person wrote, with its language and the text before it (up to the previous
    block): fenced ones, and unfenced runs of at least two lines that read as code (pasted as is)."""
    start = 0
    for match in _CODE_BLOCK.finditer(text):
        yield from _unfenced_blocks(text[start : match.start()])
        if match["code"].strip():
            yield text[start : match.start()], match["language"], match["code"].rstrip()
        start = match.end()
    yield from _unfenced_blocks(text[start:])


def _unfenced_blocks(text: str) -> Iterator[tuple[str, str, str]]:
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        end = index + 1
        if _CODE_OPENS.search(lines[index]):
            while end < len(lines) and (_CODE_GOES_ON.search(lines[end]) or _CODE_OPENS.search(lines[end])):
                end += 1
        if end - index >= 2:
            yield "\n".join(lines[:index]), "", "\n".join(lines[index:end]).rstrip()
        index = end


def _clip_code(code: str) -> str:
    if len(code) <= CODE_CHARS:
        return code
    return code[:CODE_CHARS].rsplit("\n", 1)[0] + "\n…"


def _code_words(code: str) -> str:
    # Identifiers split on case and underscores, so "add_numbers" or "addNumbers" is found by "add".
    return " ".join(re.sub(r"([a-z])([A-Z])", r"\1 \2", code).replace("_", " ").split())


def _message_lines(messages: Sequence[BaseMessage], dates: Sequence[Any] | None) -> list[_Line]:
    """Lines of the earlier tasks: what people said in them (never a reply, nor tool output), and the
    context blocks (recall, fresh memory) shown in front of them. `dates`: each task's day, when known."""
    lines: list[_Line] = []
    instructions: list[str] = []
    for message in messages:
        if _is_context_block(message):
            lines.extend(_context_lines(message_text(message)))
        elif isinstance(message, HumanMessage):
            instructions.append(message_text(message))
    if dates is not None and len(dates) != len(instructions):
        dates = None  # a list that does not fit would give the wrong days; better to give none
    for index, said in enumerate(instructions):
        day = dates[index] if dates is not None else None
        lines.extend(_said_lines(said, _said_on(day) if isinstance(day, str) else SAID_EARLIER))
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
    current = _current(request.messages)
    said_here = _said_here(request)
    chinese = bool(_CJK.search(instruction))
    if _meeting_turn(request):
        return _speak_to_agenda(instruction, said_here, chinese)
    # News the person states ("We need 4 booth staff.") is acknowledged, not answered with whatever
    # shares a word or a number with it ("The launch date is May 4").
    if not _asks_to_produce(instruction) and (acknowledged := _noted(instruction, said_here, chinese)) is not None:
        return acknowledged
    dates = request.payload.get("said_on")
    lines = [line for block in request.system for line in _context_lines(block)]
    lines += _message_lines(request.messages[:current], dates if isinstance(dates, Sequence) else None)
    # What a person asked to forget is not quoted, from the sentence that said it or from any other.
    forgotten = [line.text for line in lines if line.kind == "forget"]
    lines = [line for line in lines if not any(forgets(text, line.text) for text in forgotten)]
    lines, requests = [line for line in lines if not line.kind], [line for line in lines if line.kind == "asked"]
    fresh = [line for line in lines if _stated(line.text) not in said_here]
    brief = request.payload.get("channel_kind") == "all_hands"
    producing = _asks_to_produce(instruction)
    # Of a request to produce something, only what it is about is searched: "Draft a short tagline
    # for the launch" is about the launch, not about drafts or being short.
    topic = _PRODUCE.sub(" ", _SHAPE.sub(" ", instruction)) if producing else instruction
    found = _relevant_lines(topic, fresh, QUOTE_LIMIT_ALL_HANDS if brief else QUOTE_LIMIT)
    if producing:
        # Honest first: it cannot write; then what it has that may help, if anything.
        needs = NEEDS_A_MODEL_ZH if chinese else NEEDS_A_MODEL
        parts = [needs] if needs not in said_here else []  # a colleague said it already
        parts += [FOUND_ZH if chinese else FOUND, _bullets(found, chinese=chinese)] if found else []
        return "\n\n".join(parts) or NOTHING_TO_ADD
    if not found:
        if len(fresh) < len(lines) and _relevant_lines(instruction, lines):
            return NOTHING_TO_ADD
        if noted := _noted(instruction, said_here, chinese):
            return noted
        # Nothing stated, but it was asked for before ("what was the tagline you drafted?"): what its
        # answer was needs a model to read, and the person can at least see when they asked.
        if asked := _relevant_lines(instruction, requests, 1):
            return (ASKED_BEFORE_ZH if chinese else ASKED_BEFORE) + "\n\n" + _bullets(asked, chinese=chinese)
        return NOTHING_YET_ZH if chinese else NOTHING_YET
    return (FOUND_ZH if chinese else FOUND) + "\n\n" + _bullets(found, chinese=chinese)


# Asked without a question mark ("where is the staging server"), or asked for ("Send Sam the
# plan", "I need the numbers by Monday"): neither is news to acknowledge.
_ASKS = re.compile(
    r"^(?:what|how|where|who|whom|whose|which|when|why|is|are|was|were|am|do|does|did|can|could|would|will"
    r"|should|shall|may|might|has|have|had|any|send|book|call|schedule|email|ask|prepare|update|fix|add|remove"
    r"|move|share|buy|order|cancel|review|make|put|run|start|stop|set up|follow up)\b"
    r"|^(?:i|we)\s+(?:need|want|would like|'d like)\b"
    rf"|[{''.join(QUESTION_CHARS)}嗎呢]",
    re.I,
)


def _noted(instruction: str, said_here: str, chinese: bool) -> str | None:
    """An acknowledgement of news the person states ("The beta goes live on Friday."): "Thanks,
    noted." when the memory extractor will keep it after the task, else a plain thanks. None for a
    question or a request, which the acknowledgement would not answer."""
    sentences = [sentence.strip() for sentence in split_sentences(instruction) if sentence.strip()]
    if not sentences or any(
        QUESTION.search(s) or _REQUEST_START.match(s) or _ASKS.search(s) or asks_for_work(s) for s in sentences
    ):
        return None
    if not any(states_fact(strip_chatter(s)) for s in sentences):
        return None  # "ok thanks", "hello there": nothing was stated
    kept = bool(extract_candidates(_as_task(instruction)))
    text = (NOTED_ZH if kept else THANKS_ZH) if chinese else (NOTED if kept else THANKS)
    return NOTHING_TO_ADD if text in said_here else text


def _current(messages: Sequence[BaseMessage]) -> int:
    """Where the current task's instruction is: the last message a person wrote (not a context block)."""
    return max(
        (i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not _is_context_block(m)),
        default=len(messages),
    )


def _said_here(request: CompletionRequest) -> str:
    """What colleagues who answered this task before (several answer in shared channels) said already."""
    return " ".join(message_text(m) for m in request.messages[_current(request.messages) + 1 :] if isinstance(m, AIMessage))


def _bullets(lines: Sequence[_Line], *, chinese: bool = False) -> str:
    # A code block a person wrote stays a code block, after the bullet saying where it came from.
    def source(line: _Line) -> str:
        return f"（{_source_in_chinese(line.source)}）" if chinese else f" ({line.source})"

    return "\n".join(
        f"- {_stated(line.text)}{source(line)}" + (f":\n\n{line.code}\n" if line.code else "") for line in lines
    ).rstrip()


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Asked to produce something (write, draft, code, translate…), which needs a model; not a question
# about what was said ("what did we write?"), nor "show me that function again".
_PRODUCE = re.compile(
    r"^\s*(?:(?:please|pls|can you|could you|would you|will you|can u|now|ok(?:ay)?|also)[\s,]+)*"
    r"(?:(?:write|draft|compose|translate|rewrite|rephrase|reword|generate|code|implement|create|design|brainstorm"
    r"|propose|come up with|sketch|outline|proofread|polish|edit|refactor)\b"
    r"(?!\s+(?:is|are|was|were|has|have|had|will|review|reviews|went)\b|\s*[:：])"  # "Code review is Friday" states
    r"|make (?:a|an|me|us)\b|suggest (?:a|an|some|\d+)\b|(?:show|give|send|get) (?:me|us) (?:a|an|some|\d+)\b)"
    r"|^(?:請|麻煩你?)?(?:幫我|幫忙|替我|你可以|可以)?(?:寫|草擬|起草|擬|翻譯|翻成|改寫|潤飾|潤稿|設計|生成|產生|想一?個|想幾個|做一?個)",
    re.I,
)


# How the asked-for thing should be, which says nothing about what it is about.
_SHAPE = re.compile(r"\b(?:short|shorter|brief|long|longer|quick|simple|little|nice|good|catchy|few)\b", re.I)


def _meeting_turn(request: CompletionRequest) -> bool:
    """A turn of a meeting, which speaks to its agenda; a person's question in the meeting's channel
    after it ended is answered like one anywhere else."""
    return request.payload.get("channel_kind") == "meeting" and request.payload.get("meeting_turn", True)


def _asks_to_produce(instruction: str) -> bool:
    return any(_PRODUCE.match(strip_chatter(sentence)) for sentence in split_sentences(instruction))


def _speak_to_agenda(instruction: str, said_here: str, chinese: bool) -> str:
    """A meeting turn speaks to what the person wrote on the agenda: memory may be older than the agenda
    ("the launch is May 4" against "we moved the launch to May 11"), so it is not quoted against it."""
    agenda = instruction.split("\n", 1)[1] if instruction.startswith("Agenda of the meeting") else instruction
    items = [
        _stated(_BULLET.sub("", sentence)) for sentence in split_sentences(agenda)
        if not sentence.rstrip().endswith(("?", "？"))
    ]
    fresh = [item for item in dict.fromkeys(items) if item and item not in said_here][:QUOTE_LIMIT]
    if not fresh:
        return NOTHING_TO_ADD
    return (FROM_AGENDA_ZH if chinese else FROM_AGENDA) + "\n\n" + "\n".join(f"- {item}" for item in fresh)


# --- reply: remember and forget ------------------------------------------------


def _acknowledge(request: CompletionRequest) -> str | None:
    """ "Noted: the launch date is May 4." for a request to remember (the memory extractor stores it
    after the task), "Okay, I'll forget the launch date." for one to forget; None for anything else.
    Asked plainly only, and only what the extractor will act on, so it never promises what won't happen."""
    if _meeting_turn(request):
        return None  # a meeting's turns speak to its agenda; its decisions are remembered with the notes
    instruction = request.instruction
    records = _as_task(instruction)
    chinese = bool(_CJK.search(instruction))
    # "Remember when we launched?" is a question; "forget it" names nothing to forget.
    sentences = [sentence for sentence in split_sentences(instruction) if not sentence.rstrip().endswith(("?", "？"))]
    asked = [body for sentence in sentences if (body := remember_request(sentence))]
    forgotten = [text for text in forget_requests(records) if _topic_tokens(text) and not text.endswith(("?", "？"))]
    if not asked and not forgotten:
        return None
    stored = extract_candidates(records)
    noted = asked if stored else []
    lines = [(f"記下了：{body}。" if chinese else f"Noted: {_as_said_to_you(body)}.") for body in noted]
    lines += [(f"好的，我會忘記{text}。" if chinese else f"Okay, I'll forget {_as_said_to_you(text)}.") for text in forgotten]
    text = "\n".join(line.replace("。。", "。").replace("..", ".") for line in lines)
    if not lines:
        text = NOTHING_TO_REMEMBER_ZH if chinese else NOTHING_TO_REMEMBER
    # In a shared channel a colleague may have acknowledged it already: once is enough.
    return NOTHING_TO_ADD if text in _said_here(request) else text


def _as_task(instruction: str) -> TaskRecords:
    """The instruction alone as a task, as the memory extractor will read it after the task."""
    return TaskRecords(turn=1, records=(Record(id="u", previous=None, turn=1, role="user", content=instruction),))


_PRONOUNS = {"i": "you", "me": "you", "my": "your", "mine": "yours", "i'm": "you're", "am": "are", "myself": "yourself"}


def _as_said_to_you(text: str) -> str:
    """The user's words said back to them: "I prefer short answers" -> "you prefer short answers"."""
    text = re.sub(r"\b(?:i'm|i|me|my|mine|myself)\b|(?<=\bi )am\b", lambda m: _PRONOUNS[m[0].lower()], text, flags=re.I)
    return text.rstrip(" .。!！")


def _stated(text: str) -> str:
    """A line as it is said in a reply: on one line, shortened, without its closing full stop."""
    return shorten(" ".join(text.split()), QUOTE_CHARS).rstrip(" .。")


# --- reply: tools --------------------------------------------------------------


def _answer_tool_results(messages: Sequence[BaseMessage]) -> str:
    """The final answer once tool results came back: the first lines of what each returned (a failure
    names its tool)."""
    opener = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    names = {call["id"]: call["name"] for call in messages[opener].tool_calls} if opener >= 0 else {}
    reports = []
    for message in messages[opener + 1 :]:
        if not isinstance(message, ToolMessage):
            continue
        first = " / ".join([line.strip() for line in message_text(message).splitlines() if line.strip()][:TOOL_RESULT_LINES])
        if message.status == "error":
            reports.append(f"- {names.get(message.tool_call_id, 'a tool')} failed: {_quote(first or '(nothing)')}")
        else:  # a tool's result says what was done in words of its own ("Saved …", "Handed off to …")
            reports.append(f"- {shorten(first, QUOTE_CHARS) or 'Done, with nothing to report.'}")
    return "Here's what came back:\n\n" + "\n".join(reports)


# Only an unmistakable request to write a document gets a write_document call: a verb of writing,
# then a kind of document, then "called …" ("draft a memo called Q3 plan"), or "save … as …".
# Searched one after the other, each from where the last one ended: as one pattern of lazy gaps
# ("write .*? doc .*? called") a message of "write write … doc doc …" took minutes, and the
# interpreter lock with it (one instruction froze the whole server).
_WRITE_VERB = re.compile(r"\b(?:write|draft|create|make|start)\b", re.I)
_DOCUMENT_KIND = re.compile(r"\b(?:doc|document|draft|spec|specification|plan|brief|memo|notes?|outline|page|copy)\b", re.I)
_TITLED = re.compile(r"\b(?:called|titled|named)\s+", re.I)
_SAVE = re.compile(r"\bsave\b", re.I)
_SAVED_AS = re.compile(r"\bas\s+", re.I)


def _document_title(text: str) -> str:
    """What a request to write a document calls it, or "" (the first of each word is enough: any
    later one has all the text the first has after it)."""
    if (verb := _WRITE_VERB.search(text)) and (kind := _DOCUMENT_KIND.search(text, verb.end())):
        if titled := _TITLED.search(text, kind.end()):
            return text[titled.end() :]
    if (save := _SAVE.search(text)) and (saved := _SAVED_AS.search(text, save.end() + 1)):
        return text[saved.end() :]
    return ""
_QUOTES = "\"'“”‘’「」『』"


def _asked_for(request: CompletionRequest, tool: str, *params: str) -> str | None:
    """The instruction, when `tool` is offered (taking `params`) and not yet called."""
    spec = next((spec for spec in request.tools if spec.name == tool), None)
    if spec is None or not _takes(spec, *params):
        return None
    if not request.messages or not isinstance(request.messages[-1], HumanMessage):
        return None  # the current task already made its calls
    return request.instruction.strip()


def _call_id(request: CompletionRequest) -> str:
    # Deterministic, and different for each task of a conversation (providers require unique ids).
    return "offline_" + hashlib.sha1(f"{len(request.messages)}:{request.instruction}".encode()).hexdigest()[:12]


def _document_call(request: CompletionRequest) -> tuple[str, tuple[ToolCall, ...]] | None:
    instruction = _asked_for(request, "write_document", "title", "content")
    if instruction is None:
        return None
    title = _document_title(instruction).strip().rstrip(".!。！").strip().strip(_QUOTES).strip()
    if not title or len(title) > 120 or "\n" in title:
        return None
    content = (
        f"# {title}\n\nStarted in offline mode (no AI model was connected), from this instruction:\n\n"
        f"> {instruction}\n\nTo do: write this document."
    )
    call = ToolCall(id=_call_id(request), name="write_document", args={"title": title, "content": content})
    return f"I'm saving a stub document called “{title}” with your instruction in it.", (call,)


# Only a plain request that starts the instruction gets a handoff call: "hand this to Theo: …",
# "please pass the pricing page to Theo", "@Mina hand it over to Theo", "hand off the build to
# Theo." (or 「交給 Theo：…」). What is
# handed on is at most 200 characters, and it goes to a name, not to "me" or "them".
_HANDOFF_REQUEST = re.compile(
    r"^(?:@[\w-]+[\s,]+)?(?:please\s+)?(?:hand|pass|give)(?:\s+(?:over|off|on))?\s+(?P<what>[^\n]{1,200}?)(?:\s+(?:over|off|on))?"
    r"\s+to\s+@?(?!(?:me|us|them|him|her|you)\b)(?P<who>[^\W\d_][\w-]*)\s*[:,—-]?\s*(?P<brief>.*)$"
    r"|^(?:請)?(?:把這個|這個)?交給\s*@?(?P<zh_who>[\w-]+)\s*[:：，,]?\s*(?P<zh_brief>.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _handoff_call(request: CompletionRequest) -> tuple[str, tuple[ToolCall, ...]] | None:
    instruction = _asked_for(request, "handoff", "coworker", "brief")
    if instruction is None:
        return None
    match, before = _HANDOFF_REQUEST.search(instruction), ""
    if match is None:
        # "The signup form needs email validation. Hand this off to Theo.": the request comes last,
        # and what it hands on ("this", "it") is what came before it ("Give my regards to Theo"
        # hands nothing on).
        *earlier, last = split_sentences(instruction) or [""]
        match = _HANDOFF_REQUEST.search(last.strip()) if earlier else None
        if match is not None and (match["what"] or "").strip().lower() not in ("this", "it"):
            match = None
        before = " ".join(sentence.strip() for sentence in earlier).rstrip(".。!！")
    if match is None:
        return None
    who = match["who"] or match["zh_who"]
    what = (match["what"] or "").strip()
    # What follows the name, without the sentence's own full stop ("…to Theo." says nothing more).
    said = (match["brief"] or match["zh_brief"] or "").strip().rstrip(".!。！").strip()
    # "hand the pricing page to Theo" hands on the pricing page; "hand this to Theo: …" what follows.
    named = what if what.lower() not in ("this", "it") else ""
    brief = ": ".join(part for part in (named, before, said) if part) or request.instruction.strip()
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
    # What the message says, not what it quotes: a handle in code (`@sam`, a log line) names nobody.
    instruction = markdown.prose(payload.get("instruction", ""))
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
