"""Rule-based long-term memory (offline mode): candidate facts from a task, and ADD/UPDATE/DELETE/NOOP decisions.
Pure: imports only the standard library and sessions.history/relevance/summarize (no Django, no ORM, no I/O).

Candidates come only from what the user said and from assistant sentences
that state a decision; tool results and summaries are never a source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessions.history import TaskRecords
from sessions.relevance import similarity, split_sentences, stem, strip_chatter, tokens
from sessions.summarize import (
    DECISION,
    MONTHS,
    NOT_DECIDED,
    OWN_WORK,
    PAST,
    QUESTION,
    content_words,
    specifics,
    without_vocative,
    word_count,
)

KINDS = ("preference", "company", "project", "rule", "decision")
NEAR_IDENTICAL = 0.8  # at or above: the fact is already known
SAME_SUBJECT = 0.8  # share of the shorter subject the other one must hold for a changed value to be an update
REVERSAL = 0.5  # similarity above which an opposite statement replaces the old one
FORGET_MATCH = 0.6  # share of the words of a forget request an item must hold to be deleted
FACT_CHARS = 500  # the longest sentence kept as a fact


@dataclass(frozen=True)
class Candidate:
    text: str
    kind: str


@dataclass(frozen=True)
class Existing:
    id: int
    text: str
    kind: str


@dataclass(frozen=True)
class Decision:
    action: str  # "add" | "update" | "delete" | "noop"
    candidate: Candidate | None
    item_id: int | None
    text: str
    reason: str  # for the audit log: why, in words a person can check


_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind)(?:\s+(?:that|to))?[\s,:]+(.+)$"
    r"|^請?(?:記住|記得|記下來?)[：:，,\s]*(.+)$",
    re.I,
)
_FORGET = re.compile(
    r"^(?:please\s+)?(?:forget|stop remembering|don't remember|remove from memory)(?:\s+(?:that|about))?[\s,:]+(.+)$"
    r"|^請?(?:忘記|忘掉|不用記住?|不要記住?)[：:，,\s]*(.+)$",
    re.I,
)
# The white space around it is taken from the start of its run only (possessive): tried from
# every space of a long run, a search was quadratic.
_NO_LONGER = re.compile(r"(?:(?<!\s)\s++)?(?:\bno longer\b|不再)\s*+", re.I)
_PREFERENCE = re.compile(
    r"^(?:i (?:prefer|like|love|hate|dislike|don't like|do not like|'d rather|would rather)\b"
    r"|(?:please\s+)?(?:always|never|from now on)\b|(?:please\s+)?(?:don't|do not)\b|call me\b|my name is\b"
    r"|我(?:比較)?(?:偏好|喜歡|不喜歡|討厭)|請?(?:不要|別|總是|一律|永遠|以後)|請?叫我)",
    re.I,
)
# "Don't send it yet" is a one-off instruction, not a lasting preference.
_ONE_OFF = re.compile(r"\b(?:it|this|that|these|those|yet|now|today)\b|這|那|它|先|今天", re.I)
_COMPANY = re.compile(
    r"\b(?:our (?:company|business|startup|customers|clients|users|target|mission|product|brand)"
    r"|(?:we are|we're) an?\b|target customers? (?:is|are)|company is"
    r"|is an? (?:[\w-]+ ){0,4}(?:company|startup|agency|business|firm|studio|brand|platform)\b)"
    r"|我們(?:公司|的客戶|的目標客戶|是一家)|公司(?:是|名)|目標客(?:戶|群)",
    re.I,
)
# "We position against Northwind Studio", "We promise a reply within 4 hours": how the company
# works, stated as a plain present-tense fact. Not plans, wishes or maybes ("we should", "we'll").
_WE_POLICY = re.compile(
    r"^(?:we|our team)\s+(?!(?:will|would|should|could|might|may|can|can't|cannot|must|need|needs|want|wanted|"
    r"have|had|has|are|were|was|do|did|don't|didn't|just|also|still|probably|maybe|think|thought|hope|"
    r"saw|got|made|tried|talked|discussed|went)\b)[a-z]+s?\b(?!\s+to\s+be\b)"
    r"|^我們的?(?:一律|固定|只|都|承諾|主打|定位|目標|原則|政策)",
    re.I,
)
_PROJECT = re.compile(
    r"\b(?:launch\w*|deadline|due|budget|pric\w*|costs?|release\w*|ship\w*|milestone|kickoff|demo|go-live|plan"
    r"|go(?:es)? live|beta)\b"
    r"|上線|發佈|發布|截止|預算|價格|定價|里程碑|方案",
    re.I,
)
_STATEMENT = re.compile(
    r"\b(?:is|are|was|will be|costs?|falls on|starts?|ends?|due|moved to|set (?:to|for)|scheduled for|go(?:es)? live)\b|[:：]"
    r"|是|為|在|訂在|定在|改到|截止",
    re.I,
)
_VALUES = (
    ("money", re.compile(
        r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:美元|元|塊|dollars?\b|usd\b|euros?\b)", re.I
    )),
    ("percent", re.compile(r"\d+(?:\.\d+)?\s?%|百分之[\d一二三四五六七八九十百]+")),
    ("date", re.compile(
        rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
        rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\b|\d{{1,2}}\s*月\s*\d{{1,2}}\s*[日號]"
        r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|星期[一二三四五六日天]|週[一二三四五六日]",
        re.I,
    )),
    ("number", re.compile(r"\d[\d,]*(?:\.\d+)?")),
)
# Words that say what happens to a fact, not what it is about.
_GENERIC = frozenset(
    stem(w) for w in "decide decided agree agreed change changed set go use switch move update now new instead "
    "actually remember forget user prefer preference want really".split()
)
# Concepts a value stands for, so "forget the launch date" finds "the launch is on May 4".
_CONCEPTS = {stem("price"): "<price>", stem("date"): "<date>", stem("deadline"): "<date>", "日期": "<date>",
             "價格": "<price>", "定價": "<price>"}
_NEGATION = re.compile(r"\b(?:not|no|never|dislike|hate|stop)\b|n't\b|不|別|沒|停止", re.I)
_CJK_END = re.compile(r"[\u3400-\u9fff\uf900-\ufaff][」』》）]*$")


def _values(text: str) -> tuple[dict[str, list[tuple[str, str]]], str]:
    """Values by kind as (normalized, as written), and the text with them masked out."""
    found: dict[str, list[tuple[str, str]]] = {}
    for kind, pattern in _VALUES:
        for match in pattern.finditer(text):
            raw = match.group()
            norm = re.sub(r"[\s,.]|(?<=\d)(?:st|nd|rd|th)\b|\bof\b", "", raw.lower())
            if kind == "money":
                digits = re.sub(r"[^\d.]", "", raw).strip(".")
                norm = f"{float(digits or 0):g}"  # $29.00 and 29 美元 are one price
            found.setdefault(kind, []).append((norm, raw))
        text = pattern.sub(" ", text)
    return found, text


def _subject(text: str) -> set[str]:
    """What a fact is about: its words without values and generic verbs, plus the concepts of its values."""
    values, rest = _values(text)
    words = {_CONCEPTS.get(t, t) for t in tokens(rest)} - _GENERIC
    words |= {"<price>" for _ in values.get("money", ())} | {"<date>" for _ in values.get("date", ())}
    return words


# After "The user" these read as they are: modals, and past forms that do not end in -ed
# ("I ran into" is "The user ran into", not "rans"). Forms that are also the present ("read",
# "put", "cut", "set") are not here: "I read every night" is "The user reads every night".
_KEEP_VERBS = frozenset(
    """can could will would should might must may shall ought was were did had made chose went got said sent wrote
    arose awoke bore became began bent bit bled blew broke brought built burnt bought caught clung came crept
    dealt dug dove drew dreamt drank drove ate fell fed felt fought found fled flew forgot forgave froze gave grew
    hung heard hid held knelt knew laid led leant leapt learnt left lent lit lost meant met paid rode rang rose ran
    saw sought sold shook shone shot shrank sang sank sat slept slid spoke sped spent spun sprang stood stole
    stuck struck swore swept swam swung took taught tore told thought threw understood woke wore wept won wound
    overcame overheard overtook undertook withdrew mistook misunderstood""".split()
)
# Negations and colloquial forms with a third-person form of their own; other "n't" words
# (can't, didn't, won't, wasn't) read as they are.
_THIRD_PERSON = {"have": "has", "haven't": "hasn't", "don't": "doesn't", "aren't": "isn't",
                 "wanna": "wants to", "gotta": "has to"}
# Adverbs between "I" and its verb: "I really believe" is "The user really believes". A list,
# not every word in -ly: "comply", "rally" and "bully" are verbs.
_ADVERBS = "(?:(?:" + "|".join(
    """also always never still just even often sometimes already once only kinda sorta really finally recently
    actually usually definitely totally truly honestly literally probably certainly absolutely basically generally
    normally occasionally regularly rarely seriously simply mostly nearly barely hardly merely personally
    originally eventually gradually immediately initially previously currently constantly genuinely luckily
    obviously especially particularly completely entirely fully highly deeply strongly fortunately unfortunately
    secretly quietly proudly officially lately newly""".split()
) + r")\s+)*"


def _third_person(verb: str) -> str:
    if verb in _THIRD_PERSON:
        return _THIRD_PERSON[verb]
    if verb in _KEEP_VERBS or verb.endswith(("ed", "n't")):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _user_does(match: re.Match) -> str:
    """ "I (adverbs) verb" as "the user (adverbs) verbs"; the caller capitalizes a sentence's start."""
    return f"the user {match[1]}{_third_person(match[2].lower())}"


_PHRASING: tuple[tuple[str, Any], ...] = (
    (r"^let'?s (?:change|set|move|switch|update|make) (.+?) to (.+)$", lambda m: f"{m[1]} is {m[2]}"),
    (r"^let'?s go with\b", "We decided to go with"),
)
# Only for the user's own words: in an assistant's sentence "I" is the coworker.
_FIRST_PERSON: tuple[tuple[str, Any], ...] = (
    (r"^(?:i am|i'm)\b", "The user is"),
    (r"^i've\b", "The user has"),
    (r"^(?:i'd|i would) rather\b", "The user would rather"),
    (r"^i (?:don't|do not)\b", "The user doesn't"),
    (rf"^i ({_ADVERBS})(\w+n't|\w+)", _user_does),
    (r"^call me\b", "The user wants to be called"),
    (r"^my name is\b", "The user's name is"),
    (r"(?<=\s)I(?:'m| am)\b", "the user is"),
    (r"(?<=\s)I (?:don't|do not)\b", "the user doesn't"),
    (rf"(?<=\s)I ({_ADVERBS})(\w+n't|\w+)", _user_does),
    (r"\bmy\b", "the user's"),
    (r"\bmyself\b", "themselves"),
    (r"\bme\b", "the user"),
    (r"^(?:we are|we're)\b", "The company is"),
    (r"^請?叫我", "使用者希望被稱為"),
    (r"^我們的", ""),
    (r"^我們公司", "公司"),
    (r"^我(?!們)", "使用者"),
)


def _normalize(text: str, kind: str, *, by_user: bool = True) -> str:
    """A short standalone sentence in the original language: "I prefer X" -> "The user prefers X."."""
    text = text.strip().rstrip(" .。!！")
    for pattern, replacement in _PHRASING + (_FIRST_PERSON if by_user else ()):
        text = re.sub(pattern, replacement, text, flags=re.I)
    if kind in ("company", "project"):
        text = re.sub(r"^our\b", "The", text, flags=re.I)
        text = re.sub(r"\bour\b", "the", text, flags=re.I)
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text + ("。" if _CJK_END.search(text) else ".")


def _kind(text: str, *, remembered: bool) -> str | None:
    if _PREFERENCE.match(text) and not (re.match(r"(?:please\s+)?(?:don't|do not)|請?(?:不要|別)", text, re.I)
                                       and _ONE_OFF.search(text)):
        # A remembered imperative ("remember: never cc sales") is a working rule.
        if remembered and re.match(r"(?:please\s+)?(?:always|never|don't|do not|from now on)\b", text, re.I):
            return "rule"
        return "preference"
    if DECISION.search(text) and not NOT_DECIDED.search(text):
        return "decision"
    first_word = text.split(" ", 1)[0].lower()
    imperative = first_word in PAST or first_word in ("please", "can", "could", "would", "let's", "lets")
    if (_COMPANY.search(text) or _WE_POLICY.search(text)) and not imperative:
        return "company"
    if _values(text)[0] and _PROJECT.search(text) and _STATEMENT.search(text) and not imperative:
        return "project"
    if not remembered:
        return None
    # Asked to be remembered and none of the above: "remember to cc legal" or "remember: use
    # metric units" is a working rule; "remember that the booth number is 42" a fact of the work.
    return "rule" if imperative or _INSTRUCTION.match(text) else "project"


# How a remembered instruction starts (after "remember to"/"remember:"): a verb said to the coworker.
_INSTRUCTION = re.compile(
    r"(?:please\s+)?(?:always|never|don't|do not|use|call|cc|send|ask|check|keep|avoid|stop|start|reply|answer"
    r"|write|mention|include|add|put|copy|tell|remind|make sure)\b|請|不要|別|一律|永遠|總是|務必|記得要|要先",
    re.I,
)


MIN_WORDS = 3  # "That.", "Agreed, Caroline." and "同意，卡洛琳。" are too short to state anything


def states_fact(text: str) -> bool:
    """Whether a sentence states something: enough words, and one of them about something.

    Not "That.", "Agreed, Caroline.", "I love that!" or "Sounds like a plan": once the
    name it is addressed to is gone, nothing is left but filler, pronouns and deixis.
    """
    text = without_vocative(text)
    return word_count(text) >= MIN_WORDS and bool(content_words(text)) and not QUESTION.search(text)


# "I've been reading 'Becoming Nicole'", "My daughter starts school in September": what a person
# tells about themselves. Not moods, opinions, wishes or plans ("I think…", "I'm so glad…", "I'll…").
_PERSONAL = re.compile(
    r"^(?:i(?:'ve|'m| have| had| am| was| used to)?|my)\s|^我(?!們|想|覺得|會|要|需要|希望|猜|相信|知道|也|就|很|真|好)",
    re.I,
)
_MOOD = re.compile(
    r"^i(?:'ll|'d| will| would| could| can| should| might| may| must| think| guess| hope| wish| want| wanna| gotta| need| feel"
    r"| mean| know| believe| wonder| bet| just| agree| miss| see| hear| appreciate)\b"
    r"|^i(?:'m| am| was) (?:going to|gonna|not sure|sure|glad|so\b|sorry|happy|excited|thinking|just)"
    # What they are busy with right now: "I'm reviewing the rota"; in Chinese the moment often
    # comes first: "我去吃午餐" is "I'm off to lunch", "我今天在家工作" "I'm working from home today".
    r"|^(?:i'm|i am) \w+ing\b|^我正?在|^我(?:先(?!生)|去(?!年)|要去|現在|今天(?!起)|等一?下|待會|馬上|晚點|剛剛?(?!升|加入|成為|搬))",
    re.I,
)
_CJK_TEXT = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _personal(text: str) -> bool:
    if not _PERSONAL.match(text) or _MOOD.match(text):
        return False
    # Something specific, or enough content words that it is about something in particular.
    return bool(specifics(text)) or len(set(content_words(text))) >= (4 if _CJK_TEXT.search(text) else 2)


def _from_user(text: str) -> Candidate | None:
    if _FORGET.match(text) or (_NO_LONGER.search(text) and not DECISION.search(text)):
        return None  # a forget request, handled by forget_requests ("no more debate" after a decision is not one)
    remembered = _REMEMBER.match(text)
    body = (remembered.group(1) or remembered.group(2)) if remembered else text
    if not states_fact(body):
        return None  # "Please remember that." remembers nothing
    kind = _kind(body, remembered=bool(remembered))
    asked_to = remembered and remembered.group(1) and re.search(r"\bto\s*$", text[: remembered.start(1)], re.I)
    if kind == "project" and asked_to:
        kind = "rule"  # "remember to …" is something to do
    if kind is None and _personal(body):
        kind = "preference"  # about the user; the stored kinds have no "personal"
    return Candidate(_normalize(body, kind), kind) if kind else None


# Words whose day depends on when they were said: a fact that says "yesterday" is dated.
_RELATIVE_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|(?:last|next|this|past|coming) (?:week(?:end)?|month|year|night|spring|summer"
    r"|fall|autumn|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|\w+ (?:days?|weeks?|months?|years?) ago"
    r"|a while ago|recently|lately|the other day)\b"
    r"|昨天|今天|今晚|明天|前天|後天|上週|下週|這週|本週|上個?月|下個?月|這個月|去年|明年|今年|最近|前幾天|幾天前",
    re.I,
)


def _dated(text: str, said_at: datetime | None) -> str:
    """The fact with the day it was said, when it names a day only relative to that."""
    if said_at is None or not _RELATIVE_TIME.search(text):
        return text
    if text.endswith("。"):  # a Chinese sentence (_normalize ends each in its own language)
        return f"{text[:-1]}（{said_at.year}年{said_at.month}月{said_at.day}日說的）{text[-1]}"
    return f"{text[:-1]} (said on {said_at.day} {said_at:%B %Y}){text[-1]}"


# An assistant's "I chose a warm tone" is its own work, not a decision to remember.
_SHARED = re.compile(r"\b(?:we|we've|we'll|let's|agreed|approved|decision)\b|我們|決定|同意", re.I)


def extract_candidates(task: TaskRecords) -> list[Candidate]:
    """Facts worth remembering from the user's words and the assistants' stated decisions, in order."""
    out: list[Candidate] = []
    for record in task.records:
        if record.role not in ("user", "assistant"):
            continue  # tool results and notices are never a source
        for sentence in split_sentences(record.content):
            text = strip_chatter(sentence)
            if not text or len(text) > FACT_CHARS or QUESTION.search(text):
                continue  # a "sentence" of thousands of characters states no one fact
            if record.role == "user":
                candidate = _from_user(text)
            elif (
                states_fact(text)
                and DECISION.search(text)
                and _SHARED.search(text)
                and not NOT_DECIDED.search(text)
                and not OWN_WORK.search(text)  # its own work, mentioning a decision
            ):
                candidate = Candidate(_normalize(text, "decision", by_user=False), "decision")
            else:
                candidate = None
            if candidate and candidate.text:
                candidate = Candidate(_dated(candidate.text, record.created_at), candidate.kind)
            if candidate and candidate.text and all(similarity(candidate.text, c.text) < NEAR_IDENTICAL for c in out):
                out.append(candidate)
    return out


def most_similar(text: str, items: Sequence[Existing], k: int = 5) -> list[Existing]:
    """The k items most similar to text (relevance.similarity), ties in the given order: what decide expects."""
    scored = sorted(enumerate(items), key=lambda pair: (-similarity(text, pair[1].text), pair[0]))
    return [item for _, item in scored[:k]]


def _conflict(candidate: str, existing: str) -> tuple[str, str, str] | None:
    """(kind, old value, new value) when both state a value of one kind about the same subject and differ."""
    new_values, _ = _values(candidate)
    old_values, _ = _values(existing)
    new_subject = {w for w in _subject(candidate) if not w.startswith("<")}
    old_subject = {w for w in _subject(existing) if not w.startswith("<")}
    if new_subject and old_subject:
        shared = len(new_subject & old_subject) / min(len(new_subject), len(old_subject))
        if shared < SAME_SUBJECT:
            return None
    for kind, _ in _VALUES:
        new, old = new_values.get(kind), old_values.get(kind)
        if new and old and {n for n, _ in new} != {n for n, _ in old}:
            return kind, old[0][1], new[0][1]
    return None


def decide(candidate: Candidate, similar: Sequence[Existing]) -> Decision:
    """ADD, UPDATE or NOOP for one candidate against the most similar stored items (mem0-style)."""
    scored = sorted(
        ((similarity(candidate.text, item.text), i, item) for i, item in enumerate(similar)),
        key=lambda entry: (-entry[0], entry[1]),
    )
    negative = bool(_NEGATION.search(candidate.text))
    changes = [(score, item, _conflict(candidate.text, item.text)) for score, _, item in scored]
    # An item that already says this, value and polarity alike, wins over any item it would change.
    for score, item, conflict in changes:
        if score >= NEAR_IDENTICAL and not conflict and bool(_NEGATION.search(item.text)) == negative:
            return Decision("noop", candidate, item.id, candidate.text,
                            f"already known as item {item.id} (similarity {score:.2f}): “{item.text}”")
    for score, item, conflict in changes:
        if conflict:
            kind, old, new = conflict
            text = candidate.text
            # "Change the price to $39" keeps the old item's subject ("the Team plan costs $39/month").
            if _subject(candidate.text) < _subject(item.text) and len(_values(item.text)[0][kind]) == 1:
                text = item.text.replace(old, new, 1)
            return Decision("update", candidate, item.id, text,
                            f"changes the {kind} of item {item.id} from {old} to {new}: “{item.text}”")
        if bool(_NEGATION.search(item.text)) != negative and item.kind == candidate.kind and score >= REVERSAL:
            return Decision("update", candidate, item.id, candidate.text,
                            f"reverses item {item.id} (similarity {score:.2f}): “{item.text}”")
    closest = "nothing similar is stored"
    if scored:
        closest = f"closest is item {scored[0][2].id} at similarity {scored[0][0]:.2f}"
    return Decision("add", candidate, None, candidate.text, f"new {candidate.kind}; {closest}")


def remember_request(sentence: str) -> str | None:
    """What a "remember that …" sentence asks to remember, in the user's words; None for any other sentence."""
    text = strip_chatter(sentence).rstrip(" .。!！")
    if text.endswith((":", "：")):
        return None  # "Remember that the bot posts:" introduces what follows; alone it is no fact
    match = _REMEMBER.match(text)
    return (match.group(1) or match.group(2)).strip() if match else None


def asked_to_forget(sentence: str) -> str | None:
    """What a "forget that …" sentence asks to forget, in the user's words; None for any other."""
    match = _FORGET.match(strip_chatter(sentence).rstrip(" .。!！"))
    return (match.group(1) or match.group(2)).strip() or None if match else None


def forget_request(sentence: str) -> str | None:
    """What a sentence asks to forget: a "forget that …" one's subject, and what "I no longer like
    emojis" no longer holds ("I like emojis"); None for any other sentence."""
    if forgotten := asked_to_forget(sentence):
        return forgotten
    text = strip_chatter(sentence).rstrip(" .。!！")
    if _NO_LONGER.search(text) and not DECISION.search(text):
        return _NO_LONGER.sub(" ", text).strip() or None
    return None


def forget_requests(task: TaskRecords) -> list[str]:
    """What the user asked to forget in this task: "forget the launch date" -> "the launch date"."""
    said = (sentence for record in task.records if record.role == "user" for sentence in split_sentences(record.content))
    return [text for sentence in said if (text := forget_request(sentence))]


def forgets(forgotten: str, text: str) -> bool:
    """Does a request to forget `forgotten` ("the beta goes live on Friday") cover `text`, as
    match_forget would delete it?"""
    wanted = _subject(_normalize(forgotten, "rule"))
    return bool(wanted) and _covered(wanted, text) >= FORGET_MATCH


def _covered(wanted: set[str], text: str) -> float:
    """The share of a forget request's subject words (`wanted`, not empty) that `text` holds."""
    return len(wanted & _subject(text)) / len(wanted)


def match_forget(text: str, similar: Sequence[Existing]) -> Decision:
    """DELETE the stored item that best matches a forget request, or NOOP saying why none does."""
    wanted = _subject(_normalize(text, "rule"))
    if not wanted:
        return Decision("noop", None, None, text, f"“{text}” names nothing to forget")
    best: tuple[float, float, Existing] | None = None
    for item in similar:
        score = (_covered(wanted, item.text), similarity(text, item.text), item)
        if best is None or score[:2] > best[:2]:
            best = score
    if best and best[0] >= FORGET_MATCH:
        return Decision("delete", None, best[2].id, best[2].text,
                        f"the user asked to forget “{text}”; item {best[2].id} matches {best[0]:.0%}")
    near = f" (best: item {best[2].id} at {best[0]:.0%})" if best else ""
    return Decision("noop", None, None, text, f"nothing stored matches “{text}” closely enough{near}")
