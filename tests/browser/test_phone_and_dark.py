"""On a phone (390×844) and in both colour schemes, in Chromium: the report dialog fits and reads plainly, the
offline notice is legible and scrolls away with the conversation, and the usage page never scrolls
sideways. Same Daphne server and fixtures as test_office.py; screenshots go to test-artifacts/."""

import re

import pytest

from tests.browser.test_office import ARTIFACTS, browser, demo, open_channel, send, server, sign_in  # noqa: F401 (fixtures)
from tests.browser.test_offline_and_report import wait_for_replies

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}

# What sticks out of an element sideways, and which of its descendants end past its right edge.
OVERFLOW = """root => {
  const right = root.getBoundingClientRect().right + 0.5;
  const outside = [...root.querySelectorAll('dt, dd, li, p, h3, span')]
    .filter(n => n.getClientRects().length && n.getBoundingClientRect().right > right)
    .map(n => n.tagName + ': ' + n.textContent.slice(0, 40));
  return {scroll: root.scrollWidth, client: root.clientWidth, outside};
}"""

CONTRAST = """node => {
  const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const style = getComputedStyle(node);
  const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_on_a_phone_the_report_fits_and_counts_a_fact_shown_with_an_earlier_task(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    # The fact is remembered after task 1, shown with task 2, and still in front of task 2 when task 3 runs.
    for n, text in enumerate(["The launch date is May 4.", "When is the launch?", "What about the launch?"], start=1):
        send(page, text)
        wait_for_replies(page, n)

    for size, scheme in ((None, "light"), (PHONE, "light"), (PHONE, "dark")):
        if size:
            page.set_viewport_size(size)
        page.emulate_media(color_scheme=scheme)
        bar = page.locator(".msg.assistant").last.locator(".ctxbar")
        bar.locator(".seg").first.wait_for(timeout=10_000)
        bar.click()
        dialog = page.locator("dialog.report")
        page.locator(".report-sentence:not(:empty)").wait_for()
        page.locator("dialog.report .input-note").wait_for()

        names = dialog.locator(".legend li > span:nth-child(2)").evaluate_all(
            "ns => ns.map(n => n.getBoundingClientRect().height / parseFloat(getComputedStyle(n).lineHeight))")
        assert max(names) < 1.5, "each layer's name on one line, no word broken"
        sizes = dialog.evaluate(OVERFLOW)
        assert sizes["scroll"] <= sizes["client"] and not sizes["outside"], (scheme, sizes)
        text = dialog.inner_text()
        assert "1 remembered fact" in dialog.locator(".report-sentence").inner_text()
        memory_row = dialog.locator(".legend li[data-layer='memory'] .num").inner_text()
        assert memory_row == "1 fact, shown with an earlier task", memory_row
        assert "Task 2, still with what was recalled for it when you asked it" in text
        assert "Shown again" not in text
        bar_tokens = re.search(r"~([\d,]+) tokens", bar.get_attribute("title")).group(1)
        assert f"The bar counts the prompt's text: about {bar_tokens} tokens." in text
        page.screenshot(path=str(ARTIFACTS / f"report-{size['width'] if size else 1280}-{scheme}-top.png"))
        dialog.evaluate("d => d.scrollTop = d.scrollHeight")
        page.screenshot(path=str(ARTIFACTS / f"report-{size['width'] if size else 1280}-{scheme}.png"))
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
    context.close()


def test_the_offline_notice_is_legible_and_scrolls_away_with_the_conversation(server, demo, browser):
    from office.models import Channel
    from sessions import services
    from tests.sessions.test_prompts import conversation

    services.import_session(channel=Channel.objects.get(kind="direct", coworker__slug="mina"), data=conversation(12))
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    note = page.locator(".offline-note")

    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert note.evaluate(CONTRAST) >= 4.5, scheme

    page.set_viewport_size(PHONE)
    page.emulate_media(color_scheme="dark")
    lines = note.evaluate("n => Math.round((n.clientHeight - parseFloat(getComputedStyle(n).paddingTop) * 2) / parseFloat(getComputedStyle(n).lineHeight))")
    assert lines <= 2, f"{lines} lines on a phone"
    # At the end of the conversation, where people read and write, the notice has scrolled away with the top of it.
    page.evaluate("h => h.scrollTop = h.scrollHeight", page.locator("#history").element_handle())
    history_top = page.locator("#history").bounding_box()["y"]
    assert note.bounding_box()["y"] + note.bounding_box()["height"] <= history_top
    page.screenshot(path=str(ARTIFACTS / "offline-note-390-dark.png"))
    page.evaluate("h => h.scrollTop = 0", page.locator("#history").element_handle())
    assert note.bounding_box()["y"] >= history_top, "it is the first thing in the conversation"
    context.close()


def test_on_a_phone_the_usage_page_fits_its_width_with_the_tables_scrolling_inside(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    send(page, "Draft the launch email")
    wait_for_replies(page, 1)
    page.set_viewport_size(PHONE)

    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto(f"{server}/o/acme/usage/")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "the page does not scroll sideways"
        people = page.locator(".table-scroll", has=page.locator("[data-table='coworkers']"))
        assert people.evaluate("w => w.scrollWidth > w.clientWidth && getComputedStyle(w).overflowX === 'auto'")
        for chart in page.locator("svg.chart").all():
            box, frame = chart.bounding_box(), chart.locator("xpath=..").bounding_box()
            assert box["x"] >= frame["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 0.5
            sizes = chart.locator("text").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().height)")
            assert sizes and min(sizes) >= 10, f"labels {min(sizes):.1f} px high"
        page.screenshot(path=str(ARTIFACTS / f"usage-390-{scheme}.png"), full_page=True)
    context.close()


def test_on_a_phone_escape_closes_the_menu_and_gives_the_focus_back_to_its_button(server, demo, browser):
    context, page = sign_in(browser, server)
    page.set_viewport_size(PHONE)
    toggle = page.locator("[data-toggle-nav]")
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"

    page.keyboard.press("Escape")

    assert toggle.get_attribute("aria-expanded") == "false"
    assert not page.locator(".sidebar").evaluate("s => s.classList.contains('open')")
    assert toggle.evaluate("t => document.activeElement === t")
    context.close()
