"""Markdown to safe HTML: the one place user and model text becomes markup (pages and websocket frames).

Pure text in, text out; must not import models. Raw HTML in the text is shown as text, never passed
through, and the result is sanitized with nh3 whatever markdown produced.

The renderer is markdown-it-py (CommonMark) because its parser is linear in the text: Python-Markdown
took 40 s of CPU for 20,000 `[` and 42 s for 5 MB of prose, while one render held a database thread.
Linear is not free: markdown-it-py spends up to ~70 µs a character on runs of delimiters such as `![`,
and nh3 is quadratic in the `&` of one text node (400,000 of them: 5 s). So text longer than
MAX_MARKDOWN_CHARS, or with more than MAX_DELIMITERS inline delimiters, is shown as plain text,
escaped here and not passed through nh3: a bounded cost for any one message. Each message is
rendered once, when it is stored (office/rendering.py), never per page view or connect.

Fenced code that names a language is highlighted by Pygments, on the server: the only markup it adds
is `<span class="…">` with Pygments' short token class names, the only classes nh3 lets through (on
`span`, nowhere else). Only the common languages in HIGHLIGHTED are lexed (never a guess: guessing
runs every lexer), and at most MAX_HIGHLIGHT_CHARS of code and MAX_HIGHLIGHT_SECONDS a message; the
rest stays plain code.
"""

from __future__ import annotations

import functools
import html
import re
import threading
import time

import nh3
from markdown_it import MarkdownIt
from pygments import format as pygments_format
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

# Above either, a message is shown as escaped text with its line breaks: rendering it as markdown
# could cost seconds. Model replies and instructions (at most 20,000 characters) are far below both.
MAX_MARKDOWN_CHARS = 50_000
MAX_DELIMITERS = 10_000
# A table's every row is filled out to its header's columns: 13 tables of 180 columns and 364
# one-character rows in 18,863 characters made 8.6 MB of HTML, 14 s and 1.2 GB to render. Past
# this many cells in a message (a chat table has tens), it is shown as text.
MAX_TABLE_CELLS = 5_000
# The characters the inline parser stacks up and matches (links, images, emphasis, code, entities).
_DELIMITERS = "[]!*_~`<&\\"
# Code highlighted per message, in characters: Pygments' lexers are regular expressions, and their
# output is several times the code's length for nh3 to read.
MAX_HIGHLIGHT_CHARS = 20_000
# And in time: several lexers are quadratic in plain input (C#'s on "a\n" repeated took 46 s for
# 19,000 characters; C, C++ and Java on blank lines, make on "0"), and a render holds a thread the
# sockets share. Past this many seconds a message's code stays plain code; the tokens are counted
# out as they come, so it stops within a token or so of the limit. The seconds are the rendering
# thread's own CPU time: on a busy machine the clock's ran out before a small block was highlighted.
# (ini and console are not highlighted at all: one token of theirs can take seconds, '= ' repeated
# 9,999 times 5.5 s.)
MAX_HIGHLIGHT_SECONDS = 0.25
_CHECK_EVERY = 32  # tokens between looks at the clock
# The languages people ask a coworker about, by the names (and aliases) fences use. Other names stay
# plain code: fewer lexers, fewer regular expressions anyone can feed text to.
HIGHLIGHTED = {
    "bash", "sh", "shell", "zsh", "c", "cpp", "c++", "csharp", "c#", "cs", "css", "diff", "patch",
    "go", "golang", "html", "xml", "java", "javascript", "js", "jsx", "json", "kotlin", "markdown", "md",
    "php", "python", "py", "python3", "ruby", "rb", "rust", "rs", "scss", "sql", "swift", "toml",
    "typescript", "ts", "tsx", "yaml", "yml", "dockerfile", "docker", "make", "makefile",
}  # fmt: skip
# Combining marks stacked on one letter ("Zalgo" text: a letter with 50 accents) climb out of their
# line over the messages around them. No writing system stacks more than a few of these generic
# diacritics (Vietnamese two), so past MAX_STACKED_MARKS in a row the rest are not shown. Only the
# generic blocks: Hebrew, Arabic and Indic marks are never touched. One character class, so linear.
MAX_STACKED_MARKS = 4
_STACKED_MARKS = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]{%d,}" % (MAX_STACKED_MARKS + 1)
)
# Pygments' token classes ("k" keyword, "s2" string, "c1" comment…): what its HTML may carry.
TOKEN_CLASSES = {name for name in STANDARD_TYPES.values() if name}

# What chat text needs: paragraphs, emphasis, code, lists, quotes, headings, tables, links.
# No images (a tracking pixel in a model's reply is still a request from the user's browser),
# no styles, no ids, and no classes but Pygments' token classes on `span`.
ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "del", "s", "code", "pre", "blockquote", "span",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}

_cleaner = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    allowed_classes={"span": TOKEN_CLASSES},
    url_schemes=URL_SCHEMES,
    link_rel="noopener noreferrer",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    strip_comments=True,
)

# A link within the office ("/t/12/", a handoff's task) opens where the person is, as the page's
# own links do; nh3 gave every link a new tab. Read from nh3's output, whose attributes come in
# this order; "//host" is another site and keeps its new tab.
_OWN_LINK = re.compile(r'(<a href="/(?!/)[^"]*") target="_blank" rel="noopener noreferrer">')

_local = threading.local()
# nowrap: only the token spans; markdown-it wraps them in <pre><code>.
_formatter = HtmlFormatter(nowrap=True)


def _parser() -> MarkdownIt:
    # A MarkdownIt instance is not documented as thread-safe: one per thread.
    parser = getattr(_local, "parser", None)
    if parser is None:
        # html=False: `<b>` is text, as typed. breaks=True: a line break in a chat message is one
        # on screen. Tables and strikethrough (GFM) are linear like the rest; maxNesting (20 in the
        # commonmark preset) bounds `>>>>…` and nested lists.
        parser = _local.parser = MarkdownIt(
            "commonmark", {"html": False, "breaks": True, "highlight": _highlight}
        ).enable(["table", "strikethrough"])
    return parser


def _highlight(code: str, language: str, attrs: str) -> str:
    """Pygments' spans for one fenced block, or "" (markdown-it then escapes it as plain code).

    The budget is per render: `render` sets it on this thread before parsing."""
    name = language.strip().lower()
    if name not in HIGHLIGHTED or len(code) > getattr(_local, "highlight_left", 0):
        return ""
    try:
        lexer = get_lexer_by_name(name, stripnl=False)
    except ClassNotFound:
        return ""
    _local.highlight_left -= len(code)
    tokens = []
    for count, token in enumerate(lexer.get_tokens(code)):
        tokens.append(token)
        if count % _CHECK_EVERY == 0 and time.thread_time() > _local.highlight_until:
            _local.highlight_left = 0  # and the message's other blocks with it
            return ""
    return pygments_format(tokens, _formatter)


def _too_costly(text: str) -> bool:
    return (
        len(text) > MAX_MARKDOWN_CHARS
        or sum(map(text.count, _DELIMITERS)) > MAX_DELIMITERS
        or table_cells(text) > MAX_TABLE_CELLS
    )


def table_cells(text: str) -> int:
    """At most how many cells the text's tables make: each delimiter row ("|---|:-:|") times the
    lines of its table (the header, then every line up to a blank one). An upper bound, counted
    without a regular expression, in one pass."""
    lines = text.split("\n")
    cells, i = 0, 1
    while i < len(lines):
        row = lines[i].strip()
        if "-" in row and ("|" in row or "|" in lines[i - 1]) and not row.strip("|-: \t"):
            columns = max(row.strip("|").count("|") + 1, lines[i - 1].strip().strip("|").count("|") + 1)
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            cells += columns * (end - i)  # the header and the rows after the delimiter row
            i = end
        i += 1
    return cells


def _plain(text: str) -> str:
    """Paragraphs and line breaks of escaped text: safe by construction (every `<` and `&` of the text
    is escaped, and the only tags are these two), which is why it skips nh3."""
    paragraphs = (part.strip("\n") for part in text.replace("\r\n", "\n").split("\n\n"))
    escaped = (html.escape(part, quote=False).replace("\x00", "\ufffd").replace("\n", "<br>") for part in paragraphs)
    return "".join(f"<p>{part}</p>" for part in escaped if part)


# Routing reads an instruction's prose up to three times (the mentions, the outsiders it names,
# the offline router), and parsing 20,000 characters of delimiters takes about 0.15 s.
@functools.lru_cache(maxsize=64)
def prose(text: str) -> str:
    """The text's words outside its code, as a reader sees them rendered: fenced and indented code
    blocks and inline code spans (of any number of backticks, across lines) left out, a space
    where each was. Text too costly to render as markdown is shown plain, code and all, so all of
    it is prose."""
    text = few_marks(text)
    if _too_costly(text):
        return text
    words: list[str] = []
    for token in _parser().parse(text):
        if token.type == "inline":
            for child in token.children or ():
                words.append(child.content if child.type == "text" else " ")
        words.append(" ")  # between blocks; a fence or an indented block is never inline
    return "".join(words)


_MARKDOWN_MARKS = re.compile(r"([\\`*_\[\]()<>])")  # what means something inside a line


def literal(text: str) -> str:
    """Text to put inside markdown as itself: a project named "x](https://evil.example)" is a name
    in a link's words, not the end of the link and another one."""
    return _MARKDOWN_MARKS.sub(r"\\\1", text)


def few_marks(text: str) -> str:
    """The text with at most MAX_STACKED_MARKS generic combining marks in a row."""
    return _STACKED_MARKS.sub(lambda run: run.group()[:MAX_STACKED_MARKS], text)


def render(text: str) -> str:
    """Sanitized HTML for a message's markdown; "" for no text. Safe to insert into a page as it is."""
    if not text or not text.strip():
        return ""
    text = few_marks(text)
    if _too_costly(text):
        return _plain(text)
    _local.highlight_left = MAX_HIGHLIGHT_CHARS
    _local.highlight_until = time.thread_time() + MAX_HIGHLIGHT_SECONDS
    return _OWN_LINK.sub(r"\1>", _cleaner.clean(_parser().render(text))).rstrip("\n")
