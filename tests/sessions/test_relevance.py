from hypothesis import given
from hypothesis import strategies as st

from sessions import relevance
from sessions.relevance import Index, shorten, similarity, split_sentences, strip_chatter, tokens

TASKS = [
    (1, "Draft the launch email for the new landing page."),
    (2, "We agreed on $29 per month for the Team plan."),
    (3, "Schedule a meeting with the design team about the logo."),
    (4, "Which category has the most views in Q3?"),
]


# tokens


def test_it_keeps_prices_numbers_and_dates_whole():
    assert tokens("Launch on 2026-05-04: $29/month, budget 4,000, 15% off") == [
        "launch", "2026-05-04", "$29", "month", "budget", "4,000", "15%", "off",
    ]


def test_it_gives_inflections_of_one_word_the_same_token():
    assert len({*tokens("agree agreed agrees agreeing")}) == 1
    assert len({*tokens("price priced prices pricing")}) == 1
    assert tokens("planned") == tokens("plan")


def test_it_drops_english_stopwords_but_keeps_may_the_month():
    assert tokens("What did we do with the") == []
    assert "may" in tokens("The launch is on May 4")


def test_it_splits_chinese_into_characters_and_bigrams():
    assert tokens("定價") == ["定", "定價", "價"]
    assert tokens("價") == ["價"]


def test_chinese_question_words_and_modals_are_stopwords_as_english_ones_are():
    """"什麼時候可以開始" searches 時候 and 開始, as "When can we start" searches "start":
    a question's 什麼 and 可以 match every other question and request."""
    words = set(tokens("我們什麼時候可以開始？"))

    assert words.isdisjoint({"什", "麼", "什麼", "可", "可以", "我們", "們什"}) and {"時候", "開始", "始"} <= words
    assert "能力" in tokens("他的能力很強"), "a word with a character of its own still counts"
    assert tokens("When can we start?") == ["start"]
    assert tokens("誰") == [] and "誰" not in tokens("誰負責定價"), "alone as in a run: the query finds what the index holds"
    assert set(tokens("我们什么时候可以开始")).isdisjoint({"什么", "么", "可以", "我们"}), "in Simplified Chinese too"


# Index


def test_it_ranks_the_task_that_states_the_agreed_price_first():
    index = Index(TASKS)

    ranked = index.top("what price did we agree?", k=3)

    assert ranked[0][0] == 2
    assert all(key != 2 for key, _ in ranked[1:])


def test_it_finds_a_chinese_pricing_decision_from_a_related_word():
    index = Index([("a", "我們決定定價為每月 29 美元"), ("b", "請幫我寫新聞稿"), ("c", "下週開會討論標誌設計")])

    assert [key for key, _ in index.top("價格", k=3)] == ["a"]


def test_it_orders_equal_scores_by_document_order():
    index = Index([("z", "logo colours"), ("a", "logo colours"), ("m", "logo colours")])

    assert [key for key, _ in index.top("logo", k=3)] == ["z", "a", "m"]
    assert index.top("logo", k=3) == index.top("logo", k=3)


def test_it_returns_nothing_for_an_empty_or_stopword_query():
    index = Index(TASKS)

    assert index.score("") == {}
    assert index.top("", k=5) == []
    assert index.top("what did we", k=5) == []
    assert Index([]).top("price", k=5) == []


def test_it_respects_k_and_min_score():
    index = Index(TASKS)
    scores = index.score("launch email design team")

    assert len(index.top("launch email design team", k=1)) == 1
    cutoff = max(scores.values())
    assert [key for key, _ in index.top("launch email design team", k=5, min_score=cutoff)] == [
        max(scores, key=scores.get)
    ]


# similarity


def test_it_scores_identical_facts_1_and_unrelated_facts_0():
    assert similarity("The launch is on May 4", "Our launch is on May 4!") == 1.0
    assert similarity("The launch is on May 4", "Music has the most views") == 0.0
    assert similarity("", "anything") == 0.0


@given(st.text(max_size=80), st.text(max_size=80))
def test_similarity_is_symmetric_and_between_0_and_1(a, b):
    assert 0.0 <= similarity(a, b) <= 1.0
    assert similarity(a, b) == similarity(b, a)


# sentences and chatter


def test_it_splits_english_and_chinese_sentences_and_keeps_decimal_prices():
    text = "We agreed on $29.50 per month! Is that ok?\n- Launch May 4\n我們決定了。下一步呢？"

    assert split_sentences(text) == [
        "We agreed on $29.50 per month!", "Is that ok?", "Launch May 4", "我們決定了。", "下一步呢？",
    ]


def test_it_leaves_out_code_blocks_and_tables():
    assert split_sentences("Here:\n```\nx = 1. y = 2.\n```\n| a | b |\nDone.") == ["Here:", "Done."]


def test_it_strips_pleasantries_and_recognizes_pure_chatter():
    assert strip_chatter("Thanks!") == ""
    assert strip_chatter("Sure, here you go!") == ""
    assert strip_chatter("Here it is: the budget is $5,000.") == "The budget is $5,000."
    assert strip_chatter("@theo @mina, remember that the booth is 42") == "Remember that the booth is 42"
    assert strip_chatter("好的，謝謝") == ""
    assert strip_chatter("Thanks, we decided on $29.") == "We decided on $29."
    assert strip_chatter("Also, should we offer an annual plan?") == "Should we offer an annual plan?"
    assert strip_chatter("好看的設計") == "好看的設計"


@given(st.text(max_size=200), st.integers(min_value=0, max_value=120))
def test_shorten_never_exceeds_its_limit(text, limit):
    assert len(shorten(text, limit)) <= limit


def _exchange(instruction: str, answer: str):
    from sessions.prompts import _Exchange
    from sessions.search import scoped

    def words(text: str) -> frozenset[str]:
        return frozenset(scoped(1, term) for term in relevance.search_terms(text))

    return _Exchange(instruction, answer, "mina", None, words(instruction), words(answer))


def test_neighbouring_exchanges_continue_each_other_on_two_shared_words_in_either_language():
    from sessions.prompts import _continues

    venue = _exchange("團隊旅遊的場地還沒定。", "我推薦湖景小屋。")
    # 小, 景, 旅 and 場 again, but not one word of the first: 小組, 景點, 旅行, 場面.
    elsewhere = _exchange("小組去景點旅行好嗎？", "好，場面會很熱鬧。")
    booked = _exchange("那就訂湖景小屋辦團隊旅遊吧。", "好，我今天就寄出預約。")
    assert not _continues(venue, elsewhere)
    assert _continues(venue, booked)
    assert _continues(_exchange("Which venue for the offsite?", "Lakeview Lodge fits."),
                      _exchange("Book Lakeview then.", "Booked the lodge."))
    assert not _continues(_exchange("Which venue for the offsite?", "Lakeview Lodge."),
                          _exchange("Draft the newsletter.", "Here is the draft."))


def test_a_long_chinese_text_goes_through_jieba_once_however_often_it_is_read(monkeypatch):
    import random

    from sessions import relevance

    text = "".join(chr(random.randint(0x4E00, 0x9FFF)) for _ in range(3_000))
    calls = []
    segmenter = relevance._segmenter()
    real = segmenter.cut_for_search
    monkeypatch.setattr(segmenter, "cut_for_search", lambda piece: calls.append(piece) or real(piece))

    first = relevance.search_terms(text)
    for _ in range(5):
        assert relevance.search_terms(text) == first

    assert "".join(calls) == text, "each piece once"
