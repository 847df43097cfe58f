"""Fixtures for the pipeline's tests: the frames sent to watchers, and jobs recorded instead of run."""

import pytest


@pytest.fixture
def frames(monkeypatch) -> list[dict]:
    """Every frame sent to a channel's watchers, in order (sent at once: tests have no commit to wait for)."""
    sent: list[dict] = []
    monkeypatch.setattr("office.events.send_now", lambda channel_id, frame: sent.append(frame))
    monkeypatch.setattr("office.events.transaction.on_commit", lambda callback: callback())
    return sent


@pytest.fixture
def no_background(monkeypatch) -> list[int]:
    """Jobs are recorded, not run, so each test runs the task itself."""
    queued: list[int] = []
    monkeypatch.setattr("sessions.tasks.run_task.enqueue", queued.append)
    monkeypatch.setattr("sessions.tasks.extract_task_memory.enqueue", lambda task_id: None)
    monkeypatch.setattr("sessions.tasks.fold_session.enqueue", lambda *args: None)
    return queued
