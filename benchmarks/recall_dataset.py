"""Conversations written by people, for bench_recall: a LoCoMo-format JSON file read into RecallConversations.

Pure: standard library and the benchmark's own types (no Django, no ORM).

LoCoMo (Maharana et al., 2024) is a public set of long two-person conversations,
each over many dated sessions, with questions whose evidence names the turns that
answer them ("D3:13": session 3, turn 13). The file is not shipped here: pass its
path to `bench_recall --dataset`. Each conversation becomes one history: in each
session the first speaker is the person (role `user`, a new task at each of their
turns) and the other the coworker (`assistant`); a turn's shared photo is kept as
its caption, the way the dataset's own evaluations read it. Questions map to the
benchmark's types by the dataset's categories: 4 single, 1 multi_hop, 2 temporal,
3 paraphrased (open-domain inference, worded unlike its evidence). Category 5
(questions with no answer in the conversation) and questions whose evidence names
no turn are left out.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.recall_conversations import COWORKER, Day, Question, RecallConversation
from sessions.history import Record

CATEGORY_KINDS = {4: "single", 1: "multi_hop", 2: "temporal", 3: "paraphrased"}
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE_ID = re.compile(r"D\d+:\d+")
_TURN_SECONDS = 30


class DatasetError(ValueError):
    """The file is not a LoCoMo-format list of conversations."""


def load_dataset(path: str | Path, *, limit: int | None = None) -> list[RecallConversation]:
    """Every conversation in the file (or the first `limit`) that has questions, in file order."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DatasetError(f"{path}: {error}") from error
    if not isinstance(samples, list) or not all(isinstance(s, dict) and isinstance(s.get("conversation"), dict) for s in samples):
        raise DatasetError(f"{path}: expected a JSON list of objects with a 'conversation' (the LoCoMo format)")
    conversations = [conversation_from_sample(sample, index) for index, sample in enumerate(samples[:limit])]
    # A conversation with no turns, or with no question whose evidence names one, measures nothing.
    usable = [c for c in conversations if c.records and c.questions]
    if not usable:
        raise DatasetError(f"{path}: no conversation has turns and a question whose evidence names one of them")
    return usable


def conversation_from_sample(sample: dict, index: int = 0) -> RecallConversation:
    """One LoCoMo sample as a history of records, its sessions as days, and its answerable questions."""
    talk = sample["conversation"]
    ids = uuid.UUID(int=index + 1)  # deterministic ids: a rerun imports the same records
    numbers = sorted(int(m.group(1)) for key in talk if (m := _SESSION_KEY.match(key)))
    records: list[Record] = []
    by_turn_id: dict[str, str] = {}
    days, turn, clock = [], 0, datetime(2023, 1, 1, 9, 0, tzinfo=timezone.utc)
    for number in numbers:
        said = talk[f"session_{number}"]
        turns = [t for t in said if isinstance(t, dict) and _turn_text(t)] if isinstance(said, list) else []
        if not turns:
            continue
        clock = _parse_date(talk.get(f"session_{number}_date_time"), after=clock)
        person, first = turns[0].get("speaker"), turn + 1
        for i, said in enumerate(turns):
            role = "user" if said.get("speaker") == person else "assistant"
            turn += role == "user"
            record = Record(
                id=str(uuid.uuid5(ids, f"{number}:{i}")),
                previous=records[-1].id if records else None,
                turn=turn,
                role=role,
                content=_turn_text(said),
                coworker=None if role == "user" else COWORKER,
                created_at=clock + timedelta(seconds=_TURN_SECONDS * i),
            )
            records.append(record)
            if said.get("dia_id"):
                by_turn_id[str(said["dia_id"])] = record.id
        days.append(Day(clock.date(), first, turn))
        clock += timedelta(seconds=_TURN_SECONDS * len(turns))
    position = {record.id: i for i, record in enumerate(records)}
    questions = []
    for q_index, qa in enumerate(sample.get("qa") or []):
        if not isinstance(qa, dict):
            continue
        kind = CATEGORY_KINDS.get(qa.get("category"))
        # Some evidence lists run two ids together ("D8:6; D9:17"): each id counts.
        found = [by_turn_id[e] for item in qa.get("evidence") or [] for e in _EVIDENCE_ID.findall(str(item)) if e in by_turn_id]
        if kind is None or not found or not str(qa.get("question", "")).strip():
            continue
        evidence = tuple(sorted(set(found), key=position.__getitem__))
        questions.append(Question(f"{sample.get('sample_id', index)}:q{q_index}", kind, str(qa["question"]),
                                  str(qa.get("answer", "")), evidence))
    return RecallConversation(tuple(records), tuple(days), tuple(questions), "en")


def _turn_text(said: dict) -> str:
    text = str(said.get("text") or "").strip()
    caption = str(said.get("blip_caption") or "").strip()
    return f"{text} [shares a photo: {caption}]" if caption else text


def _parse_date(text: object, *, after: datetime) -> datetime:
    """A session's "1:56 pm on 8 May, 2023"; a missing or odd one is the day after the last."""
    try:
        return datetime.strptime(str(text).strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return after + timedelta(days=1)
