"""Search in a real browser: the sidebar's box finds a decision made in a past conversation, and a
result opens that conversation at the message. Same Daphne server and Chromium as test_office.py.
"""

import re

import pytest

from tests.browser.test_office import ARTIFACTS, browser, demo, open_channel, send, server, sign_in  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

DECISION = "Remember that we picked Lakeview Lodge for the spring offsite on April 12."


def test_a_person_searches_from_the_sidebar_and_opens_a_past_conversation_at_the_message(server, demo, browser):
    from office.models import Channel
    from sessions.models import Session

    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    send(page, DECISION)
    page.locator(".msg.assistant:not(.live)").wait_for(timeout=20_000)

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#new-session").click()
    page.locator("#empty").wait_for(state="visible", timeout=15_000)
    mina = Channel.objects.get(kind="direct", coworker__slug="mina")
    assert Session.objects.filter(channel=mina, status="active").get().tasks.count() == 0

    box = page.locator("#sidebar-q")
    box.fill("offsite venue")
    box.press("Enter")
    page.wait_for_url(re.compile(r"/o/acme/search/\?q=offsite\+venue$"))

    result = page.locator(".search-result", has_text=DECISION).first
    result.wait_for()
    assert re.fullmatch(r"Mina · conversation of \w{3} \d{1,2}, \d{1,2}:\d{2}(?: [AP]M)?", result.locator(".result-where").inner_text())
    assert result.locator(".result-meta").inner_text().startswith("You")
    began, said = (result.locator(f"{part} time").inner_text() for part in (".result-where", ".result-meta"))
    assert began.endswith(("AM", "PM")) == said.endswith(("AM", "PM")), "both times in the reader's own clock"
    assert [m.inner_text() for m in result.locator("mark").all()] == ["offsite"]
    assert page.locator(".search-result mark", has_text="venue").count() == 0, "venue was never said"
    page.screenshot(path=str(ARTIFACTS / "search.png"), full_page=True)

    result.locator("a").click()
    page.wait_for_url(re.compile(r"/c/\d+/m/[0-9a-f-]+/\?q=offsite%20venue#m-[0-9a-f-]+$"))
    found = page.locator("#found")
    assert found.is_visible() and DECISION in found.inner_text()
    assert [m.inner_text() for m in found.locator("mark").all()] == ["offsite"], "marked where it was found too"
    assert page.evaluate("document.querySelector('#found').contains(document.getElementById(location.hash.slice(1)))")
    assert page.evaluate("getComputedStyle(document.querySelector('#found > .msg')).outlineStyle") == "solid"
    assert found.bounding_box()["y"] < page.viewport_size["height"], "the message is in view"
    assert page.locator("h1").inner_text().startswith("Mina · conversation of")
    page.screenshot(path=str(ARTIFACTS / "search-opened.png"))

    page.get_by_role("link", name="Back to the results").click()
    page.wait_for_url(re.compile(r"/o/acme/search/\?q=offsite\+venue$"))
    assert page.locator(".search-result", has_text=DECISION).count() >= 1
    context.close()
