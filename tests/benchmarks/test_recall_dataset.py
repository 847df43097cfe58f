"""bench_recall --dataset: a LoCoMo-format file read as histories, sessions as days, answerable questions kept."""

import json

import pytest
from django.core.management import CommandError, call_command

from benchmarks import recall_builder
from benchmarks.recall_dataset import DatasetError, load_dataset
from benchmarks.recall_report import evidence_texts, prompt_parts, score
from sessions.history import group_tasks
from sessions.models import Session

SAMPLE = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I went to a pottery class yesterday."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! What did you make?"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "A blue bowl.", "img_url": ["x"], "blip_caption": "a photo of a blue bowl"},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        # This session opens with the other speaker: they are the person here.
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I ran a charity race on Saturday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Well done!"},
        ],
    },
    "qa": [
        {"question": "When did Ana go to pottery?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What did Ana make and what did Ben run?", "answer": "bowl; race", "evidence": ["D1:3; D2:1"], "category": 1},
        {"question": "What is Ana's cat called?", "adversarial_answer": "Tom", "evidence": ["D1:2"], "category": 5},
        {"question": "Where?", "answer": "?", "evidence": ["D9:9"], "category": 4},
    ],
}


def write(tmp_path, data) -> str:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_conversation_becomes_dated_sessions_of_tasks_and_its_answerable_questions(tmp_path):
    [conversation] = load_dataset(write(tmp_path, [SAMPLE]))
    assert [(d.date.isoformat(), d.first_turn, d.last_turn) for d in conversation.days] == [("2023-05-08", 1, 2), ("2023-05-20", 3, 3)]
    tasks = group_tasks(list(conversation.records))
    assert [[(r.role, r.content) for r in t.records] for t in tasks] == [
        [("user", "Hi Ben! I went to a pottery class yesterday."), ("assistant", "Nice! What did you make?")],
        [("user", "A blue bowl. [shares a photo: a photo of a blue bowl]")],
        [("user", "I ran a charity race on Saturday."), ("assistant", "Well done!")],
    ]
    # Category 5 has no answer in the conversation; "D9:9" names no turn: both are left out.
    assert [(q.kind, [conversation.record(e).content[:12] for e in q.evidence]) for q in conversation.questions] == [
        ("temporal", ["Hi Ben! I we"]),
        ("multi_hop", ["A blue bowl.", "I ran a char"]),
    ]


@pytest.mark.parametrize(
    "data, says",
    [
        ({"conversation": {}}, "LoCoMo format"),
        ([{"conversation": []}], "LoCoMo format"),
        ([], "no conversation has turns"),
        ([{"conversation": {"session_1": None}, "qa": [{"question": "Q?", "evidence": ["D1:1"], "category": 4}]}], "no conversation has turns"),
        ([dict(SAMPLE, qa=[])], "no conversation has turns and a question"),
    ],
)
def test_a_file_that_is_not_the_format_or_measures_nothing_is_refused_by_name(tmp_path, data, says):
    with pytest.raises(DatasetError, match=says):
        load_dataset(write(tmp_path, data))


def test_the_command_says_what_is_wrong_with_its_dataset_arguments(tmp_path):
    with pytest.raises(CommandError, match="locomo.json"):
        call_command("bench_recall", dataset=str(tmp_path / "locomo.json") + ".missing")
    with pytest.raises(CommandError, match="--limit"):
        call_command("bench_recall", dataset=write(tmp_path, [SAMPLE]), limit=0)
    with pytest.raises(CommandError, match="--limit"):
        call_command("bench_recall", limit=2)


@pytest.mark.django_db
@pytest.mark.parametrize("layout", ["one session", "sessions"])
def test_the_builder_is_asked_a_dataset_question_after_importing_it(tmp_path, layout):
    [conversation] = load_dataset(write(tmp_path, [SAMPLE]))
    channel, _ = recall_builder.scratch_channel()
    session, turn = recall_builder.import_layout(conversation, layout, channel, lambda line: None)
    assert Session.objects.filter(channel=channel).count() == (1 if layout == "one session" else 2)
    # A history this short fits in the prompt whole: each question's evidence is there, verbatim.
    for question in conversation.questions:
        prompt = recall_builder.ask(session, turn, question)
        assert score(evidence_texts(conversation, question), prompt_parts(prompt))["hit"], question.text
