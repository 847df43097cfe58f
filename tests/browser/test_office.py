"""The office in a real browser: Playwright driving Debian's Chromium against a real Daphne server.

Screenshots go to test-artifacts/. The server runs on the test database with the
in-process runner and the offline responder, as `make run` does.
"""

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from sessions import services
from sessions.models import MemoryItem, Session
from tests.servers import ROOT, daphne
from tests.sessions.test_prompts import conversation

CHROMIUM = "/usr/bin/chromium"
# The length of every reply on the paced server.
PACED_CHARS = 500
ARTIFACTS = ROOT / "test-artifacts"
# Chromium as root in a closed network: no sandbox, and none of its background connections.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

if not Path(CHROMIUM).exists():
    # CI installs Debian's chromium (.ci/run); there a missing browser must fail, not skip.
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium for the browser tests")
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(transactional_db):
    with daphne() as url:
        yield url


@pytest.fixture
def paced_server(transactional_db):
    """Coworkers answer with PACED_REPLY_CHARS characters, 20 every PACED_CHUNK_MS: slow enough
    to watch a reply stream in (about four seconds), fixed so the test knows the final text."""
    with daphne(MODEL_PROVIDER="paced", PACED_REPLY_CHARS=str(PACED_CHARS), PACED_CHUNK_MS="150") as url:
        yield url


@pytest.fixture
def demo(settings):
    settings.DEBUG = True  # the demo user exists only in development
    call_command("seed_demo", stdout=open(os.devnull, "w"))


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API runs an event loop on this thread; the test's own ORM calls are still plain sync code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def sign_in(browser, server: str, *, keep_csp: bool = False, username: str = "demo", password: str = "demo"):
    # Playwright's wait_for_function evaluates its predicate from a string, which the pages'
    # Content-Security-Policy forbids, so tests run without it; the first test keeps it.
    context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=not keep_csp)
    page = context.new_page()
    page.goto(f"{server}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server}/o/acme/")
    return context, page


def open_channel(page, server: str, name: str) -> None:
    page.get_by_role("link", name=name).first.click()
    page.wait_for_selector(".conn:has-text('Live')", timeout=15_000)


def send(page, text: str) -> None:
    box = page.locator(".composer textarea")
    box.fill(text)
    box.press("Enter")


def test_a_person_signs_in_talks_to_a_coworker_and_opens_what_the_prompt_was_made_of(server, demo, browser):
    context, page = sign_in(browser, server, keep_csp=True)
    # The pages keep to their Content-Security-Policy: the browser reports whatever it blocks.
    blocked = []
    page.on("console", lambda message: "Content Security Policy" in message.text and blocked.append(message.text))
    page.reload()
    page.screenshot(path=str(ARTIFACTS / "office.png"))
    open_channel(page, server, "Mina")

    send(page, "Draft three taglines for the spring launch")

    page.wait_for_selector(".msg.user:has-text('Draft three taglines')")
    reply = page.locator(".msg.assistant").last
    reply.wait_for(timeout=20_000)
    assert reply.locator(".text").inner_text().strip(), "a reply"
    assert page.locator(".offline-note").count() == 1, "the page says once that answers are offline"
    page.screenshot(path=str(ARTIFACTS / "channel.png"))

    page.locator(".ctxbar").last.click()
    dialog = page.locator(".report")
    dialog.wait_for(state="visible")
    page.locator(".report-sentence:not(:empty)").wait_for()
    assert dialog.locator(".report-sentence").inner_text().startswith("Mina saw")
    assert "This task" in dialog.inner_text()
    page.screenshot(path=str(ARTIFACTS / "context-report.png"))
    assert blocked == []
    context.close()


def test_the_nudge_shows_once_at_the_twentieth_task_across_reloads_and_tabs(server, demo, browser):
    from office.models import Channel

    mina = Channel.objects.get(kind="direct", coworker__slug="mina")
    services.import_session(channel=mina, data=conversation(19))
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    assert page.locator(".msg.nudge").count() == 0, "19 tasks: not yet"

    send(page, "One more thing: draft the launch tweet")

    page.locator(".msg.nudge").first.wait_for(timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "nudge.png"))
    assert page.locator(".msg.nudge").count() == 1
    page.reload()
    page.wait_for_selector(".conn:has-text('Live')")
    assert page.locator(".msg.nudge").count() == 1, "still there after a reload, once"
    second = context.new_page()
    second.goto(page.url)
    second.wait_for_selector(".conn:has-text('Live')")
    second.wait_for_timeout(1_000)
    assert second.locator(".msg.nudge").count() == 1 and page.locator(".msg.nudge").count() == 1

    page.locator(".msg.nudge button[data-action='session-new']").click()
    page.wait_for_function("document.querySelectorAll('.msg.nudge').length === 0", timeout=15_000)
    assert Session.objects.filter(channel=mina).count() == 2
    assert Session.objects.get(channel=mina, status="active").tasks.count() == 0
    context.close()


def test_a_person_edits_a_memory_item(server, demo, browser):
    from office.models import Office

    item = MemoryItem.objects.create(office=Office.objects.get(slug="acme"), text="The launch is on May 4.", kind="project")
    context, page = sign_in(browser, server)
    page.goto(f"{server}/o/acme/memory/")

    page.get_by_label("Edit: The launch is on May 4.").click()
    form = page.locator(f"form[action$='/memory/{item.pk}/edit/']")
    form.locator("textarea").fill("The launch moved to May 11.")
    form.get_by_role("button", name="Save").click()

    page.wait_for_selector("text=The launch moved to May 11.")
    page.screenshot(path=str(ARTIFACTS / "memory.png"))
    item.refresh_from_db()
    assert item.text == "The launch moved to May 11."
    context.close()


def test_a_reply_streams_in_with_who_is_typing_then_the_final_message_replaces_it_once(paced_server, demo, browser):
    context, page = sign_in(browser, paced_server)
    open_channel(page, paced_server, "Mina")

    send(page, "Outline the launch plan")

    # Mid-stream: part of the reply under Mina's name with the typing dots, and no final message yet.
    page.wait_for_function("(document.querySelector('.msg.assistant.live .text')?.textContent.length || 0) >= 40", timeout=20_000)
    live = page.locator(".msg.assistant.live")
    partial = live.locator(".text").inner_text()
    assert partial.startswith("Paced reply to: Outline the launch plan")
    assert len(partial) < PACED_CHARS - 100, "still streaming"
    assert live.locator(".who").inner_text() == "Mina" and live.locator(".typing").is_visible()
    assert "Mina is working…" in page.locator("#working").inner_text()
    page.locator('#sidebar a[data-coworker="mina"] .status.working').wait_for(timeout=3_000)
    assert page.locator(".msg.assistant:not(.live)").count() == 0
    page.screenshot(path=str(ARTIFACTS / "streaming.png"))

    page.locator(".msg.assistant:not(.live)").wait_for(timeout=30_000)
    page.wait_for_function("document.getElementById('working').childElementCount === 0", timeout=10_000)
    final = page.locator(".msg.assistant").inner_text()
    assert page.locator(".msg.assistant").count() == 1, "the stream became the message: one bubble"
    assert page.locator(".typing").count() == 0
    assert page.locator("#history").inner_text().count("Paced reply to:") == 1, "no text shown twice"
    reply = page.locator(".msg.assistant .text").inner_text().strip()
    assert reply.startswith(partial.strip()) and len(reply) >= PACED_CHARS - 1, final


def test_the_sidebar_shows_a_coworker_at_work_and_a_reply_elsewhere_without_a_reload(paced_server, demo, browser):
    from office.models import Channel

    main = Channel.objects.get(office__slug="acme", kind="main")
    context, page = sign_in(browser, paced_server)
    open_channel(page, paced_server, "Mina")
    page.wait_for_selector("#sidebar[data-live]")
    page.evaluate("window.notReloaded = true")
    theo = page.locator('#sidebar a[data-coworker="theo"]')
    main_link = page.locator(f'#sidebar a[data-channel="{main.pk}"]')
    assert theo.locator(".status.idle").count() == 1 and main_link.locator(".unread").count() == 0

    # The same person, in another tab, asks Theo something in #main.
    other = context.new_page()
    other.goto(f"{paced_server}/c/{main.pk}/")
    other.wait_for_selector(".conn:has-text('Live')")
    send(other, "@theo estimate the import feature")

    theo.locator(".status.working").wait_for(timeout=20_000)  # the yellow dot, visible
    assert "Working…" in theo.inner_text()
    assert main_link.locator(".unread").count() == 0, "their own instruction is not unread"
    page.screenshot(path=str(ARTIFACTS / "sidebar-working.png"))
    main_link.locator(".unread").wait_for(timeout=30_000)
    theo.locator(".status.idle").wait_for(timeout=10_000)
    assert main_link.locator(".unread").inner_text() == "1"
    assert "Software engineer" in theo.inner_text() and "Working…" not in theo.inner_text()
    assert page.evaluate("window.notReloaded === true")
    page.screenshot(path=str(ARTIFACTS / "sidebar-unread.png"))

    page.reload()
    page.wait_for_selector("#sidebar[data-live]")
    page.wait_for_timeout(300)
    assert main_link.locator(".unread").inner_text() == "1", "a reload shows the count the page counted live"
    context.close()


def test_two_people_in_the_main_channel_each_see_you_on_their_own_words_and_a_name_on_the_others(server, demo, browser):
    from django.contrib.auth.models import User

    from office.models import Membership, Office

    sam = User.objects.create_user("sam", password="sam-password", first_name="Sam", last_name="Ortiz")
    Membership.objects.create(office=Office.objects.get(slug="acme"), user=sam, role=Membership.Role.MEMBER)
    demos, demo_page = sign_in(browser, server)
    sams, sam_page = sign_in(browser, server, username="sam", password="sam-password")
    for page in (demo_page, sam_page):
        open_channel(page, server, "main")

    send(demo_page, "Who can book the offsite venue?")

    seen_live = sam_page.locator(".msg.user:has-text('Who can book the offsite venue?')")
    seen_live.wait_for(timeout=15_000)
    assert seen_live.locator(".who").inner_text() == "demo"
    assert seen_live.locator(".avatar").inner_text() == "D"
    own = demo_page.locator(".msg.user:has-text('Who can book the offsite venue?')")
    assert own.locator(".who").inner_text() == "You"
    send(sam_page, "I can, on Friday.")
    demo_page.locator(".msg.user:has-text('I can, on Friday.') .who:has-text('Sam Ortiz')").wait_for(timeout=15_000)
    sam_page.reload()
    sam_page.locator(".msg.user:has-text('I can, on Friday.') .who:has-text('You')").wait_for()
    assert sam_page.locator(".msg.user:has-text('Who can book the offsite venue?') .who").inner_text() == "demo"
    sam_page.screenshot(path=str(ARTIFACTS / "two-people.png"))
    demos.close()
    sams.close()


def test_an_instruction_refused_by_the_rate_limit_is_given_back_to_send_later(demo, browser, transactional_db):
    with daphne(INSTRUCTIONS_PER_MINUTE="1") as limited:
        context, page = sign_in(browser, limited)
        open_channel(page, limited, "Mina")
        send(page, "What should the Team plan cost?")
        page.locator(".msg.assistant:not(.live)").last.wait_for(timeout=30_000)

        send(page, "And the Enterprise plan?")
        banner = page.locator(".banner-text")
        banner.wait_for(timeout=10_000)

        assert banner.inner_text().startswith("You are sending instructions faster than 1 a minute, so this one was not sent.")
        assert page.locator(".composer textarea").input_value() == "And the Enterprise plan?"
        assert page.locator("#send").is_enabled(), "the text given back can be sent again as it is"
        assert page.locator(".msg.pending").count() == 0, "nothing is left saying it is being sent"
        context.close()
