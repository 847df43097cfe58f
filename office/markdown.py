"""Markdown to safe HTML: the one place user and model text becomes markup (pages and websocket frames).

Pure text in, text out; must not import models. Raw HTML in the text is shown as text, never passed
through, and the result is sanitized with nh3 whatever markdown produced.
"""

from __future__ import annotations

import threading

import markdown as markdown_lib
import nh3
from markdown.extensions import Extension

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


class _RawHtmlAsText(Extension):
    """Markdown passes raw HTML through by default; without these two steps `<b>` is text, as typed."""

    def extendMarkdown(self, md: markdown_lib.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


_local = threading.local()


def _converter() -> markdown_lib.Markdown:
    # A Markdown instance keeps state while it converts: one per thread, reset between uses.
    converter = getattr(_local, "converter", None)
    if converter is None:
        converter = _local.converter = markdown_lib.Markdown(
            extensions=[_RawHtmlAsText(), "fenced_code", "tables", "sane_lists", "nl2br"],
            output_format="html",
        )
    return converter.reset()


def render(text: str) -> str:
    """Sanitized HTML for a message's markdown; "" for no text. Safe to insert into a page as it is."""
    if not text or not text.strip():
        return ""
    return _cleaner.clean(_converter().convert(text))
