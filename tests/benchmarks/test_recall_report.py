"""bench_recall's scoring: a prompt counts only with every evidence message in it whole, and BM25 gets exactly the builder's size."""

from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from benchmarks.recall_conversations import generate_recall_conversation
from benchmarks.recall_report import (
    BM25,
    Bm25Baseline,
    baseline_rows,
    evaluate_targets,
    evidence_texts,
    prompt_parts,
    score,
    summarize,
    task_documents,
)


@pytest.fixture(scope="module")
def conversation():
    return generate_recall_conversation(120, language="en", seed=0)


def _prompt(system, messages, window_end):
    return SimpleNamespace(system=system, messages=messages, window_end=window_end)


def test_a_prompt_missing_one_evidence_message_scores_as_a_miss(conversation):
    question = next(q for q in conversation.questions if q.kind == "multi_hop")
    first, second = evidence_texts(conversation, question)
    both = score([first, second], {"recent": f"hello {first} and {second}"})
    one = score([first, second], {"recent": f"hello {first}"})
    assert both["hit"] and both["where"] == ["recent", "recent"]
    assert not one["hit"] and one["where"] == ["recent", "missing"]


def test_a_message_cut_short_is_a_miss_but_rewrapped_whitespace_is_not(conversation):
    text = evidence_texts(conversation, conversation.questions[0])[0]
    assert not score([text], {"recalled": text[: len(text) // 2]})["hit"]
    words = text.split(" ")
    parts = prompt_parts(_prompt([], [HumanMessage("\n  ".join(words))], window_end=-1))
    assert score([text], parts)["hit"]


def test_the_layer_a_message_was_found_in_is_named():
    memory = "# Long-term memory\n- the offsite is at Maple Hall"
    summary = "# Earlier in this conversation (summary)\nTasks 1–4: the budget is $9,000."
    prompt = _prompt(
        ["You are Mina.", memory, summary],
        [HumanMessage("old task"), AIMessage("an old reply", tool_calls=[{"id": "t1", "name": "search", "args": {"q": "Harbor Loft"}}]),
         HumanMessage("# Recalled from earlier\n- Task 3: Juniper Rooms\n\nWhere is it?")],
        window_end=1,
    )
    parts = prompt_parts(prompt)
    where = score(["the offsite is at Maple Hall", "the budget is $9,000.", "an old reply", "Harbor Loft", "Juniper Rooms", "Birch"], parts)["where"]
    assert where == ["memory", "summary", "recent", "recent", "recalled", "missing"]


def test_bm25_stays_within_the_equal_size_budget_and_stops_at_the_first_task_that_would_not_fit(conversation):
    bm25 = Bm25Baseline(conversation.records, "en")
    question = conversation.questions[0].text
    for budget in (200, 1_000, 5_000, 20_000):
        prompt = bm25.prompt(question, budget)
        assert len(prompt) <= budget or prompt == question
        ranked = bm25.ranking(question)
        shown = prompt.split("\n")
        kept = sum(1 for i in ranked if bm25.documents[i].split("\n")[0] in shown)
        nxt = bm25.documents[ranked[kept]] if kept < len(ranked) else ""
        assert len(prompt) + len(nxt) + 1 > budget, "it stopped although the next task fitted"


def test_bm25_finds_a_task_by_its_rare_words(conversation):
    """A sanity check of the baseline itself: a question naming a candidate ranks that candidate's interview first."""
    question = next(q for q in conversation.questions if q.key.endswith(":interviewer"))
    bm25 = Bm25Baseline(conversation.records, "en")
    best = bm25.documents[bm25.ranking(question.text)[0]]
    assert conversation.record(question.evidence[0]).content in best


def test_chinese_is_segmented_into_words_for_bm25():
    zh = generate_recall_conversation(120, language="zh", seed=0)
    bm25 = Bm25Baseline(zh.records, "zh")
    assert any(len(term) > 1 for term in bm25.tokenize(zh.questions[0].text))
    question = next(q for q in zh.questions if q.key.endswith(":interviewer"))
    assert zh.record(question.evidence[0]).content in bm25.documents[bm25.ranking(question.text)[0]]


def test_a_task_document_is_the_users_message_and_the_reply(conversation):
    documents = task_documents(conversation.records)
    assert len(documents) == conversation.n_tasks
    assert all("\n" in d for d in documents)
    assert not any(r.content in documents[r.turn - 1] for r in conversation.records if r.role == "tool")


def test_the_relevance_target_passes_only_ten_points_ahead_of_bm25_in_every_type(conversation):
    rows = baseline_rows(conversation, conversation.records, {q.key: 3_000 for q in conversation.questions})[BM25]
    history = 30_000

    def run(builder_rows, bm25_rows):
        strategies = {"builder": summarize(builder_rows, history, budget=33_000), BM25: summarize(bm25_rows, history)}
        return {"language": "en", "layout": "one session", "tasks": 300, "history_chars": history, "strategies": strategies}

    missed = [dict(r, hit=False) for r in rows]
    found = [dict(r, hit=True) for r in rows]
    relevance = lambda runs: next(t for t in evaluate_targets(runs, None) if t["key"] == "relevance")  # noqa: E731
    assert relevance([run(found, missed)])["status"] == "PASS"
    assert relevance([run(rows, rows)])["status"] == "FAIL"
    # Ahead overall but level in one type: still a FAIL, and the detail names that type.
    level = [dict(r, hit=r["kind"] != "temporal") for r in rows]
    behind = relevance([run(level, [dict(r, hit=False) if r["kind"] != "temporal" else r for r in level])])
    assert behind["status"] == "FAIL" and "temporal" in behind["detail"]


def test_the_size_target_judges_what_the_layer_budgets_cover_not_the_system_prompt_and_instruction(conversation):
    rows = baseline_rows(conversation, conversation.records, {q.key: 3_000 for q in conversation.questions})[BM25]

    def size(budgeted: int):
        builder = [dict(r, chars=budgeted + 400, budgeted=budgeted) for r in rows]
        strategies = {"builder": summarize(builder, 200_000, budget=33_000), BM25: summarize(rows, 200_000)}
        run = {"language": "en", "layout": "one session", "tasks": 300, "history_chars": 200_000, "strategies": strategies}
        return next(t for t in evaluate_targets([run], None) if t["key"] == "size")

    # 33,400 characters in all, of which the persona and the question are 400: within the budgets.
    assert size(33_000)["status"] == "PASS"
    assert size(33_001)["status"] == "FAIL" and "33,001 budgeted" in size(33_001)["detail"]
