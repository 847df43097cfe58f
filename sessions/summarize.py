"""The extractive rolling summary (offline mode): folds tasks into the previous summary within a budget.
Pure: imports only the standard library, sessions.history and sessions.relevance (no Django, no ORM, no I/O).

The summary is markdown with fixed sections; every bullet names its task, so
the text can be parsed back and updated at the next fold instead of rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sessions.history import TaskRecords
from sessions.relevance import chinese_segments, shorten, similarity, split_sentences, strip_chatter, tokens

SECTIONS = ("Decisions", "Facts and numbers", "Commitments and next steps", "Open questions", "Topics covered")
DECISIONS, FACTS, COMMITMENTS, QUESTIONS, TOPICS = SECTIONS
SHORT_CHARS = 80  # what an old bullet keeps when the budget is tight
MIN_TOPIC_LINES = 8  # topic ranges kept over budget before any fact is dropped for them
SENTENCE_CHARS = 240  # no single bullet is longer than this
SAME = 0.8  # two bullets at least this similar say the same thing; the newer wording wins
# A drafted email is full of dates and numbers; a few per task keep one long answer from crowding out the rest.
PER_TASK = {FACTS: 5, COMMITMENTS: 4}

MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
DECISION = re.compile(
    r"\b(?:decided|agreed|approved|chose|chosen|picked(?!\s+up)|opted for|settled on|signed off|finali[sz]ed"
    r"|go(?:ing)? with|decision\s*:"
    r"|let'?s (?:go with|use|change|switch|set|make|move|pick|keep|stick with|price)"
    r"|(?:we're|we are|we'll) (?:calling|naming|call|name) (?:it|the \w+))\b"
    r"|決定|同意|確定|選擇|選定|拍板|定案|就用|定為|就定|就叫",
    re.I,
)
NOT_DECIDED = re.compile(
    r"(?:\bnot\b|n't\b|\bnever\b|\byet to\b).{0,20}\b(?:decid|agree|approv|cho)|undecided|不確定|還沒|尚未|未決|沒有決定|待定|不同意"
    # 決定 is both "decide" and "decided": "雅婷需要在明天前決定" is a decision still to make.
    r"|(?:需要|必須|還要|得)(?:在[^，。！？,.!?]{0,8}前)?(?:決定|確定|選定)",
    re.I,
)
COMMITMENT = re.compile(
    r"\b(?:i'll|i will|i shall|we'll|we will|we shall|i'm going to|i am going to|we're going to|we are going to"
    r"|next steps?|action items?|to-?do|follow[- ]up|due|deadline|owner\s*:"
    rf"|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|eod|eow|end of|next"
    rf"|the end|{MONTHS}|\d+))\b"
    # A day, but not "see you tomorrow" (明天再聊, 明天見) or "this week's best news" (本週最好的消息).
    r"|負責|下一步|會在|之前完成|截止|待辦|我會|我們會|(?:明天|下週|本週)(?!再聊|再說|見|最|的)",
    re.I,
)
# Meeting-note style, a name and "to" and what they will do: "Sam to check with our top 3
# customers", "Mina and Omar to draft the brief". Case matters: the name is capitalized, the verb not.
# Not a sentence that opens with a word of greeting or feeling ("Nice to meet you", "Welcome to our
# team"), nor one whose "to" leads to a place or a person ("Thanks to everyone", "Back to the plan").
NAMED_COMMITMENT = re.compile(
    r"^(?!(?:Welcome|Thanks|Thank|Nice|Good|Great|Happy|Glad|Sorry|Hard|Easy|Ready|Time|Back|Due|Next|Up|Close|Hello|Hi|Hey)\b)"
    r"[A-Z][\w'-]*(?:\s+(?:and|&)\s+[A-Z][\w'-]*)?\s+to\s+"
    r"(?!(?:the|a|an|my|our|your|his|her|their|its|this|that|these|those|me|you|us|them|him|it|everyone|everybody|all)\b)"
    r"[a-z]{2,}\s+\S"
)
FACT = re.compile(
    r"\d|[$€£¥%]|百分之|[兩二三四五六七八九十百千萬]\s*(?:個|位|月|日|號|元|塊|年|天|週|周|小時|%|成|倍|人)"
    r"|\b(?:percent|dozen|hundred|thousand|million|billion)\b",
    re.I,
)
QUESTION = re.compile(r"[?？][\"'”’」)]*\s*$|[嗎呢][。！!]?\s*$")
UNSURE = re.compile(
    r"\b(?:not sure|don't know|do not know|unclear|tbd|to be (?:decided|determined|confirmed)|need to check"
    r"|no idea|nothing yet|no news|still waiting|haven't heard|not yet)\b|不確定|不知道|待定|需要確認|還不清楚|未定|還沒有消息|還在等",
    re.I,
)
REASON = re.compile(r"^(?:because|since|this is because|that's because|the reason|因為|由於|原因是)", re.I)
QUESTION_CHARS = frozenset("什麼怎樣哪誰幾多少如何")


# What a sentence is about --------------------------------------------------------

# Words that carry nothing on their own: acknowledgements, pleasantries, light verbs,
# vague nouns and deixis. "Agreed, Caroline.", "I love that!" and "Sounds like a plan"
# hold nothing else, so they state no fact and name no topic.
_FILLER_WORDS = """
    agree agreed yes yeah yep yup no nope nah ok okay sure thanks thank welcome sorry hi hello hey bye goodbye
    cheers congrats congratulations wow oh ah aw haha hahaha lol omg hmm um yay whoa awesome amazing great
    good nice cool fun lovely wonderful fantastic glad happy excited proud sweet right true exactly totally
    definitely absolutely indeed sound sounds luck care best idea plan
    one ones thing things stuff something anything everything nothing someone anyone everyone somebody
    everybody hers theirs yourself myself ourselves himself herself themselves itself
    now then today tonight tomorrow yesterday lately recently soon later way lot lots bit kind sort much many
    well even still already always never ever yet such like not
    be being go going gone went come came coming get getting make made take took say said says tell told
    know knew think thought mean meant feel felt see saw look looks want wanted need hope guess try tried
    keep let give put remember forget note love loved like liked hate prefer wish seem happen happened
    decide decided choose chose pick picked talk talked chat hear heard share doing done back while how's who's
    busy tired sad hard crazy fine bad cute funny powerful exciting interesting beautiful incredible
    through across within without after before around via using gave give given asked
    course problem problems worries worry deal matter pleasure anytime same here
"""
FILLER = frozenset(t for word in _FILLER_WORDS.split() for t in tokens(word))
# The same for Chinese: words first (so 決定 goes but 定價 stays), then single characters.
_CJK_FILLER = re.compile(
    "喜歡|討厭|偏好|比較|記住|記得|記下來?|決定|同意|確定|選擇|選定|覺得|知道|感覺|真的|非常|太好了|好的|謝謝|感謝"
    "|沒錯|當然|一下|東西|事情|什麼|怎麼|這麼|那麼|這樣|那樣|主意|以後|現在|今天|明天|昨天|最近|總是|一律|永遠|不要|可以|應該|哈+|呵+"
)
_CJK_EMPTY = frozenset("的了是在我你他她它們和與及也就都而之這那有個嗎呢吧啊呀喔哦很要把被給讓說著過為以對從到還又或好嗯啦耶欸唉哇讚棒點件樣些種次太真請麼每")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# "Agreed, Caroline." / "Mel, that's great" / "同意，卡洛琳。": a name said to someone, not about anything.
_VOCATIVE = (
    re.compile(r"\b(?i:thanks|thank you|hi|hey|hello|bye|congrats|love you|miss you|see you)\s+[A-Z][a-z]+\b"),
    # "Wow Mel, that's stunning!", "Yeah Mel, stoked!": at the start, an interjection, then the
    # name set off by a comma or "!" (not "Great Britain", not "Sure Dana and Lee are invited").
    re.compile(r"^(?i:wow|woah|whoa|yeah|yes|yep|yup|oh|aw+|omg|haha|ok|okay|nah|awesome|sorry|hmm+|gosh|congratulations)"
               r"\s+[A-Z][a-z]+\s*(?:,\s*|(?=!))"),
    re.compile(r"[,，]\s*[A-Z][a-z]+[\s.!~,;:。！，～]*$"),  # at the end
    re.compile(r"(?<=[,，])\s*[A-Z][a-z]+\s*(?=[,，~!.;:。！～])"),  # set off by punctuation
    re.compile(r"^[A-Z][a-z]+\s*[,，~～!！]+\s*"),  # at the start
    # "Team: the beta goes live on Friday": the room addressed, before a colon too (a label such
    # as "Budget: $40,000" is the fact's subject, and stays).
    re.compile(r"^(?i:team|everyone|everybody|all|folks|guys|y'all|hi all|hey all|hi team|hey team)\s*[:：]\s*"),
)  # at the end, then the start
_CJK_GREETING = re.compile(r"(?:謝謝|感謝|嗨|哈囉|你好|您好|早安|午安|晚安|拜拜)[\u4e00-\u9fff]{2,3}(?=[，,。！!～~\s]|$)")  # "謝謝梅兒"
_CLAUSE = re.compile(r"([，,。！!～~；;：:\s]+)")
_CJK_NAME = re.compile(r"[\u4e00-\u9fff]{2,3}")
_WORD = re.compile(r"[A-Za-z][\w'-]*|\d[\d,.:/]*|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TITLE = re.compile(r"[“「『《\"]([^”」』》\"]{2,})[”」』》\"]|(?<!\w)'([^']{2,})'(?!\w)")
_CALENDAR = re.compile(
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\bMay\b"
    r"|[一二三四五六七八九十]{1,3}月|星期[一二三四五六日天]|週[一二三四五六日末]|禮拜[一二三四五六日天]",
    re.I,
)
_NOT_NAMES = frozenset("I I'm I've I'll I'd OK Ok".split())
_NUMBER = re.compile(
    r"[$€£¥]?\d[\d,.:/-]*%?|百分之[\d一二三四五六七八九十百]+"
    r"|[兩二三四五六七八九十百千萬]+\s*(?:個|位|日|號|元|塊|年|天|週|周|小時|%|成|倍|人)"
    r"|\b(?:percent|dozen|hundred|thousand|million|billion)\b",
    re.I,
)


def without_vocative(text: str) -> str:
    """The sentence without a name it is addressed to: "Agreed, Caroline." -> "Agreed"."""
    for pattern in _VOCATIVE:
        text = pattern.sub("", text.strip())
    text = _CJK_GREETING.sub("", text)
    # "同意，卡洛琳。", "卡洛琳，謝謝！": beside a clause of filler only, a clause of two or three
    # characters is the name of the person spoken to.
    clauses = _CLAUSE.split(text)
    if any(_CJK_RUN.fullmatch(c) and not _cjk_content(c) for c in clauses):
        clauses = [c for c in clauses if not (_CJK_NAME.fullmatch(c) and _cjk_content(c))]
    return "".join(clauses).strip()


def _cjk_content(text: str) -> str:
    return "".join(ch for ch in _CJK_FILLER.sub("", text) if ch not in _CJK_EMPTY)


def content_words(text: str) -> list[str]:
    """What a sentence is about: its tokens without stopwords and filler (CJK as single characters)."""
    text = without_vocative(text)
    latin = _CJK_RUN.sub(" ", text)
    out = [t for t in tokens(latin) if t not in FILLER]
    for run in _CJK_RUN.findall(_CJK_FILLER.sub(" ", text)):
        out += [char for char in run if char not in _CJK_EMPTY]
    return out


def specifics(text: str) -> list[str]:
    """The specific things a sentence names: numbers, dates, quoted titles, names, acronyms."""
    text = without_vocative(text)
    found = [m.group(1) or m.group(2) for m in _TITLE.finditer(text)]
    found += [m.group() for m in _NUMBER.finditer(text)]
    found += [m.group() for m in _CALENDAR.finditer(text) if m.group() not in found]
    return found + _capitalized(text)


def names(text: str) -> list[str]:
    """The people, places and things a text names: quoted titles, capitalized names and
    acronyms (no numbers or days)."""
    text = without_vocative(text)
    titles = [m.group(1) or m.group(2) for m in _TITLE.finditer(text)]
    return titles + [w for w in _capitalized(text) if not _CALENDAR.fullmatch(w)]


def _capitalized(text: str) -> list[str]:
    # Capitalized after the first word, or all capitals: "Lisbon", "Lucas", "HR"; not "I'm".
    words = re.findall(r"[A-Za-z][\w'-]*", _TITLE.sub(" ", text))
    return [w for i, w in enumerate(words) if (i > 0 and w[0].isupper() or w.isupper() and len(w) > 1)
            and w not in _NOT_NAMES]


def word_count(text: str) -> int:
    """Words, numbers and CJK characters."""
    return len(_WORD.findall(text))


# Verbs that end a topic phrase without being filler: "my daughter starts school" names daughter and school.
_VERBS = frozenset(
    "is are was were start starts started begin begins began read reading reads play plays playing played "
    "works worked confirmed move moved moving booked hold held holding takes costs cost launches joined".split()
)
_PIECE = re.compile(
    rf"(?P<title>{_TITLE.pattern})|(?P<word>[A-Za-z][\w'-]*)|(?P<cjk>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)"
    r"|(?P<space>[ \t]+)|(?P<other>.)"
)
_CJK_VERBS = "舉辦|舉行|開始|參加|討論|準備|完成|安排|打算|認為|告訴|發現|改到|改成|移到|訂了|選了|去了|看了|讀了|在讀|去|讀|聊|搬"
PHRASE_WORDS = 3  # a topic phrase keeps its last three words ("LGBTQ support group")
_CJK_PHRASE = (2, 6)  # a Chinese topic phrase: a run of 2 to 6 characters


def key_phrases(text: str, *, sentence: bool = True) -> list[str]:
    """Runs of content words, in order: "We picked Lakeview Lodge for the offsite" -> Lakeview Lodge, offsite.

    A sentence's first word loses its capital unless it is all capitals; a phrase's keeps it.
    """
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append(" ".join(run[-PHRASE_WORDS:]))
            run.clear()

    text = without_vocative(text)
    for i, match in enumerate(_PIECE.finditer(text)):
        if match.group("space"):
            continue
        if word := match.group("word"):
            if word.lower() not in _VERBS and all(t not in FILLER for t in tokens(word)) and tokens(word):
                # The sentence's first word is capitalized because it comes first, not because it is a name.
                run.append(word.lower() if sentence and i == 0 and word[1:].islower() else word)
                continue
            flush()
        elif title := match.group("title"):
            flush()
            out.append(title.strip())
        elif chars := match.group("cjk"):
            flush()
            chars = _NUMBER.sub("的", _CALENDAR.sub("的", _CJK_FILLER.sub("的", chars)))
            for piece in re.split(f"[{''.join(_CJK_EMPTY)}]+|{_CJK_VERBS}", chars):
                if len(piece) >= _CJK_PHRASE[0]:
                    out.append(_cjk_phrase(piece))
        else:
            flush()
    flush()
    return out


def _cjk_phrase(piece: str) -> str:
    """A Chinese phrase of at most _CJK_PHRASE[1] characters: its first whole words, never a word
    cut in two ("新人報到清單還剩" gives "新人報到清單"; "擬一則團隊頻道" gave "擬一則團隊頻")."""
    if len(piece) <= _CJK_PHRASE[1]:
        return piece
    kept = ""
    for word in chinese_segments(piece):
        if len(kept) + len(word) > _CJK_PHRASE[1]:
            break
        kept += word
    return kept or piece[: _CJK_PHRASE[1]]


def value(sentence: str) -> int:
    """How much a sentence carries: its specifics count double, then its distinct content words."""
    return 2 * len(specifics(sentence)) + len(set(content_words(sentence)))


# A coworker's "I put the price we agreed into the copy" reports its own work; it decides nothing.
OWN_WORK = re.compile(r"^(?:i|i've|i have|i'd)\b|^我", re.I)


def classify(sentence: str, *, by_coworker: bool = False) -> str | None:
    """The section a sentence belongs to, or None: a decision beats a commitment, which beats a fact."""
    if QUESTION.search(sentence):
        return QUESTIONS
    reports_own_work = by_coworker and OWN_WORK.search(sentence)
    if DECISION.search(sentence) and not NOT_DECIDED.search(sentence) and not reports_own_work:
        return DECISIONS
    if COMMITMENT.search(sentence) or NAMED_COMMITMENT.match(sentence.strip()):
        return COMMITMENTS
    if FACT.search(sentence):
        return FACTS
    return None


@dataclass(frozen=True)
class Bullet:
    body: str
    first: int | None = None  # task range; None for a bullet parsed from a summary without references
    last: int | None = None
    who: str | None = None

    @property
    def age(self) -> int:
        return -1 if self.last is None else self.last


Sections = dict[str, list[Bullet]]

# Parsing and rendering ---------------------------------------------------------

# "## Decisions", and the "**Decisions**" or "Decisions:" a model sometimes writes instead.
HEADER_CHARS = 200
_HEADER = re.compile(r"^#{1,6}\s*(.+?)\s*#*$|^\*\*([^*]{1,40})\*\*:?$|^([A-Za-z][\w ]{0,38}):$")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+(.*)$")
_REF = re.compile(r"^\(tasks? (\d+)(?:\s*[–-]\s*(\d+))?(?:,\s*([^)]*))?\)\s*(.*)$", re.I)
_TOPIC_REF = re.compile(r"^tasks? (\d+)(?:\s*[–-]\s*(\d+))?(?:\s*\(([^)]*)\))?:\s*(.*)$", re.I)
_KEYWORDS = ((DECISIONS, "decision"), (FACTS, "fact"), (FACTS, "number"), (COMMITMENTS, "commit"),
             (COMMITMENTS, "next"), (COMMITMENTS, "follow"), (QUESTIONS, "question"), (TOPICS, "topic"))


def parse_summary(text: str) -> Sections:
    """Sections and bullets of a summary, ours or a model's: unknown headings map by keyword, else to Topics."""
    sections: Sections = {name: [] for name in SECTIONS}
    current = TOPICS  # text before any heading is background: keep it, never invent a decision from it
    for line in text.splitlines():
        if not line.strip():
            continue
        # A heading is short; a long line of marks would make the pattern backtrack for seconds.
        header = _HEADER.match(line.strip()) if len(line) <= HEADER_CHARS else None
        title = next((group for group in header.groups() if group), "").lower() if header else ""
        if header and (line.lstrip().startswith("#") or any(word in title for _, word in _KEYWORDS)):
            current = next((name for name, word in _KEYWORDS if word in title), TOPICS)
            continue
        item = _ITEM.match(line)
        body = " ".join((item.group(1) if item else line).split())
        first = last = who = None
        if ref := (_REF.match(body) or _TOPIC_REF.match(body)):
            a, b = int(ref.group(1)), int(ref.group(2) or ref.group(1))
            who = shorten((ref.group(3) or "").strip(), 40) or None
            first, last, body = min(a, b), max(a, b), ref.group(4)
        if body:
            sections[current].append(Bullet(body, first, last, who))
    return sections


def _line(section: str, bullet: Bullet) -> str:
    if bullet.first is None or bullet.last is None:
        return f"- {bullet.body}"
    many = bullet.first != bullet.last
    span = f"{bullet.first}–{bullet.last}" if many else str(bullet.first)
    if section == TOPICS:
        who = f" ({bullet.who})" if bullet.who else ""
        return f"- Task{'s' if many else ''} {span}{who}: {bullet.body}"
    who = f", {bullet.who}" if bullet.who else ""
    return f"- (task{'s' if many else ''} {span}{who}) {bullet.body}"


def render_summary(sections: Sections) -> str:
    blocks = [
        f"## {name}\n" + "\n".join(_line(name, bullet) for bullet in sections[name])
        for name in SECTIONS
        if sections.get(name)
    ]
    return "\n\n".join(blocks)


# Reading a task ----------------------------------------------------------------

_REGULAR = (
    "draft review fix design prepare update create analyze compare summarize list check schedule estimate price "
    "research outline edit translate propose suggest brainstorm calculate add explain organize test improve "
    "define pick polish shorten"
).split()
PAST = {verb: verb + ("d" if verb.endswith("e") else "ed") for verb in _REGULAR} | {
    "plan": "planned", "write": "wrote", "rewrite": "rewrote", "send": "sent", "make": "made",
    "build": "built", "find": "found", "choose": "chose", "read": "read",
}
_POLITE = re.compile(
    r"^(?:@\S+[\s,:]*|please\s+|pls\s+|kindly\s+|(?:can|could|would|will) you\s+|i(?: need|'d like| would like| want)"
    r" you to\s+|help me\s+|let's\s+|請你?|麻煩(?:你|您)?|幫我|可以幫我|能不能幫我|你可以|可否)+",
    re.I,
)
_TOOLS_NOTE = re.compile(r"\s*\(used [^)]*\)$")
_ANY_TOOLS_NOTE = re.compile(r"(?:(?<!\s)\s++)?\(used [^)]*(?:\)|…?$)")  # spaces from their run's start only
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def display_name(coworker: str | None) -> str:
    """"mina" -> "Mina"; parentheses are dropped because they delimit a bullet's reference."""
    name = " ".join((coworker or "assistant").replace("-", " ").replace("_", " ").split())
    return (name.title() if name == name.lower() else name).replace("(", "").replace(")", "")


TOPIC_PHRASES = 3  # a conversation's topic names at most this many phrases
_CHAT_OPENER = re.compile(
    r"^(?:i|i'm|i've|i'd|i was|my|me|we're|we've|our|you|you're|your|it|it's|that|that's|this|there|there's"
    r"|he|she|they|his|her|their|wow|omg|haha|lol|oh)\b|^(?:我|你|妳|他|她|這|那|哈)",
    re.I,
)
_NAME_ALONE = re.compile(r"^(?:[A-Z][a-z]+|[\u4e00-\u9fff]{1,3})[\s!！~～,，.。]*$")  # "Mel!", "梅兒！"
_LABEL_VERB = re.compile(r"^(?:worked on|talked about|asked|discussed|聊到|處理|討論|詢問)\s*")


def _phrase_key(phrase: str) -> frozenset[str]:
    return frozenset(tokens(phrase)) or frozenset((phrase.lower(),))


def _top_phrases(weighted: Sequence[tuple[str, float]], *, most: int, chars: int) -> list[str]:
    """The heaviest phrases, first seen first among equals; none that a heavier one already holds."""
    score: dict[frozenset[str], float] = {}
    shown: dict[frozenset[str], str] = {}
    for phrase, weight in weighted:
        key = _phrase_key(phrase)
        score[key] = score.get(key, 0.0) + weight
        shown.setdefault(key, phrase)
    taken: list[frozenset[str]] = []
    for key in sorted(score, key=lambda k: -score[k]):  # sorted() is stable: first seen first
        if any(key <= other for other in taken):
            continue
        kept = [other for other in taken if not other <= key]  # "offsite venue" takes in "offsite"
        if len(kept) >= most or kept and len(", ".join(shown[k] for k in [*kept, key])) > chars:
            continue
        taken = [*kept, key]
    return [shown[key] for key in shown if key in taken]  # in the order they came up


def _join(phrases: Sequence[str]) -> str:
    return ("、" if all(_CJK.search(p) and not re.search("[A-Za-z]", p) for p in phrases) else ", ").join(phrases)


def conversation_topics(sentences: Sequence[str]) -> list[str]:
    """What a stretch of conversation is about: its recurring content phrases, specific ones first."""
    weighted = [
        (phrase, 2 + (" " in phrase or len(phrase) >= 3 and bool(_CJK.search(phrase))) + bool(specifics(phrase)))
        for sentence in sentences
        if not _NAME_ALONE.match(sentence)
        for phrase in key_phrases(sentence)
    ]
    return _top_phrases(weighted, most=TOPIC_PHRASES, chars=60)


def topic_label(instruction: str, *, finished: bool, said: Sequence[str] = ()) -> str:
    """A short phrase for what a task did: "Draft the launch email" -> "drafted the launch email".

    Conversation rather than work ("I went to a support group yesterday", "Hey! How are you?")
    is labelled by what it talked about, from the instruction and `said` (the task's other
    sentences); a task of greetings and thanks only has no label.
    """
    # Without the name it is said to: "Yeah Mel, stoked!" is not about Mel.
    sentences = [s for s in (without_vocative(strip_chatter(x)) for x in split_sentences(instruction)) if s]
    first = next((s for s in sentences if content_words(s) and not _NAME_ALONE.match(s)), "")
    if not first or (_CHAT_OPENER.match(first) and classify(first) is None and not QUESTION.search(first)):
        phrases = conversation_topics(list(said) or sentences)
        if not phrases:
            return ""
        cjk = _CJK.search(phrases[0]) and not re.search("[A-Za-z]", phrases[0])
        label = f"聊到「{_join(phrases)}」" if cjk else f"talked about {_join(phrases)}"
        return label if finished else f"{label} (unfinished)"
    phrase = _POLITE.sub("", first).strip()
    asked = phrase == first and bool(QUESTION.search(first))  # "Can you draft…?" is a request
    phrase = re.split(r"[;；:：]\s|,\s|，|\s[-–—]\s", phrase, maxsplit=1)[0].strip(" .!。！")
    if not phrase:
        return ""
    phrase = shorten(phrase, 80)
    if not finished:
        return f"{phrase} (unfinished)"
    cjk = bool(_CJK.search(phrase))
    if asked:
        return f"詢問「{phrase}」" if cjk else f'asked "{phrase}"'
    verb, _, rest = phrase.partition(" ")
    if past := PAST.get(verb.lower()):
        return f"{past} {rest}".strip(" ?？")
    if classify(first) is not None:  # a statement ("We decided …"), not a piece of work
        return f"討論「{phrase}」" if cjk else f'discussed "{phrase}"'
    if cjk:
        return f"處理「{phrase}」"
    lowered = phrase[0].lower() + phrase[1:] if phrase[1:2].islower() else phrase
    return f"worked on {lowered}"


def _content(text: str) -> set[str]:
    # Single characters, not bigrams, for CJK: a question's bigrams rarely reappear in its answer.
    return {t for t in tokens(text) if not (len(t) == 2 and _CJK.match(t)) and t not in QUESTION_CHARS}


def _answered(question: str, replies: Sequence[str]) -> bool:
    replies = [reply for reply in replies if not UNSURE.search(reply)]
    if not replies:
        return False
    wanted = _content(question)
    if not wanted:
        return True
    got = set().union(*map(_content, replies))
    return len(wanted & got) / len(wanted) >= 0.5


def _add(bullets: list[Bullet], new: Bullet) -> None:
    bullets[:] = [old for old in bullets if not _says_the_same(old.body, new.body)]
    bullets.append(new)


def _says_the_same(old: str, new: str) -> bool:
    """Near-duplicates, and an old bullet shortened to fit ("…") of what the new one says whole:
    a reply given again each week would otherwise fill a section with copies of its opening."""
    if similarity(old, new) >= SAME:
        return True
    head = old.removesuffix("…").rstrip()
    return old.endswith("…") and len(head) >= 20 and new.startswith(head)


def _section(sentence: str, *, by_coworker: bool) -> str | None:
    """classify(), for sentences worth a bullet: "Agreed, Caroline." and "See you tomorrow!" are not.

    A statement naming something specific without a number ("I've been reading 'Becoming
    Nicole'") is a fact too. Decisions need a few words about something; facts a specific
    and a content word; commitments and questions a specific or two content words.
    """
    section = classify(sentence, by_coworker=by_coworker)
    named, content = specifics(sentence), set(content_words(sentence))
    if section is None and named and len(content) >= 2:
        section = FACTS
    if section == DECISIONS:
        return section if word_count(without_vocative(sentence)) >= 3 and content else None
    if section == FACTS:
        return section if named and content else None
    if section in (COMMITMENTS, QUESTIONS):
        return section if named or len(content) >= 2 else None
    return None


def _fold_task(task: TaskRecords, sections: Sections, *, multi_speaker: bool) -> None:
    said: list[tuple[str, bool, str]] = []  # (sentence, by the user, speaker)
    responders: list[str] = []
    tools: list[str] = []
    for record in task.records:
        if record.role == "assistant":
            tools += [call.name for call in record.tool_calls if call.name not in tools]
        if record.role not in ("user", "assistant") or not record.content.strip():
            continue  # tool results and notices are never a source
        who = "you" if record.role == "user" else display_name(record.coworker)
        if record.role == "assistant" and who not in responders:
            responders.append(who)
        for sentence in split_sentences(record.content):
            if record.role == "assistant" and (answer := _RESTATED.sub("", sentence)) != sentence:
                sentence = answer[:1].upper() + answer[1:]
            if text := strip_chatter(sentence):
                said.append((shorten(text, SENTENCE_CHARS), record.role == "user", who))

    turn = task.turn
    replies = [text for text, by_user, _ in said if not by_user]
    # Questions from earlier tasks that this task's replies answer drop out.
    sections[QUESTIONS] = [q for q in sections[QUESTIONS] if q.age >= turn or not _answered(q.body, replies)]

    kinds = [_section(text, by_coworker=not by_user) for text, by_user, _ in said]
    skip: set[int] = set()
    for i, (_, _, who) in enumerate(said[:-1]):
        if kinds[i] == DECISIONS and i not in skip and said[i + 1][2] == who and REASON.match(said[i + 1][0]):
            skip.add(i + 1)  # the decision's reason, kept with it
    chosen = [i for i, section in enumerate(kinds) if section and i not in skip]
    # Where a task says more than a section takes, the sentences that carry the most win.
    for name, cap in PER_TASK.items():
        mine = sorted((i for i in chosen if kinds[i] == name), key=lambda i: (-value(said[i][0]), i))
        chosen = [i for i in chosen if i not in mine[cap:]]
    from_user = sum(1 for _, by_user, _ in said if by_user)
    for i in chosen:
        text, by_user, who = said[i]
        section = kinds[i]
        if section == QUESTIONS:
            later = [t for t, u, _ in said[i + 1 :] if not u]
            # A question that is all the person said is answered by the reply it got ("Any news
            # from HR?" by "Yes: Ravi signed"), unless the reply is unsure; one among other
            # requests, by a reply about it. "Can you look into venues?" asks for work: once
            # answered, it is the task's topic.
            answered = _answered(text, later) or from_user == 1 and any(not UNSURE.search(t) for t in later)
            if by_user and not answered and not (later and _asks_for_work(text)):
                _add(sections[QUESTIONS], Bullet(text, turn, turn))
            continue
        if section == FACTS and by_user and _asks_for_work(text):
            # "Please put together an agenda for Monday" states nothing: the Topics line says what
            # was asked (a request with a deadline is still the responder's commitment).
            continue
        if i + 1 in skip:
            text = shorten(f"{text} {said[i + 1][0]}", SENTENCE_CHARS)  # keep the decision's reason with it
        owner: str | None = who if multi_speaker else None
        if section == COMMITMENTS:
            # The owner: who said it, or, for a request the user made of others, who answered it.
            self_ref = re.match(r"(?:i|we)\b|我", text, re.I)
            owner = who if not by_user or self_ref or not responders else ", ".join(responders)
        _add(sections[section], Bullet(text, turn, turn, owner))

    label = topic_label(task.instruction, finished=bool(task.final_answer), said=[text for text, _, _ in said])
    if not label:
        return
    if tools:
        label += f" (used {', '.join(tools[:3])})"
    who_all = ", ".join(responders) if multi_speaker and responders else None
    topics = sections[TOPICS]
    last = topics[-1] if topics else None
    if last and last.last is not None and last.last < turn and similarity(_what(last.body), _what(label)) >= 0.5:
        topics[-1] = replace(last, last=turn, who=_names(last.who, who_all))
    else:
        topics.append(Bullet(label, turn, turn, who_all))


# "You'd like me to draft the launch email — here it is: …": a reply that says the request back
# before answering it. What follows the dash is the answer; the request is the task's topic.
_RESTATED = re.compile(
    r"^(?:so\s+)?(?:you'd like me to|you would like me to|you want me to|you asked me to|you're asking me to)\b[^—–]*[—–]+\s*"
    r"|^(?:所以)?你(?:是)?(?:要|想要|希望|想)我[^—]*—+",
    re.I,
)


def _asks_for_work(sentence: str) -> bool:
    """Whether the user's sentence asks for something to be done ("Please draft…", "Can you look
    into…?", "Write a note to Grace", "幫我整理…"), rather than saying or asking something."""
    if _POLITE.match(sentence):
        return True
    first = sentence.split(maxsplit=1)[0].lower() if sentence.split() else ""
    return first in PAST


def _what(label: str) -> str:
    # What a topic label is about, without its verb: "drafted the launch email" -> "the launch email".
    return re.sub(r"^(?:worked on|talked about|\S+)\s*", "", _TOOLS_NOTE.sub("", label))


_PAST_FORMS = frozenset(PAST.values())


def _label_phrases(body: str) -> list[str]:
    """The topic phrases of a Topics bullet, whether one task's label or a merged range's list."""
    out: list[str] = []
    for part in re.split(r";\s+", _ANY_TOOLS_NOTE.sub("", body.replace(" (unfinished)", ""))):
        part = _LABEL_VERB.sub("", part.strip())
        verb, _, rest = part.partition(" ")
        if verb.lower() in _PAST_FORMS:
            part = rest
        for piece in re.split(r",\s+|、", part.strip(' "「」')):
            out += key_phrases(piece, sentence=False)
    return out


def _span(bullet: Bullet) -> int:
    return 1 if bullet.first is None or bullet.last is None else bullet.last - bullet.first + 1


def _names(*groups: str | None) -> str | None:
    names = list(dict.fromkeys(n.strip() for g in groups if g for n in g.split(",") if n.strip()))
    return ", ".join(names) or None


# Fitting the budget --------------------------------------------------------------


def _merge_topics(a: Bullet, b: Bullet) -> Bullet:
    """One bullet for two neighbouring ranges, naming the phrases that recur most across their tasks."""
    firsts = [x for x in (a.first, b.first) if x is not None]
    lasts = [x for x in (a.last, b.last) if x is not None]
    weighted = [
        (phrase, _span(bullet) * (2 if " " in phrase or specifics(phrase) else 1))  # "subject lines" over "check"
        for bullet in (a, b)
        for phrase in _label_phrases(bullet.body)
    ]
    phrases = _top_phrases(weighted, most=TOPIC_PHRASES + 2, chars=SHORT_CHARS)
    return Bullet(
        shorten(_join(phrases), SHORT_CHARS) if phrases else shorten(f"{a.body}; {b.body}", SHORT_CHARS),
        min(firsts) if firsts else None,
        max(lasts) if lasts else None,
        _names(a.who, b.who),
    )


def _fit(sections: Sections, max_chars: int) -> str:
    """Compress the oldest material first until the summary fits; the newest decision goes last of all."""
    # Sizes are tracked per section, not re-rendered at each step: a model-written
    # summary being updated may hold thousands of bullets.
    used = {name: sum(len(_line(name, b)) + 1 for b in sections[name]) for name in SECTIONS}
    count = {name: len(sections[name]) for name in SECTIONS}

    def over() -> bool:
        shown = [name for name in SECTIONS if count[name]]
        return sum(len(name) + 3 + used[name] for name in shown) + 2 * max(len(shown) - 1, 0) > max_chars

    def put(name: str, i: int, bullet: Bullet) -> None:
        used[name] += len(_line(name, bullet)) - len(_line(name, sections[name][i]))
        sections[name][i] = bullet

    # 1. Shorten old bullets, oldest first across all sections.
    for _, _, i, name in sorted((b.age, SECTIONS.index(n), i, n) for n in SECTIONS for i, b in enumerate(sections[n])):
        if not over():
            break
        put(name, i, replace(sections[name][i], body=shorten(sections[name][i].body, SHORT_CHARS)))
    # 2. Merge topics into ranges: the two neighbours covering the fewest tasks, oldest first, so
    #    ranges grow evenly instead of one line swallowing the start. The newest stays whole.
    def merge_topics(keep: int, share: int) -> None:
        topics = sections[TOPICS]
        while len(topics) > 2 and (len(topics) > keep or used[TOPICS] > share) and over():
            j = min(range(len(topics) - 2), key=lambda k: (_span(topics[k]) + _span(topics[k + 1]), k))
            merged = _merge_topics(topics[j], topics[j + 1])
            old = len(_line(TOPICS, topics[j])) + len(_line(TOPICS, topics[j + 1])) + 1
            used[TOPICS] += len(_line(TOPICS, merged)) - old
            count[TOPICS] -= 1
            topics[j : j + 2] = [merged]

    newest = (DECISIONS, count[DECISIONS] - 1) if count[DECISIONS] else (COMMITMENTS, count[COMMITMENTS] - 1)

    def drop(*group: str) -> None:
        """Drop the group's oldest bullets while over budget, never the newest decision."""
        victims = sorted((b.age, group.index(n), i, n) for n in group for i, b in enumerate(sections[n]))
        gone: set[tuple[str, int]] = set()
        for _, _, i, name in victims:
            if not over():
                break
            if (name, i) != newest:
                gone.add((name, i))
                used[name] -= len(_line(name, sections[name][i])) + 1
                count[name] -= 1
        for name in group:
            sections[name] = [b for i, b in enumerate(sections[name]) if (name, i) not in gone]

    # 3. An outline of up to MIN_TOPIC_LINES ranges in a quarter of the budget outlives old facts
    #    and questions; then topics merge further, and only then do topics, commitments and
    #    decisions go, oldest first.
    merge_topics(MIN_TOPIC_LINES, max_chars // 4)
    drop(FACTS)
    drop(QUESTIONS)
    merge_topics(2, 0)
    drop(TOPICS)
    drop(COMMITMENTS, DECISIONS)
    # 4. A budget too small for even the newest decision whole: shorten it to fit, or give it up.
    if over():
        for name in SECTIONS:
            for i, bullet in enumerate(sections[name]):  # by now at most one bullet is left
                sections[name][i] = replace(bullet, body="")
                room = max_chars - len(render_summary(sections))
                if room < 2:
                    return ""
                sections[name][i] = replace(bullet, body=shorten(bullet.body, room))
    text = render_summary(sections)
    return text if len(text) <= max_chars else ""


def summarize_extractively(
    previous: str, tasks: Sequence[TaskRecords], *, max_chars: int, multi_speaker: bool
) -> str:
    """Update `previous` with `tasks` (oldest first) and fit the result into max_chars characters.

    Bullets of the previous summary are kept (answered open questions and
    near-duplicates excepted) and new ones are added per section, each with its
    task reference. Over budget the oldest material is compressed first; the
    result is never longer than max_chars.
    """
    if max_chars < 0:
        raise ValueError("max_chars must not be negative")
    sections = parse_summary(previous)
    for task in tasks:
        _fold_task(task, sections, multi_speaker=multi_speaker)
    return _fit(sections, max_chars)
