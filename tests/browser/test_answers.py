"""Answers you can act on, in Chromium: copy a reply and a code block, regenerate the last reply, code
highlighted and a reply formatted while it streams, @mention suggestions, Send only with something to
send, dark mode, a past conversation's header on a phone in local time, the unread count in the tab.

Claude's replies come from the fake Messages API on loopback (tests/coworkers/fake_anthropic.py);
everything else is the offline responder, as in test_office.py. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from office.models import Channel
from sessions import services
from sessions.models import Session, Task
from tests.coworkers.fake_anthropic import FakeAnthropic, Reply
from tests.sessions.test_prompts import conversation

from .test_office import ARTIFACTS, browser, daphne, demo, open_channel, send, server, sign_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

CODE = 'def launch(day):\n    return "May 4"  # fixed'
MARKDOWN_REPLY = (
    "Here is the **plan** for the launch:\n\n"
    "- Draft the *copy*\n- Review it with `ops`\n\n"
    'Markup stays text: <img src=x onerror="window.pwned=1"> **<b onmouseover="window.pwned=2">x</b>**\n\n'
    f"```python\n{CODE}\n```\n\n"
    + "Then we check the numbers again and again, slowly, so nothing is missed before the launch. " * 4
)


@pytest.fixture
def claude_server(transactional_db):
    """Daphne with Claude's provider pointed at the fake API: every request gets the markdown reply,
    streamed four characters every 40 ms (about four seconds), so a test can watch it arrive."""
    fake = FakeAnthropic().start()
    fake.add(*[Reply(text=MARKDOWN_REPLY, chunk_size=4, delay=0.04) for _ in range(12)])
    try:
        with daphne(ANTHROPIC_API_KEY=fake.api_key, ANTHROPIC_BASE_URL=fake.base_url, MODEL_PROVIDER="claude") as url:
            yield url
    finally:
        fake.stop()


def clipboard(page) -> str:
    return page.evaluate("navigator.clipboard.readText()")


def wait_for_reply(page, count: int = 1):
    page.wait_for_function(
        f"document.querySelectorAll('.msg.assistant:not(.live):not(.steps)').length >= {count}", timeout=30_000
    )
    page.wait_for_function("document.getElementById('working').childElementCount === 0", timeout=20_000)
    return page.locator(".msg.assistant:not(.steps)").nth(count - 1)


def test_a_reply_is_formatted_while_it_streams_then_highlighted_and_copied(claude_server, demo, browser):
    context, page = sign_in(browser, claude_server)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=claude_server)
    open_channel(page, claude_server, "Mina")

    send(page, "Plan the launch, with the code")

    # Mid-stream: the list and the bold word are formatted already, by the page, as elements.
    live = page.locator(".msg.assistant.live")
    live.locator(".text li code").wait_for(timeout=20_000)  # "Review it with `ops`": the second item
    assert live.locator(".text strong").first.inner_text() == "plan"
    assert live.locator(".text li").count() == 2 and live.locator(".text li em").inner_text() == "copy"
    assert "**" not in live.locator(".text").inner_text()
    live.locator(".text p:has-text('window.pwned=2')").wait_for(timeout=20_000)
    assert live.locator(".text img, .text b, .text [onerror], .text [onmouseover]").count() == 0
    assert '<img src=x onerror="window.pwned=1">' in live.locator(".text").inner_text()
    page.screenshot(path=str(ARTIFACTS / "answers-streaming-formatted.png"))

    reply = wait_for_reply(page)
    assert reply.locator(".text img, .text b").count() == 0
    assert page.evaluate("window.pwned === undefined"), "nothing the reply said ran, streaming or stored"
    # The server's HTML replaced it: the code is highlighted by Pygments' classes, and coloured.
    keyword = reply.locator("pre code span.k").first
    assert keyword.inner_text() == "def"
    assert reply.locator("pre code span.nf").inner_text() == "launch"
    colour = keyword.evaluate("node => getComputedStyle(node).color")
    plain = reply.locator("pre code").evaluate("node => getComputedStyle(node).color")
    assert colour != plain, "a keyword is a colour of its own"
    page.screenshot(path=str(ARTIFACTS / "answers-highlighted.png"))

    reply.locator(".copy-code").click()
    assert clipboard(page) == CODE
    assert reply.locator(".copy-code").inner_text() == "Copied"

    reply.locator("[data-copy=reply]").click()
    reply.locator("[data-copy=reply]", has_text="Copied").wait_for()  # the clipboard is written asynchronously
    copied = clipboard(page)
    assert copied.startswith("Here is the plan for the launch:")
    assert "Draft the copy" in copied and CODE in copied and "Copy" not in copied.split("launch:")[1][:40]
    assert "Copied" not in copied
    context.close()


def test_regenerate_asks_the_last_instruction_again_and_keeps_the_old_reply(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    send(page, "Draft three taglines for the spring launch")
    first = wait_for_reply(page)
    first_text = first.locator(".text").inner_text()
    button = first.locator("[data-regenerate]")
    button.wait_for(timeout=5_000)
    assert page.locator("[data-regenerate]").count() == 1, "on the last reply only"

    button.click()

    page.wait_for_function("document.querySelectorAll('.msg.user').length === 2", timeout=15_000)
    second = wait_for_reply(page, 2)
    users = page.locator(".msg.user .text")
    assert users.nth(0).inner_text() == users.nth(1).inner_text() == "Draft three taglines for the spring launch"
    assert page.locator(".msg.assistant:not(.steps)").nth(0).locator(".text").inner_text() == first_text, "the old reply stays"
    again = "Asked again with Regenerate: a new reply, the earlier one kept above"
    assert [u.locator(".origin").all_inner_texts() for u in page.locator(".msg.user").all()] == [[], [again]], "not a second question"
    # The button moved to the new last reply.
    second.locator("[data-regenerate]").wait_for(timeout=5_000)
    assert page.locator("[data-regenerate]").count() == 1
    page.screenshot(path=str(ARTIFACTS / "answers-regenerated.png"))
    mina = Channel.objects.get(kind="direct", coworker__slug="mina")
    tasks = list(Task.objects.filter(session__channel=mina).order_by("turn"))
    assert [t.turn for t in tasks] == [1, 2] and tasks[1].origin["regenerates"] == 1
    page.reload()
    page.locator(".msg.user").nth(1).wait_for()
    assert page.locator(".msg.user").nth(1).locator(".origin").inner_text() == again, "as the page shows it after a reload"
    context.close()


def test_send_is_disabled_while_the_composer_is_empty_or_blank(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    box, button = page.locator("#composer-input"), page.locator("#send")

    assert button.is_disabled()
    box.fill("   \n  ")
    assert button.is_disabled()
    box.fill("Draft the launch email")
    assert button.is_enabled()
    box.press("Enter")
    page.wait_for_selector(".msg.user:has-text('Draft the launch email')")
    assert box.input_value() == "" and button.is_disabled(), "sent: empty again, and Send with it"
    context.close()


def test_typing_at_suggests_the_channels_coworkers_and_picking_one_mentions_them(server, demo, browser):
    project = Channel.objects.get(office__slug="acme", kind="project")
    context, page = sign_in(browser, server)
    open_channel(page, server, "launch")
    box = page.locator("#composer-input")

    box.press_sequentially("Could @")
    options = page.locator(".mentions li")
    options.first.wait_for(timeout=5_000)
    names = options.locator("strong").all_inner_texts()
    assert sorted(names) == sorted(c.name for c in project.members.all()), "the project's members, nobody else"
    page.screenshot(path=str(ARTIFACTS / "answers-mentions.png"))

    box.press_sequentially("t")
    assert options.locator("strong").all_inner_texts() == ["Theo"]
    box.press("Enter")
    assert box.input_value() == "Could @theo "
    assert page.locator(".mentions").is_hidden()
    assert page.locator(".msg.user").count() == 0, "Enter picked; it did not send"

    box.press_sequentially("estimate the import @")
    page.locator(".mentions li").first.wait_for()
    page.keyboard.press("ArrowDown")
    second = page.locator(".mentions li[aria-selected=true] strong").inner_text()
    page.keyboard.press("Tab")
    slug = project.members.get(name=second).slug
    assert box.input_value() == f"Could @theo estimate the import @{slug} "

    box.press("Enter")
    reply = wait_for_reply(page)
    assert reply.locator(".who").inner_text() == "Theo"
    context.close()


def test_dark_mode_follows_the_browser_with_readable_text_and_coloured_code(claude_server, demo, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, color_scheme="dark", bypass_csp=True)
    page = context.new_page()
    page.goto(f"{claude_server}/accounts/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    page.wait_for_url(f"{claude_server}/o/acme/")
    open_channel(page, claude_server, "Mina")
    send(page, "Plan the launch, with the code")
    reply = wait_for_reply(page)

    def luminance(selector: str, prop: str) -> float:
        rgb = page.locator(selector).first.evaluate(f"node => getComputedStyle(node).{prop}")
        red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
        return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255

    assert luminance("body", "backgroundColor") < 0.15
    assert luminance(".msg.assistant .bubble", "backgroundColor") < 0.2
    assert luminance(".msg.assistant .text p", "color") > 0.75, "light text on the dark panel"
    assert luminance(".md pre", "backgroundColor") < 0.15
    assert luminance(".md pre span.k", "color") > 0.5, "a keyword stays readable on dark code"
    assert reply.locator("pre code span.s2, pre code span.s1").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "answers-dark.png"))
    context.close()


def test_a_past_conversation_on_a_phone_has_a_title_local_times_and_a_header_that_fits(server, demo, browser):
    mina = Channel.objects.get(kind="direct", coworker__slug="mina")
    services.import_session(channel=mina, data=conversation(3))
    services.import_session(channel=mina, data=conversation(1))  # the first one is now a past conversation
    past = Session.objects.filter(channel=mina, status="ended").get()
    context = browser.new_context(viewport={"width": 390, "height": 844}, timezone_id="Asia/Taipei", is_mobile=True, bypass_csp=True)
    page = context.new_page()
    page.goto(f"{server}/accounts/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")

    page.goto(f"{server}/c/{mina.pk}/")
    page.locator("#past-sessions summary").click()
    item = page.locator("#past-sessions .past-list li").first
    title = item.locator(".past-title").inner_text()
    assert title.endswith("(task 1)"), title
    assert item.locator(".past-preview").inner_text()
    menu = page.locator("#past-sessions .past-list").bounding_box()
    assert menu["x"] >= 0 and menu["x"] + menu["width"] <= 390, "the list is on the screen"
    page.screenshot(path=str(ARTIFACTS / "answers-past-list.png"))

    page.goto(f"{server}/c/{mina.pk}/sessions/{past.pk}/")
    head = page.locator(".chat-head")
    assert page.locator(".chat-title h1").inner_text() == title
    local = past.started_at.astimezone(ZoneInfo("Asia/Taipei")).strftime("%I:%M")  # the browser's en-US clock
    utc = past.started_at.strftime("%I:%M")
    text = head.locator(".chat-title p").inner_text()
    assert local in text and (utc == local or utc not in text), text
    # Nothing in the header overlaps the title, and nothing sticks out of the screen.
    boxes = {
        name: page.locator(selector).first.bounding_box()
        for name, selector in {"title": ".chat-title", "actions": ".chat-actions"}.items()
    }
    title_box, actions = boxes["title"], boxes["actions"]
    overlap_x = min(title_box["x"] + title_box["width"], actions["x"] + actions["width"]) - max(title_box["x"], actions["x"])
    overlap_y = min(title_box["y"] + title_box["height"], actions["y"] + actions["height"]) - max(title_box["y"], actions["y"])
    assert overlap_x <= 0 or overlap_y <= 0, boxes
    assert actions["x"] + actions["width"] <= 390 and title_box["width"] > 200
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "answers-past-390.png"))
    context.close()


def test_the_tab_title_counts_unread_replies_elsewhere(server, demo, browser):
    main = Channel.objects.get(office__slug="acme", kind="main")
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    page.wait_for_selector("#sidebar[data-live]")
    title = page.title()
    assert not title.startswith("(")

    other = context.new_page()
    other.goto(f"{server}/c/{main.pk}/")
    other.wait_for_selector(".conn:has-text('Live')")
    send(other, "@theo estimate the import feature")

    page.wait_for_function("document.title.startsWith('(1) ')", timeout=30_000)
    assert page.title() == f"(1) {title}"
    context.close()



# Keeps every socket the page opens, and can make new ones fail, so a test can cut the connection.
SOCKET_CONTROL = """
(() => {
  const Real = window.WebSocket;
  window.__sockets = [];
  window.__refuse = false;
  window.WebSocket = function (url, protocols) {
    const socket = new Real(window.__refuse ? "ws://127.0.0.1:9/" : url, protocols);
    window.__sockets.push(socket);
    return socket;
  };
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
  window.WebSocket.prototype = Real.prototype;
})();
"""


def test_the_sidebar_dots_are_not_green_while_disconnected(server, demo, browser):
    context, page = sign_in(browser, server)
    page.add_init_script(SOCKET_CONTROL)
    open_channel(page, server, "Mina")
    page.wait_for_selector("#sidebar[data-live]")
    dot = page.locator('#sidebar a[data-coworker="theo"] .status')
    green = dot.evaluate("node => getComputedStyle(node).backgroundColor")

    page.evaluate("window.__refuse = true; window.__sockets.forEach((socket) => socket.close())")

    page.wait_for_function("document.documentElement.classList.contains('presence-unknown')", timeout=5_000)
    grey = dot.evaluate("node => getComputedStyle(node).backgroundColor")
    assert grey != green and grey == "rgb(156, 163, 175)"
    assert "unknown" in page.locator('#sidebar a[data-coworker="theo"] .status-text').inner_text()
    page.screenshot(path=str(ARTIFACTS / "answers-presence-unknown.png"))

    page.evaluate("window.__refuse = false")
    page.wait_for_function("!document.documentElement.classList.contains('presence-unknown')", timeout=20_000)
    assert dot.evaluate("node => getComputedStyle(node).backgroundColor") == green, "live again: the dots say so"
    context.close()


def test_a_mistyped_channel_is_the_friendly_404_on_the_debug_server(server, demo, browser):
    context, page = sign_in(browser, server)

    response = page.goto(f"{server}/c/987654/")

    assert response.status == 404
    assert page.locator("h1").inner_text() == "This page isn't here"
    assert "URLconf" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "answers-404.png"))
    page.get_by_role("link", name="Back to the office").click()
    page.wait_for_url(f"{server}/o/acme/")
    context.close()
