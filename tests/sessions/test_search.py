"""The history's search engine, as the database runs it (SQLite FTS5 by default, PostgreSQL's GIN
index when DATABASE_URL is set): what is indexed, when, and what a search finds."""

import pytest

from sessions import relevance, search, services
from sessions.models import Message, SearchEntry

pytestmark = pytest.mark.django_db


def said(channel, instruction: str, reply: str = ""):
    session = services.get_active_session(channel=channel)
    task, first = services.start_task(session=session, instruction=instruction, coworker="mina")
    if reply:
        services.append_message(session=session, turn=task.turn, role="assistant", content=reply, coworker="mina")
    return task, first


def found(channel, query: str, **kwargs) -> list[str]:
    hits = search.search(query, channel_ids=[channel.pk], limit=20, **kwargs)
    return [Message.objects.get(pk=h.message_id).content for h in hits]


def test_a_message_is_searchable_the_moment_it_is_stored(direct_channel):
    said(direct_channel, "Which venue did we pick for the offsite?", "We picked Lakeview Lodge.")

    assert found(direct_channel, "lakeview") == ["We picked Lakeview Lodge."]
    assert found(direct_channel, "venues") == ["Which venue did we pick for the offsite?"], "stems match"


def test_notices_are_never_indexed(direct_channel):
    task, _ = said(direct_channel, "Hello")
    services.append_message(session=task.session, turn=task.turn, role="notice", content="💡 This conversation is long.")

    assert found(direct_channel, "conversation long") == []
    assert SearchEntry.objects.filter(role="notice").count() == 0


def test_tool_calls_and_results_are_indexed_the_results_in_digest_form(direct_channel):
    from sessions.history import ToolCall

    task, _ = said(direct_channel, "Read the plan")
    session = task.session
    call = ToolCall(id="toolu_1", name="read_document", args={"title": "Quarterly roadmap"})
    services.append_message(session=session, turn=task.turn, role="assistant", tool_calls=[call], coworker="mina")
    result = "Roadmap\n" + "filler " * 200 + "zanzibar"
    services.append_message(session=session, turn=task.turn, role="tool", content=result, tool_call_id="toolu_1", coworker="mina")

    assert len(found(direct_channel, "quarterly roadmap")) == 2  # the call's arguments and the result's head
    assert found(direct_channel, "zanzibar") == [], "past its head, a tool result is not indexed"


def test_an_import_indexes_as_it_writes(direct_channel):
    from sessions import history, jsonl

    records = [
        history.Record(id="1", previous=None, turn=1, role="user", content="What does the Team plan cost?"),
        history.Record(id="2", previous="1", turn=1, role="assistant", content="$29 a month.", coworker="mina"),
    ]
    services.import_session(channel=direct_channel, data=jsonl.dump_records(records))

    assert found(direct_channel, "team plan") == ["What does the Team plan cost?"]
    assert found(direct_channel, "$29") == ["$29 a month."], "numbers are words"


def test_chinese_is_found_by_its_words(direct_channel):
    said(direct_channel, "團隊旅遊去哪裡？", "我們決定在湖景小屋舉辦團隊旅遊。")

    assert found(direct_channel, "湖景小屋在哪")[0] == "我們決定在湖景小屋舉辦團隊旅遊。"
    assert found(direct_channel, "小屋") == ["我們決定在湖景小屋舉辦團隊旅遊。"]


def test_a_long_question_searches_its_rarest_words_not_its_first(direct_channel):
    """A Chinese question of 30 characters has some 50 index words; its subject may come at the
    end ("…where did the two-day trip out of town go in the end: the staff retreat?"), past the
    first QUERY_TERMS of them."""
    for n in range(6):  # the question's opening words are said everywhere
        said(direct_channel, f"大家一起去外地開會兩天，第{n}次討論預算。")
    said(direct_channel, "員工共識營訂在樺樹庭院。")
    question = "大家一起去外地開會兩天的那個活動最後選了什麼地點，是員工共識營嗎？"
    first_words = list(dict.fromkeys(relevance.search_terms(question)))[: search.QUERY_TERMS]
    assert "員工" not in first_words, "the subject is past the question's first words"

    assert found(direct_channel, question)[0] == "員工共識營訂在樺樹庭院。"


def test_a_search_reads_only_the_channels_it_is_given(direct_channel, main_channel):
    said(direct_channel, "The offsite is at Lakeview Lodge.")
    said(main_channel, "Lakeview Lodge is booked for the whole team.")

    assert found(direct_channel, "lakeview lodge") == ["The offsite is at Lakeview Lodge."]
    both = search.search("lakeview", channel_ids=[direct_channel.pk, main_channel.pk], limit=5)
    assert {h.channel_id for h in both} == {direct_channel.pk, main_channel.pk}


def test_it_leaves_out_the_tasks_after_a_turn_of_one_session(direct_channel):
    for turn in range(1, 5):
        said(direct_channel, f"Venue note {turn}: Lakeview")
    session = services.get_active_session(channel=direct_channel)

    hits = search.search("lakeview venue", channel_ids=[direct_channel.pk], limit=10, leave_out=(session.pk, 2))

    assert sorted(h.turn for h in hits) == [1, 2]


def test_a_very_common_word_is_left_out_unless_nothing_else_is_left(direct_channel, monkeypatch):
    monkeypatch.setattr(search, "COMMON_WORD_MESSAGES", 3)
    for n in range(5):
        said(direct_channel, f"Weekly update number {n}")
    said(direct_channel, "Weekly update: the zeppelin order shipped")

    assert found(direct_channel, "weekly zeppelin") == ["Weekly update: the zeppelin order shipped"]
    # When every word is common, the rarest ones still search, in their newest messages only.
    assert set(found(direct_channel, "weekly update")) == {
        "Weekly update: the zeppelin order shipped", "Weekly update number 4", "Weekly update number 3"
    }


def test_a_query_of_nothing_but_common_words_finds_only_a_few_messages(direct_channel, monkeypatch):
    monkeypatch.setattr(search, "COMMON_WORD_MESSAGES", 5)
    monkeypatch.setattr(search, "COMMON_QUERY_HITS", 2)
    for n in range(8):
        said(direct_channel, f"Weekly update number {n}")

    assert len(search.search("weekly update", channel_ids=[direct_channel.pk], limit=50)) == 2
    assert len(search.search("weekly number 7", channel_ids=[direct_channel.pk], limit=50)) == 1, "a rare word: no cap"


def test_the_best_match_comes_first(direct_channel):
    said(direct_channel, "The plan for the launch party")
    said(direct_channel, "The Team plan costs $29: the Team plan price is final")

    assert found(direct_channel, "team plan price")[0].startswith("The Team plan costs $29")


def test_a_query_of_punctuation_or_stopwords_finds_nothing_and_raises_nothing(direct_channel):
    said(direct_channel, "Anything")

    for query in ("", "   ", "the of and", '"*" OR NEAR(', "' | !", "\x00"):
        assert search.search(query, channel_ids=[direct_channel.pk], limit=5) == []


def test_index_words_carry_their_channel_so_channels_never_share_a_vocabulary(direct_channel):
    said(direct_channel, "Lakeview")

    [entry] = SearchEntry.objects.filter(channel=direct_channel)

    assert entry.terms == search.scoped(direct_channel.pk, relevance.search_terms("Lakeview")[0])


def test_every_index_word_is_one_word_for_fts5():
    """FTS5 splits on marks Python once kept inside a word (× ÷ ・ ゛): such an index word was
    stored as two FTS5 words and never found. Every letter of these scripts, inside a word."""
    import sqlite3

    fts = sqlite3.connect(":memory:")
    fts.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 0')")  # as migration 0007
    fts.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    cut = []
    for low, high in [(0xC0, 0x24F), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF)]:
        for point in range(low, high + 1):
            for term in set(relevance.search_terms(f"q{chr(point)}z" if point < 0x3000 else chr(point) * 2)):
                fts.execute("DELETE FROM t")
                fts.execute("INSERT INTO t VALUES (?)", (search.scoped(1, term),))
                # One word, all of it (FTS5 folds some letters, ſ to s, in queries alike).
                found = [len(word) for (word,) in fts.execute("SELECT term FROM v")]
                if found != [len(search.scoped(1, term))]:
                    cut.append(f"U+{point:04X}")
    assert cut == []
