"""bench_recall's generator: the same seed gives the same conversation, and every question is fair and answerable."""

import re

import jieba
import pytest

from benchmarks.recall_conversations import KINDS, generate_recall_conversation
from benchmarks.recall_report import Tokenizer, full_history_text, normalize
from sessions import history

LANGS = ("en", "zh")
# Words any question or statement may share without giving the answer away.
EN_STOP = set(
    "i me my we us our you your he she it they them their a an the and or but of for to in on at by with from up down "
    "out over into is are was were be been do did does have has had will would can could should what which who whom "
    "where when how much many this that these those there here so not no yes".split()
)
ZH_STOP = {"我們", "你", "我", "的", "了", "是", "在", "要", "那個", "什麼", "哪", "哪裡", "哪一", "多少", "最後"}


@pytest.fixture(scope="module", params=LANGS)
def conversation(request):
    return generate_recall_conversation(300, language=request.param, seed=0)


def test_the_same_seed_gives_the_same_conversation_and_another_seed_another():
    a, b = (generate_recall_conversation(300, language="en", seed=3) for _ in range(2))
    assert a.records == b.records and a.questions == b.questions
    c = generate_recall_conversation(300, language="en", seed=4)
    assert [r.content for r in c.records] != [r.content for r in a.records]


def test_it_is_long_mixed_and_spread_over_weeks(conversation):
    assert conversation.n_tasks == 300
    assert 10 <= len(conversation.days) <= 20
    span = (conversation.days[-1].date - conversation.days[0].date).days
    assert 6 * 7 <= span <= 10 * 7, span
    for record in conversation.records:  # every message is timestamped on its day
        day = next(d for d in conversation.days if d.first_turn <= record.turn <= d.last_turn)
        assert record.created_at.date() == day.date
    replies = [r.content for r in conversation.records if r.role == "assistant" and not r.tool_calls]
    assert min(map(len, replies)) < 100 and max(map(len, replies)) > (400 if conversation.language == "en" else 150)
    assert any(r.role == "tool" for r in conversation.records), "some tasks use a tool"
    history.rebuild_messages(conversation.records)  # a valid history: the app can import it


def test_every_kind_of_question_is_asked(conversation):
    kinds = {q.kind for q in conversation.questions}
    assert kinds == set(KINDS)
    assert len(conversation.questions) >= 40


def test_every_evidence_record_exists_and_is_verbatim_in_the_full_history(conversation):
    full = normalize(full_history_text(conversation.records))
    for question in conversation.questions:
        assert question.evidence
        for record_id in question.evidence:
            assert normalize(conversation.record(record_id).content) in full


def test_the_answer_is_said_in_the_last_evidence_message(conversation):
    """The evidence is the message that answers, not an older mention of a value that changed since."""
    for question in conversation.questions:
        assert question.answer in conversation.record(question.evidence[-1]).content, question


def test_a_changed_value_is_answered_by_the_later_message(conversation):
    by_key = {q.key: q for q in conversation.questions}
    changed = [k for k in by_key if k.endswith(":before") or k.endswith(":date")]
    assert changed
    for key in changed:
        old = conversation.record(by_key[key].evidence[0])
        latest = conversation.record(by_key[key.rsplit(":", 1)[0]].evidence[0])
        assert latest.turn > old.turn and latest.content != old.content


def test_multi_hop_evidence_spans_two_sessions(conversation):
    hops = [q for q in conversation.questions if q.kind == "multi_hop"]
    assert hops
    for question in hops:
        assert len(question.evidence) == 2
        assert conversation.day_of(question.evidence[0]) != conversation.day_of(question.evidence[1]), question


def test_temporal_questions_name_a_date_or_an_order(conversation):
    temporal = [q for q in conversation.questions if q.kind == "temporal"]
    assert temporal
    for question in temporal:
        said = conversation.record(question.evidence[0]).created_at.date()
        dated = f"{said.day}" in question.text and (re.search(r"\d+月\d+日", question.text) or "," in question.text)
        ordered = "Before" in question.text or "之前" in question.text
        assert dated or ordered, question.text
        if dated:  # the date named is the day it was said
            assert re.search(rf"(\b{said.day}\b|{said.month}月{said.day}日)", question.text)


def _content_words(text: str, language: str) -> set[str]:
    if language == "zh":
        return {w for w in jieba.lcut(text) if len(w) > 1 and re.search(r"\w", w) and w not in ZH_STOP}
    words = [w for w in re.findall(r"[a-z']+", text.lower()) if w not in EN_STOP]
    return set(Tokenizer("en")(" ".join(words)))


def test_paraphrased_questions_share_few_content_words_with_their_evidence(conversation):
    paraphrased = [q for q in conversation.questions if q.kind == "paraphrased"]
    assert len(paraphrased) >= 8
    for question in paraphrased:
        asked = _content_words(question.text, conversation.language)
        for record_id in question.evidence:
            shared = asked & _content_words(conversation.record(record_id).content, conversation.language)
            assert len(shared) <= 1, (question.text, shared)


def test_each_day_imports_as_a_session_of_its_own(conversation):
    sessions = conversation.session_records()
    assert len(sessions) == len(conversation.days)
    assert sum(len(s) for s in sessions) == len(conversation.records)
    for records in sessions:
        assert records[0].previous is None and records[0].turn == 1
        assert [t.turn for t in history.group_tasks(history.order_chain(records))] == list(range(1, records[-1].turn + 1))
