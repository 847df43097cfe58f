"""Markdown anyone can send costs each message a bounded moment, once: when it is stored, outside the
write transaction, never again when someone opens the channel page or connects."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client

from office import events, markdown, rendering
from office.models import RenderedMessage
from sessions import posting, services
from sessions.models import Message

from .conftest import assert_inert

HOSTILE = {
    "20,000 [": "[" * 20_000,
    "200,000 characters of *a": "*a" * 100_000,
    "deep nesting >>>>": ">" * 20_000 + " deep\n" + "".join(">" * n + " a\n" for n in range(1, 300)),
    "1 MB of prose": ("The launch moves to *May 4*; `ops` signs off. [Plan](https://example.com)\n\n" * 14_000)[:1_000_000],
    "1,000,000 &": "&" * 1_000_000,  # nh3 alone would take about a minute
    "as many ![ as markdown is still rendered for": "![" * (markdown.MAX_DELIMITERS // 2),
    "as many &amp; as markdown is still rendered for": "&amp; " * markdown.MAX_DELIMITERS,
    "nested lists": "".join("  " * n + "- item\n" for n in range(2_000)),
    # Every row is filled out to the header's 180 columns: 8.6 MB of HTML and 14 s once.
    "tables of wide headers and many short rows": (("|a" * 180 + "\n" + "|-" * 180 + "\n" + "|\n" * 364 + "\n") * 13)[:20_000],
}


@pytest.mark.parametrize("name", HOSTILE)
def test_it_renders_hostile_markdown_in_well_under_a_second(name):
    text = HOSTILE[name] + ' <script>alert("x")</script> [go](javascript:alert(1))'

    started = time.perf_counter()
    html = markdown.render(text)
    seconds = time.perf_counter() - started

    # A guard against quadratic regressions (the old renderer took 40 s for 20,000 `[`), not a benchmark.
    assert seconds < 2, f"{name}: {seconds:.2f} s"
    assert html
    assert_inert(html)
    assert "href=\"javascript" not in html.lower()


def test_it_still_renders_the_markdown_people_write():
    html = markdown.render("**Plan**\nline two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ `<b>`\n\n```\ncode\n```")

    assert "<strong>Plan</strong><br>" in html
    assert "<table>" in html and "<td>1</td>" in html
    assert "<s>old</s>" in html and "<code>&lt;b&gt;</code>" in html
    assert "<pre><code>code" in html


def test_a_message_of_tables_too_large_to_draw_is_shown_as_its_text():
    wide = ("|a" * 180 + "\n" + "|-" * 180 + "\n" + "|\n" * 364 + "\n") * 13

    html = markdown.render(wide)

    assert "<table>" not in html and len(html) < 2 * len(wide), "text, not 8.6 MB of empty cells"
    assert "<table>" in markdown.render("| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 200), "a long table people write still is one"


def test_it_shows_a_very_long_message_as_plain_text_with_its_line_breaks():
    text = ("**not bold** <b>x</b>\n" * 5_000) + "\nlast"

    html = markdown.render(text)

    assert len(text) > markdown.MAX_MARKDOWN_CHARS
    assert html.startswith("<p>**not bold** &lt;b&gt;x&lt;/b&gt;<br>") and html.endswith("<p>last</p>")



def test_a_letter_buried_in_stacked_accents_keeps_a_few_and_real_accents_are_untouched():
    zalgo = "H" + "\u0301\u0316\u0350" * 30 + "i " + "e" + "\u0302\u0301" + " " + "\u05e9\u05c1\u05b8"  # Zalgo, then Vietnamese ế and Hebrew שָׁ decomposed
    huge = markdown.render("a" + "\u0301" * 900_000)

    html = markdown.render(zalgo)

    assert html == "<p>H" + "\u0301\u0316\u0350\u0301" + "i e\u0302\u0301 \u05e9\u05c1\u05b8</p>"
    assert huge == "<p>a" + "\u0301" * markdown.MAX_STACKED_MARKS + "</p>"
    assert markdown.render("Ti\u1ebfng Vi\u1ec7t") == "<p>Ti\u1ebfng Vi\u1ec7t</p>"

@pytest.fixture
def renders(monkeypatch) -> list[bool]:
    """Every markdown render, with whether a transaction was open at that moment."""
    calls: list[bool] = []
    real = markdown.render

    def spy(text: str) -> str:
        calls.append(connection.in_atomic_block)
        return real(text)

    monkeypatch.setattr(markdown, "render", spy)
    monkeypatch.setattr(rendering, "render", spy)
    monkeypatch.setattr(events.markdown, "render", spy)
    return calls


@pytest.mark.django_db(transaction=True)
def test_it_renders_an_instruction_and_a_reply_before_their_transactions_begin(direct_channel, mina, no_background, renders):
    task = posting.post_instruction(channel=direct_channel, text="Draft the **launch** email", coworker=mina)
    services.append_message(session=task.session, turn=task.turn, role=Message.Role.ASSISTANT, content="Done.", coworker="mina")

    assert renders == [False, False], "rendered once each, with no transaction (and no SQLite write lock) open"
    assert RenderedMessage.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_it_never_renders_history_again_when_someone_connects_or_opens_the_page(direct_channel, mina, bob, renders):
    session = services.get_active_session(channel=direct_channel)
    for turn in range(1, 4):
        services.start_task(session=session, instruction=f"Instruction {turn}")
        services.append_message(session=session, turn=turn, role=Message.Role.ASSISTANT, content=f"**Reply** {turn}", coworker="mina")
    renders.clear()
    client = Client()
    client.force_login(bob)

    frames = [events.session_frame(direct_channel.pk) for _ in range(3)]
    pages = [client.get(f"/c/{direct_channel.pk}/").content.decode() for _ in range(3)]

    assert renders == []
    assert frames[0]["messages"][-1]["html"] == "<p><strong>Reply</strong> 3</p>"
    assert all("<strong>Reply</strong> 3" in page for page in pages)


@pytest.mark.django_db(transaction=True)
def test_it_renders_a_message_stored_without_html_once_and_keeps_it(direct_channel, mina, bob, renders):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Old *instruction*")
    services.append_message(session=session, turn=1, role=Message.Role.ASSISTANT, content="Old **reply**", coworker="mina")
    RenderedMessage.objects.all().delete()  # as a message stored before migration office 0005
    renders.clear()
    client = Client()
    client.force_login(bob)

    first = events.session_frame(direct_channel.pk)
    events.session_frame(direct_channel.pk)
    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    assert renders == [False, False], "each message rendered once, outside any transaction"
    assert [m["html"] for m in first["messages"]] == ["<p>Old <em>instruction</em></p>", "<p>Old <strong>reply</strong></p>"]
    assert "Old <strong>reply</strong>" in page
    assert RenderedMessage.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_it_renders_an_import_before_its_transaction_and_stores_every_message(direct_channel, renders):
    lines = [
        '{"id":"a","previous":null,"turn":1,"role":"user","content":"Plan *it*","coworker":null,"created_at":null}',
        '{"id":"b","previous":"a","turn":1,"role":"assistant","content":"**Done**","coworker":"mina","created_at":null}',
    ]

    result = services.import_session(channel=direct_channel, data="\n".join(lines) + "\n")
    renders_during_import = list(renders)
    frame = events.session_frame(direct_channel.pk)

    assert renders_during_import == [False, False]
    assert len(renders) == 2, "the session frame read what the import stored"
    assert [m["html"] for m in frame["messages"]] == ["<p>Plan <em>it</em></p>", "<p><strong>Done</strong></p>"]
    assert frame["session"]["id"] == result.session.pk



@pytest.mark.django_db(transaction=True)
def test_an_import_cuts_its_words_for_the_search_before_its_transaction_and_finds_them(direct_channel, monkeypatch):
    from sessions import relevance, search

    cut_in_transaction = []
    real = relevance.search_terms
    monkeypatch.setattr(relevance, "search_terms", lambda text: cut_in_transaction.append(connection.in_atomic_block) or real(text))
    lines = [
        '{"id":"a","previous":null,"turn":1,"role":"user","content":"我們的團隊旅遊要去哪裡？","coworker":null,"created_at":null}',
        '{"id":"b","previous":"a","turn":1,"role":"assistant","content":"我們決定在湖景小屋舉辦團隊旅遊。","coworker":"mina","created_at":null}',
    ]

    services.import_session(channel=direct_channel, data="\n".join(lines) + "\n")

    assert cut_in_transaction == [False, False]
    assert [hit.role for hit in search.search("湖景小屋", channel_ids=[direct_channel.pk], limit=5)] == ["assistant"]

def test_a_link_within_the_office_opens_in_place_and_one_to_another_site_in_a_new_tab():
    html = markdown.render("[task 2](/t/5/), [docs](https://example.com) and [elsewhere](//example.com/x)")

    assert '<a href="/t/5/">task 2</a>' in html
    assert '<a href="https://example.com" target="_blank" rel="noopener noreferrer">docs</a>' in html
    assert '<a href="//example.com/x" target="_blank" rel="noopener noreferrer">elsewhere</a>' in html
