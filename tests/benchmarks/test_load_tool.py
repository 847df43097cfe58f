"""The load tool's plumbing without a server: frames split per instruction, arguments, the JSON."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from benchmarks.load import TimedFrames, outcome, parse_args, write_results
from benchmarks.load_stats import Instruction, build_report


def frames_of(*frames: dict) -> TimedFrames:
    timed = TimedFrames()
    for frame in frames:
        timed.append(frame)
    return timed


def instruction(index: int) -> Instruction:
    return Instruction(client=1, index=index, client_id=f"c{index}", text=f"instruction {index}")


def user(index: int, seq: int) -> dict:
    message = {"id": f"m{index}", "role": "user", "content": f"instruction {index}", "turn": index}
    return {"type": "message", "message": message, "seq": seq}


def test_each_instruction_is_read_from_the_frames_between_it_and_the_next():
    frames = frames_of(
        {"type": "session", "seq": 0, "messages": []},
        user(1, 1),
        {"type": "task", "id": 11, "turn": 1, "status": "done", "seq": 2},
        user(2, 3),
        {"type": "task", "id": 12, "turn": 2, "status": "done", "seq": 4},
    )
    socket = SimpleNamespace(frames=frames)
    first, second = instruction(1), instruction(2)
    sent = frames.arrived[0]
    items, duplicates = outcome(socket, [(first, 1, sent), (second, 3, sent)])

    assert [item.task for item in items] == [11, 12]
    assert [item.status for item in items] == ["done", "done"]
    assert all(item.ack is not None and item.ack >= 0 for item in items)
    assert duplicates == 0


def test_timed_frames_note_when_each_frame_arrived():
    frames = frames_of({"type": "a"}, {"type": "b"})
    assert len(frames.arrived) == len(frames) == 2
    assert frames.arrived[0] <= frames.arrived[1]


def test_the_defaults_are_the_issues_run(capsys):
    args = parse_args([])
    assert (args.url, args.clients, args.instructions) == ("http://127.0.0.1:8000", 100, 10)
    with pytest.raises(SystemExit):
        parse_args(["--clients", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_the_json_has_the_figures_and_one_record_per_instruction(tmp_path):
    item = instruction(1)
    report = build_report([item], clients=1, instructions=1, seconds=1.0, conditions={"note": "quiet"})
    written = json.loads(write_results(report, [item], tmp_path).read_text())
    assert written["ok"] is False  # never acknowledged: lost
    assert written["counts"]["lost"] == 1
    assert written["conditions"] == {"note": "quiet"}
    assert [record["client_id"] for record in written["instructions_detail"]] == ["c1"]
    assert set(written["latency_ms"]) == {"ack", "first_delta", "done"}
