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
"""

from __future__ import annotations

import html
import threading

import nh3
from markdown_it import MarkdownIt

# Above either, a message is shown as escaped text with its line breaks: rendering it as markdown
# could cost seconds. Model replies and instructions (at most 20,000 characters) are far below both.
MAX_MARKDOWN_CHARS = 50_000
MAX_DELIMITERS = 10_000
# The characters the inline parser stacks up and matches (links, images, emphasis, code, entities).
_DELIMITERS = "[]!*_~`<&\\"

# What chat text needs: paragraphs, emphasis, code, lists, quotes, headings, tables, links.
# No images (a tracking pixel in a model's reply is still a request from the user's browser),
# no classes, no styles, no ids.
ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}

_cleaner = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    url_schemes=URL_SCHEMES,
    link_rel="noopener noreferrer",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    strip_comments=True,
)

_local = threading.local()


def _parser() -> MarkdownIt:
    # A MarkdownIt instance is not documented as thread-safe: one per thread.
    parser = getattr(_local, "parser", None)
    if parser is None:
        # html=False: `<b>` is text, as typed. breaks=True: a line break in a chat message is one
        # on screen. Tables and strikethrough (GFM) are linear like the rest; maxNesting (20 in the
        # commonmark preset) bounds `>>>>…` and nested lists.
        parser = _local.parser = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
            ["table", "strikethrough"]
        )
    return parser


def _too_costly(text: str) -> bool:
    return len(text) > MAX_MARKDOWN_CHARS or sum(map(text.count, _DELIMITERS)) > MAX_DELIMITERS


def _plain(text: str) -> str:
    """Paragraphs and line breaks of escaped text: safe by construction (every `<` and `&` of the text
    is escaped, and the only tags are these two), which is why it skips nh3."""
    paragraphs = (part.strip("\n") for part in text.replace("\r\n", "\n").split("\n\n"))
    escaped = (html.escape(part, quote=False).replace("\x00", "\ufffd").replace("\n", "<br>") for part in paragraphs)
    return "".join(f"<p>{part}</p>" for part in escaped if part)


def render(text: str) -> str:
    """Sanitized HTML for a message's markdown; "" for no text. Safe to insert into a page as it is."""
    if not text or not text.strip():
        return ""
    if _too_costly(text):
        return _plain(text)
    return _cleaner.clean(_parser().render(text)).rstrip("\n")
