"""One message must not freeze the server: text that made a pattern backtrack (a pattern holds the
interpreter lock while it matches, so every connected person waited) goes through the text
handling of a task, a search result and the memory in well under a second.

The limit is generous, a hang detector rather than a speed target: each of these took 5 to 40
seconds before its pattern was fixed.
"""

import time

import pytest

from coworkers.providers import CompletionRequest
from coworkers.providers.offline import OfflineResponder
from coworkers.tools import TOOL_SPECS
from langchain_core.messages import HumanMessage
from office.views import plain_words
from sessions import extract, relevance, summarize
from sessions.history import Record, TaskRecords

HANG = 5.0  # seconds; the text below takes about 0.1 s now

HOSTILE = {
    "dots with no space after them": "." * 39_999 + "a",
    "exclamation marks": "!" * 40_000 + "x",
    "line breaks in one message": "zebraquux" + "\n" * 39_980 + "zebraquux",
    "spaces inside a phrase": "no " + " " * 39_990 + "longer",
    "fences": "```" * 13_000,
    "heading marks": "#" * 40_000 + "x",
    # Offered the document tool, a request to write one: verbs and kinds of document, no title.
    "writing words and document words": "write " * 1_700 + "doc " * 2_400,
    "draft after draft": "draft " * 3_300,
    "save with no as": "save " * 4_000,
}


def handled(text: str) -> list:
    """What a task, a search result and the memory do with a message's text."""
    task = TaskRecords(turn=1, records=(Record(id="u", previous=None, turn=1, role="user", content=text),))
    request = CompletionRequest(
        purpose="reply", system=("You are Mina.",), messages=(HumanMessage(text),), model="m", max_output_tokens=100,
        tools=TOOL_SPECS,  # as a reply's first step is offered them: the document and handoff requests are read
    )
    return [
        relevance.split_sentences(text),
        relevance.tokens(text),
        plain_words(text),
        summarize.summarize_extractively("", [task], max_chars=2_000, multi_speaker=False),
        OfflineResponder().complete(request).text,
        extract.extract_candidates(task),
    ]


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_message_is_handled_without_freezing(text):
    started = time.perf_counter()
    handled(text)
    assert time.perf_counter() - started < HANG


def test_a_sentence_of_thousands_of_characters_is_never_a_fact_in_memory():
    text = "價格定價會議決定" * 2_500  # "the pricing meeting decided", 20,000 characters without a stop
    task = TaskRecords(turn=1, records=(Record(id="u", previous=None, turn=1, role="user", content=text),))
    assert extract.extract_candidates(task) == []
    assert extract.extract_candidates(TaskRecords(turn=1, records=(Record(id="u", previous=None, turn=1, role="user", content="We decided the price is $29."),)))


def test_a_long_chinese_run_is_still_cut_into_words():
    words = relevance.chinese_words("我們的產品發表會" * 100)
    assert "發表會" in words


def test_arithmetic_and_sentences_survive_the_safer_patterns():
    assert plain_words("- **Ship** `it`\n\n\n> then 2 * 3") == "Ship it then 2 * 3"
    assert relevance.split_sentences("It costs $29.50. Ship it! Really?") == ["It costs $29.50.", "Ship it!", "Really?"]
