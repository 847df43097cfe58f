"""bench_recall's builder side: each day becomes a session of its own, and a question's prompt is scored where its layers are."""

import pytest

from benchmarks import recall_builder
from benchmarks.recall_conversations import Question, generate_recall_conversation
from benchmarks.recall_report import evidence_texts, prompt_parts, score
from sessions.models import Session, Task


@pytest.mark.django_db
def test_the_sessions_layout_imports_each_day_and_asks_without_storing_a_task():
    conversation = generate_recall_conversation(100, language="en", seed=1)
    channel, budget = recall_builder.scratch_channel()
    session, turn = recall_builder.import_layout(conversation, "sessions", channel, lambda line: None)
    assert Session.objects.filter(channel=channel).count() == len(conversation.days)
    last = conversation.days[-1]
    assert turn == last.last_turn - last.first_turn + 2 and session.ended_at is None

    # Something said in the last task of the last day is in the detailed window, whole.
    said = next(r for r in reversed(conversation.records) if r.role == "user")
    question = Question("probe", "single", "What did I just ask you?", "", (said.id,))
    tasks = Task.objects.filter(session=session).count()
    prompt = recall_builder.ask(session, turn, question)
    assert score(evidence_texts(conversation, question), prompt_parts(prompt)) == {"hit": True, "where": ["recent"], "answer": False}
    assert Task.objects.filter(session=session).count() == tasks, "asking stores nothing"
    assert prompt.report["total_chars"] <= budget + 2_000
