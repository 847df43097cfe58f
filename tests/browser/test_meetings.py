"""Meetings and projects in a real browser, from the sidebar's buttons: a meeting to its notes, the
decision on the memory page and the follow-up in its owner's 1:1 (and back); a project to a reply.
Same Daphne server and Chromium as test_office.py; screenshots in test-artifacts/."""

import json
import re

import pytest

from tests.browser.test_office import ARTIFACTS, browser, daphne, demo, paced_server, send, server, sign_in  # noqa: F401
from tests.conftest import requires_postgres, requires_redis

pytestmark = pytest.mark.django_db(transaction=True)

AGENDA = (
    "We decided to launch on May 4 because the beta is stable.\n"
    "Theo will fix the invite link on mobile by Friday.\n"
    "Who writes the press release?"
)


def streamed_by(page) -> set:
    """The coworkers whose words arrived as `delta` frames on the page's channel socket."""
    seen: set = set()

    def watch(socket):
        if "/ws/channels/" in socket.url:
            socket.on("framereceived", lambda payload: _note_delta(payload, seen))

    page.on("websocket", watch)
    return seen


def _note_delta(payload, seen: set) -> None:
    try:
        frame = json.loads(payload)
    except (TypeError, ValueError):
        return
    if frame.get("type") == "delta":
        seen.add(frame.get("coworker"))


def run_a_meeting(page, server: str) -> None:
    """From the sidebar's New meeting to the notes on the meeting's page."""
    page.locator("#sidebar").get_by_role("link", name="New meeting").click()
    page.wait_for_url(f"{server}/o/acme/meetings/new/")
    page.get_by_label("Title").fill("Launch sync")
    page.get_by_label(re.compile(r"\bMina ·")).check()
    page.get_by_label("Agenda").fill(AGENDA)
    page.get_by_label("Rounds").select_option("1")
    page.get_by_role("button", name="Start the meeting").click()
    # One coworker is not a meeting: the form says so and keeps what was written.
    error = page.locator("#id_coworkers-error")
    error.wait_for()
    assert "Pick at least two coworkers" in error.inner_text()
    assert page.get_by_label("Agenda").input_value() == AGENDA
    page.screenshot(path=str(ARTIFACTS / "meeting-form-error.png"), full_page=True)

    page.get_by_label(re.compile(r"\bTheo ·")).check()
    page.get_by_role("button", name="Start the meeting").click()
    page.wait_for_url(re.compile(rf"{server}/c/\d+/$"))


def test_a_meeting_from_the_button_to_its_notes_memory_and_follow_up(paced_server, demo, browser):
    # Paced: each turn takes seconds to stream, so the page is there to watch it (the notes are the
    # offline responder's, drawn from the agenda).
    server = paced_server
    context, page = sign_in(browser, server)
    streamed = streamed_by(page)

    run_a_meeting(page, server)

    for name in ("Mina", "Theo"):
        page.locator(".msg.assistant.live .who", has_text=name).wait_for(timeout=30_000)
        if name == "Mina":
            page.screenshot(path=str(ARTIFACTS / "meeting-streaming.png"))
    notes = page.locator(".msg.notice.notes")
    notes.wait_for(timeout=30_000)
    assert page.locator("#meeting-ended").is_visible(), "the header says it is over as the notes arrive"
    assert page.locator("h1").inner_text() == "Launch sync"
    speakers = [who.inner_text() for who in page.locator(".msg.assistant .who").all()]
    assert speakers == ["Mina", "Theo"], "each participant speaks in turn"
    assert streamed >= {"mina", "theo"}, "each turn streamed in live"
    text = notes.inner_text()
    decisions = [d.inner_text() for d in notes.locator("h2:has-text('Decisions') + ul > li").all()]
    assert decisions == ["We decided to launch on May 4 because the beta is stable. (remembered)"]
    assert "Theo will fix the invite link on mobile by Friday." in text and "Who writes the press release?" in text
    assert page.locator("#sidebar").get_by_role("link", name="Launch sync").count() == 1
    page.screenshot(path=str(ARTIFACTS / "meeting-notes.png"), full_page=True)
    meeting_url = page.url

    # The decision is on the memory page, linked to the meeting (links within the office open in place).
    notes.get_by_role("link", name="remembered").click()
    page.wait_for_url(re.compile(r"/o/acme/memory/#item-\d+$"))
    item = page.locator(page.evaluate("location.hash"))
    assert "We decided to launch on May 4" in item.inner_text()
    assert item.get_by_role("link", name="from the meeting “Launch sync”, task 1").count() == 1
    page.screenshot(path=str(ARTIFACTS / "meeting-decision-in-memory.png"))
    page.go_back()
    # Back on the meeting, the page connects again and may draw its history afresh: the link is
    # clicked once it is live, not on a node about to be replaced.
    page.wait_for_selector(".conn:has-text('Live')", timeout=15_000)
    notes = page.locator(".msg.notice.notes")
    notes.wait_for()

    # The follow-up is a task in Theo's 1:1, which he answers, and it links back to the meeting.
    notes.get_by_role("link", name="follow-up in Theo’s 1:1").click()
    page.wait_for_url(re.compile(r"/c/\d+/#turn-\d+$"))
    assert page.locator("h1").inner_text() == "Theo"
    follow_up = page.locator(".msg.user.highlight")
    assert "Follow-up from the meeting “Launch sync”: Theo will fix the invite link" in follow_up.inner_text()
    turn = follow_up.get_attribute("data-turn")
    page.locator(f'.msg.assistant[data-turn="{turn}"]:not(.live)').wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "meeting-follow-up.png"))
    follow_up.get_by_role("link", name="Launch sync").click()
    page.wait_for_url(meeting_url)
    page.locator(".msg.notice.notes").wait_for()
    context.close()


def test_a_project_from_the_button_to_a_reply(server, demo, browser):
    context, page = sign_in(browser, server)
    page.locator("#sidebar").get_by_role("link", name="New project").click()
    page.wait_for_url(f"{server}/o/acme/projects/new/")
    page.get_by_label("Name").fill("Website refresh")
    page.get_by_label("Topic").fill("A faster, clearer pricing page")
    page.get_by_label(re.compile(r"\bTheo ·")).check()
    page.get_by_label(re.compile(r"\bIris ·")).check()
    page.screenshot(path=str(ARTIFACTS / "project-form.png"), full_page=True)
    page.get_by_role("button", name="Create the project").click()
    page.wait_for_url(re.compile(rf"{server}/c/\d+/$"))
    page.wait_for_selector(".conn:has-text('Live')", timeout=15_000)
    assert page.locator("h1").inner_text() == "Website refresh"
    assert page.locator(".chat-head .members").inner_text() == "With Iris, Theo"
    sidebar = page.locator("#sidebar")
    assert sidebar.get_by_role("link", name="Website refresh").get_attribute("aria-current") == "page"

    send(page, "@Theo how long would moving the pricing page to the new design take?")

    reply = page.locator(".msg.assistant:not(.live)").last
    reply.wait_for(timeout=30_000)
    assert reply.locator(".who").inner_text() == "Theo"
    page.screenshot(path=str(ARTIFACTS / "project-reply.png"))

    # A question for a coworker outside the project is refused in words, and given back to send again.
    send(page, "@Mina can you check the launch copy?")
    banner = page.locator(".banner-text")
    banner.wait_for(timeout=10_000)
    assert banner.inner_text() == "Mina is not in #Website refresh. Ask Iris or Theo here, or Mina in their 1:1."
    assert page.locator(".composer textarea").input_value() == "@Mina can you check the launch copy?"
    assert page.locator("#send").is_enabled(), "the text given back can be sent again as it is"
    context.close()


@requires_redis
@requires_postgres
def test_with_celery_workers_a_meeting_runs_to_its_notes(demo, browser, transactional_db):
    """The same meeting with the work done by a Celery worker instead of the server."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from tests.sessions.test_background import ROOT, _database_url

    env = {**os.environ, "DATABASE_URL": _database_url(connection.settings_dict), "BACKGROUND_WORK": "celery"}
    env.pop("ANTHROPIC_API_KEY", None)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "office", "worker", "--pool=solo", "--loglevel=WARNING", "--queues=celery,upkeep"], cwd=ROOT, env=env
    )
    try:
        with daphne(BACKGROUND_WORK="celery") as url:
            context, page = sign_in(browser, url)
            run_a_meeting(page, url)
            notes = page.locator(".msg.notice.notes")
            notes.wait_for(timeout=60_000)
            assert "follow-up in Theo’s 1:1" in notes.inner_text()
            page.screenshot(path=str(ARTIFACTS / "meeting-notes-celery.png"), full_page=True)
            context.close()
    finally:
        worker.terminate()
        worker.wait(timeout=30)
