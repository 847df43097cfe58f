"""Code in replies is highlighted on the server by Pygments, and stays inert: the only markup it adds
is spans with Pygments' token classes, and nothing else gets a class, a style or a script through."""

from __future__ import annotations

import re
import time

import pytest

from office import markdown

from .conftest import assert_inert

HOSTILE_CODE = [
    "```html\n<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n```",
    "```python\nx = '</code></pre><script>alert(1)</script>'\n```",
    "```javascript\ndocument.body.innerHTML = '<svg onload=alert(1)>'\n```",
    '```python" onclick="alert(1)\nprint("alert(1)")\n```',
    "```js\n" + "<span class=\"k\" style=\"position:fixed\" onclick=\"alert(1)\">x</span>\n" + "```",
]


def classes_in(html: str) -> set[str]:
    return {name for value in re.findall(r'class="([^"]*)"', html) for name in value.split()}


def test_it_highlights_a_fenced_block_that_names_its_language():
    html = markdown.render("Try this:\n\n```python\ndef launch(day):\n    return 'May 4'  # fixed\n```")

    assert '<span class="k">def</span>' in html
    assert '<span class="nf">launch</span>' in html
    assert '<span class="s1">' in html and "May 4" in html
    assert '<span class="c1"># fixed</span>' in html
    assert html.count("<pre><code>") == 1


def test_code_without_a_known_language_stays_plain_code():
    for text in ("```\nprint(1)\n```", "```brainfuck-ish\nprint(1)\n```", "    print(1)\n"):
        html = markdown.render(text)
        assert "<span" not in html, text
        assert "print(1)" in html


@pytest.mark.parametrize("text", HOSTILE_CODE)
def test_a_hostile_code_block_stays_inert_text(text):
    html = markdown.render(text)

    assert_inert(html)
    assert "style=" not in html
    # Only Pygments' own token classes, and only on spans (no "language-…" hook, nothing made up).
    assert classes_in(html) <= markdown.TOKEN_CLASSES
    assert not re.search(r"<(?!span\b)\w+[^>]*\sclass=", html)
    assert "alert(1)" in html, "the code is still shown, as text"


def test_a_class_typed_into_prose_is_not_kept():
    # Raw HTML is text (html=False); nothing in prose can reach nh3 as a span with a class.
    html = markdown.render('<span class="k">keyword?</span> and **bold**')

    assert '<span class="k">' not in html
    assert "&lt;span" in html


def test_highlighting_is_bounded_per_message(monkeypatch):
    # The bound in characters, alone: on a busy machine the time limit (tested below) could stop
    # the first block before the character limit is reached.
    monkeypatch.setattr(markdown, "MAX_HIGHLIGHT_SECONDS", 60)
    block = "```python\n" + "x = 1  # a comment\n" * 600 + "```\n\n"  # about 11,000 characters
    text = block * 4

    html = markdown.render(text)

    blocks = html.split("<pre><code>")[1:]
    assert len(blocks) == 4
    highlighted = [b for b in blocks if '<span class="' in b]
    # MAX_HIGHLIGHT_CHARS of code: the first blocks are highlighted, the rest shown as plain code.
    assert 1 <= len(highlighted) < 4
    assert "x = 1  # a comment" in blocks[-1]


@pytest.mark.parametrize(
    "language, unit",
    [("csharp", "a\n"), ("c", "\n"), ("cpp", "\n"), ("java", "\n"), ("make", "0"), ("markdown", "\n")],
)
def test_a_lexer_slow_on_plain_input_stops_in_time_and_the_code_stays_plain(language, unit):
    # About 19,000 characters: before the time limit, C#'s lexer took 46 s on these, the others 10 to 23.
    code = unit * (19_000 // len(unit))
    text = f"```{language}\n{code}```"

    started = time.thread_time()  # the limit is the rendering thread's CPU time
    html = markdown.render(text)
    seconds = time.thread_time() - started

    assert seconds < 2, f"{seconds:.2f} s of CPU"
    assert html.count("<pre><code>") == 1 and html.count("\n") >= code.count("\n") - 1, "the code is all there"
