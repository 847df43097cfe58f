"""Lexical relevance: tokens, sentences, chatter, a BM25 index and a similarity for short facts.
Pure: the standard library, PyStemmer and jieba (no Django, no ORM, no I/O, no model calls).

Shared by memory selection, recall, history search, the extractive summary and
the offline responder, so all of them agree on what "the same words" means.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

import jieba
import Stemmer

K = TypeVar("K", bound=Hashable)

# Small on purpose: every word here becomes unsearchable. Negations and "may"
# (the month) stay searchable.
STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with about as from into over per
    is are was were be been being am do does did have has had having i me my mine we us our ours
    you your yours he him his she her it its they them their this that these those what which who
    whom whose when where why how can could would should will shall might must let's lets please
    just also too very really there here i'm i'll i've i'd we're we'll we've you're you'll it's
    that's there's what's all any some more most such only own same than up out again once
    get got make sure ok okay""".split()
)
# Single CJK characters that carry no topic: particles, pronouns, and (as English's "what", "who",
# "can", "please") the question words, modals and 請. A bigram or jieba word made only of them
# carries none either (什麼, 我們, 可以, 這個); one with any other character still counts (能力).
# A question's 什麼 and 可以 had matched every other question and request: a paraphrased
# question recalled forty of them ahead of its answer (docs/context.md, "Recall").
CJK_STOPCHARS = frozenset(
    "的了是在我你他她它們和與及也就都而之這那有個嗎呢吧啊呀喔哦很要會把被給讓說著過為以對從到還又或什麼哪誰怎可能請"
    "们与这个吗会给让说着过为对从还么谁请"  # the same in Simplified Chinese, where they differ
)
# Kept tiny and predictable: words that mean the same thing in this app's talk.
SYNONYMS = {"cost": "price", "fee": "price"}

# Letters only: the marks among them (゛゜゠・, and × ÷ among the Latin letters) separate words, as
# they do for FTS5's tokenizer, which would otherwise split an index word Python kept whole.
CJK_LETTERS = "\u3040-\u3098\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
LATIN_LETTERS = "a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_TOKEN = re.compile(
    r"(?P<num>[$€£¥]?\d+(?:[.,:/-]\d+)*%?)"
    rf"|(?P<cjk>[{CJK_LETTERS}]+)"
    rf"|(?P<word>[{LATIN_LETTERS}][0-9{LATIN_LETTERS}]*(?:'[a-z]+)?)"
)


_STEMMER = Stemmer.Stemmer("english")


# Every prompt build tokenizes memory items and recalled answers again, in the same vocabulary.
@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Snowball's English stemmer (PyStemmer): agree/agreed/agrees give "agre", price/pricing "price"."""
    if any(ch.isdigit() for ch in word) or len(word) <= 2:
        return word
    stemmed = _STEMMER.stemWord(word.replace("'", ""))
    return SYNONYMS.get(stemmed, stemmed)


JIEBA_PIECE = 200


@functools.cache
def _segmenter() -> jieba.Tokenizer:
    jieba.setLogLevel(logging.WARNING)  # it announces loading its dictionary on every start
    return jieba.Tokenizer()


def chinese_words(run: str) -> list[str]:
    """jieba's words of a run of Chinese characters, for the words of three or more characters:
    shorter ones are the bigrams every run gives anyway (and bigrams survive jieba's
    mistakes on Traditional Chinese, which its dictionary knows less well)."""
    return list(_chinese_words(run))


# The same text is read again and again while one task is worked on (indexed, extracted,
# summarized, searched, shown in its prompts): a task of 19,000 Chinese characters ran jieba over
# it 80 times, 4 s of CPU in all. jieba is the cost; its longer words are few, so they are kept.
@functools.lru_cache(maxsize=256)
def _chinese_words(run: str) -> tuple[str, ...]:
    # In pieces: jieba's search for words it does not know is quadratic in the run's length (a
    # 20,000-character run took a second of CPU at every prompt it was in).
    pieces = (run[start : start + JIEBA_PIECE] for start in range(0, len(run), JIEBA_PIECE))
    return tuple(word for piece in pieces for word in _segmenter().cut_for_search(piece) if len(word) >= 3)


def chinese_segments(run: str) -> list[str]:
    """A run of Chinese characters cut into jieba's words, every character in one of them."""
    pieces = (run[start : start + JIEBA_PIECE] for start in range(0, len(run), JIEBA_PIECE))
    return [word for piece in pieces for word in _segmenter().lcut(piece)]


def _says_nothing(word: str) -> bool:
    return all(char in CJK_STOPCHARS for char in word)


def tokens(text: str) -> list[str]:
    """Lowercased, stemmed words without stopwords; numbers and prices whole; CJK as chars,
    bigrams and jieba's longer words.

    CJK runs give their single characters (minus CJK_STOPCHARS) as well as
    overlapping bigrams: bigrams alone would never let "價格" find "定價".
    """
    text = text.lower().replace("\u2019", "'")
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        if match.group("num"):
            out.append(match.group("num"))
        elif run := match.group("cjk"):
            if len(run) == 1:
                if run not in CJK_STOPCHARS:  # as inside a longer run: the index and the query agree
                    out.append(run)
                continue
            for i, char in enumerate(run):
                if char not in CJK_STOPCHARS:
                    out.append(char)
                if i + 1 < len(run) and not _says_nothing(run[i : i + 2]):
                    out.append(run[i : i + 2])
            out.extend(word for word in chinese_words(run) if not _says_nothing(word))
        else:
            word = match.group("word")
            if word not in STOPWORDS:
                out.append(stem(word))
    return out


def similarity(a: str, b: str) -> float:
    """Cosine of token counts, in [0, 1]; 0.0 when either side has no tokens."""
    (ca, na), (cb, nb) = _counts(a), _counts(b)
    if not ca or not cb:
        return 0.0
    dot = sum(n * cb.get(t, 0) for t, n in ca.items())
    return min(1.0, dot / (na * nb))


# The same short texts are compared again and again: every stored memory item with each new
# candidate, every bullet of the summary with each new one at every fold. Tokenizing them each
# time was most of that work, and it grew with the memory and the summary.
@functools.lru_cache(maxsize=16_384)
def _counts(text: str) -> tuple[dict[str, int], float]:
    """A text's token counts and their Euclidean norm. Shared by every caller: never mutate."""
    counts = dict(Counter(tokens(text)))
    return counts, math.sqrt(sum(n * n for n in counts.values()))


class Index(Generic[K]):
    """BM25 (k1=1.2, b=0.75) over (key, text) documents, built once and queried many times.

    Keys should be unique; a repeated key counts as another document and
    scores as its best one. Ties are broken by a key's first position, so the
    same input always gives the same order.
    """

    def __init__(self, documents: Iterable[tuple[K, str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs: list[tuple[K, Counter[str], int]] = []
        self._position: dict[K, int] = {}
        df: Counter[str] = Counter()
        for key, text in documents:
            counts = Counter(tokens(text))
            self._docs.append((key, counts, sum(counts.values())))
            self._position.setdefault(key, len(self._position))
            df.update(counts.keys())
        n = len(self._docs)
        self._avg_len = (sum(length for _, _, length in self._docs) / n) if n else 0.0
        # Lucene's idf: never negative, so a very common term still helps a little.
        self._idf = {term: math.log(1 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def score(self, query: str) -> dict[K, float]:
        """Keys of the documents sharing at least one query term, with their BM25 score (> 0)."""
        terms = [t for t in dict.fromkeys(tokens(query)) if t in self._idf]
        scores: dict[K, float] = {}
        if not terms or not self._avg_len:
            return scores
        for key, counts, length in self._docs:
            total = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * length / self._avg_len)
                    total += self._idf[term] * tf * (self.k1 + 1) / (tf + norm)
            if total > 0 and total > scores.get(key, 0.0):
                scores[key] = total
        return scores

    def top(self, query: str, k: int = 5, *, min_score: float = 0.0) -> list[tuple[K, float]]:
        """The best k documents scoring at least min_score: by score, then by key order."""
        scored = [(key, s) for key, s in self.score(query).items() if s >= min_score]
        scored.sort(key=lambda item: (-item[1], self._position[item[0]]))
        return scored[: max(k, 0)]


# Sentences -------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*•+]\s+|\d{1,3}[.)]\s+)+")
# Possessive, and English only from the start of a run of marks: a run of 20,000 dots with no
# space after it was tried again from each of its dots (seconds of a frozen server).
_BOUNDARY = re.compile(r"(?<![.!?])[.!?]++[\"'”’)\]]*+(?=\s)|[。！？]++[」』”’）)]*+")


def split_sentences(text: str) -> list[str]:
    """Sentences of prose or markdown: code blocks, table rows and list markers are left out.

    English ends at .!? followed by a space ("$29.50" stays whole), Chinese at
    。！？; every line break also ends a sentence (list items are sentences).
    """
    out: list[str] = []
    for line in _FENCE.sub("\n", text).splitlines():
        line = _MARKER.sub("", line).replace("**", "").replace("__", "").strip()
        if not line or line.startswith("|") or set(line) <= set("-=*_ "):
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            piece = line[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        if rest := line[start:].strip():
            out.append(rest)
    return out


_LEAD = re.compile(
    r"^(?:(?:hi|hello|hey|dear|thanks|thank you(?: so much| very much)?|thx)(?:\s+[a-z]+)?"
    r"|sure(?: thing)?|ok(?:ay)?|great|perfect|cool|awesome|nice|got it|sounds good|of course|certainly"
    r"|absolutely|alright|all right|yes|yep|yeah|good (?:morning|afternoon|evening)"
    # "Here it is: the budget is $5,000" says what comes after it ("Here it is!" alone is chatter).
    r"|here (?:it is|you go|they are)"
    r"|好的|好啊|好|謝謝(?:你|您)?|感謝|沒問題|收到|了解|瞭解|當然|你好|您好|嗨|哈囉|是的)"
    r"(?:\s*[,.!~;:，。！、～]+\s*|\s*$)",
    re.I,
)
# Whom it is said to, in a shared channel: "@theo remember that …" asks what "remember that …" does.
_ADDRESSED = re.compile(r"^(?:@[\w.-]+[\s,:，：]*)+")
# Connectives that open a sentence without adding to it ("Also, should we…").
_CONNECTIVE = re.compile(r"^(?:also|and|so|plus|btw|by the way|oh|然後|另外|還有|順便)(?:\s*[,，]\s*|\s+)", re.I)
_WHOLE = re.compile(
    r"^(?:here you go|here it is|hope (?:this|that) helps|let me know|happy to help|glad to help"
    r"|feel free|no problem|anytime|you're welcome|my pleasure|(?:thanks|thank you)\b.*\bfor\b"
    r"|不客氣|希望(?:這|對你|對您)?(?:有所)?(?:有)?幫助|如果?有(?:任何)?(?:問題|需要)|很高興)"
    r"|^(?:here(?:'s| is| are)|以下是).*[:：]$",
    re.I,
)


def strip_chatter(sentence: str) -> str:
    """The sentence without leading pleasantries, or "" when nothing but chatter is left.

    "Thanks, we decided on $29." keeps "we decided on $29."; "Sure, here you go!" is chatter.
    """
    text = original = sentence.strip().replace("\u2019", "'")
    while (match := _LEAD.match(text) or _CONNECTIVE.match(text) or _ADDRESSED.match(text)) and match.end() > 0:
        text = text[match.end() :].lstrip()
    if not text or _WHOLE.match(text) or not tokens(text):
        return ""
    return text[0].upper() + text[1:] if text != original else text


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters: the head kept, cut at a word boundary when one is near, then "…"."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit * 2 // 3:
        head = head[:space]
    return head.rstrip(" ,;:-–—、，…") + "…"



# The search vocabulary ---------------------------------------------------------

# A number's punctuation, spelled in letters, so "$29.50" or "2026-05-04" stays one word for
# both search engines (FTS5's unicode61 tokenizer and PostgreSQL's parser split on it).
_NUMBER_MARKS = str.maketrans({".": "d", ":": "c", "/": "s", "-": "h", "%": "p", ",": None,
                               "$": None, "€": None, "£": None, "¥": None})
TERM_CHARS = 64


def search_term(token: str) -> str:
    """A token as the search index stores it: letters, digits and CJK only, at most TERM_CHARS."""
    return token.translate(_NUMBER_MARKS).replace("'", "")[:TERM_CHARS]


def search_terms(text: str) -> list[str]:
    """The words of `text` in the search index's vocabulary, in order (repeats kept: they are term frequency)."""
    return [term for term in map(search_term, tokens(text)) if term]


def matching_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Where `text` says one of these index words, as (start, end) character offsets, in order.

    For highlighting what matched: a word counts when its search term is one of `terms`; in a
    Chinese run, each occurrence of a Chinese term (a word or a bigram) counts.
    """
    wanted = set(terms)
    if not wanted:
        return []
    lowered = text.lower().replace("\u2019", "'")
    if len(lowered) != len(text):
        return []  # lowercasing moved the offsets (rare scripts): show the text without marks
    spans: list[tuple[int, int]] = []
    for match in _TOKEN.finditer(lowered):
        if run := match.group("cjk"):
            for term in wanted:
                if term[0] >= "\u3040" and term in run:
                    start = 0
                    while (found := run.find(term, start)) >= 0:
                        spans.append((match.start() + found, match.start() + found + len(term)))
                        start = found + 1
            continue
        word = match.group("num") or match.group("word")
        if word not in STOPWORDS and search_term(stem(word) if match.group("word") else word) in wanted:
            spans.append(match.span())
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def matching_words(text: str, terms: Iterable[str]) -> list[str]:
    """The distinct words of `text` that match these index words, as written, in order."""
    return list(dict.fromkeys(text[start:end] for start, end in matching_spans(text, terms)))
