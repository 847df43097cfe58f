"""In Chromium, as `make run` serves it (offline responder, in-process runner): #all-hands with nobody to
answer, the offline notice shown once with replies that never quote each other, and a report whose
sentence says what its bar shows. Screenshots go to test-artifacts/."""

import re

import pytest

from tests.browser.test_office import ARTIFACTS, browser, demo, open_channel, send, server, sign_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for_replies(page, count: int) -> None:
    page.wait_for_function(
        f"document.querySelectorAll('.msg.assistant:not(.live)').length >= {count}"
        " && document.getElementById('working').childElementCount === 0",
        timeout=20_000,
    )


def test_in_all_hands_a_message_nobody_needs_to_answer_ends_with_no_one_had_anything_to_add(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "all-hands")

    send(page, "Heads-up: the office is closed on Friday. Any concerns?")

    page.locator(".msg.notice:has-text('No one had anything to add.')").wait_for(timeout=20_000)
    page.wait_for_function("document.getElementById('working').childElementCount === 0", timeout=10_000)
    instruction = page.locator(".msg.user").last
    assert "Failed" not in instruction.inner_text() and instruction.locator(".task-error").count() == 0
    page.screenshot(path=str(ARTIFACTS / "all-hands-nobody.png"))

    page.reload()
    page.wait_for_selector(".conn:has-text('Live')")
    assert page.locator(".msg.notice:has-text('No one had anything to add.')").count() == 1, "still there, once"
    assert "Failed" not in page.locator(".msg.user").last.inner_text()
    context.close()


def test_offline_the_page_says_so_once_and_replies_never_quote_each_other(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    note = page.locator(".offline-note")
    assert note.count() == 1 and "Answers are offline:" in note.inner_text() and "ANTHROPIC_API_KEY" in note.inner_text()

    said = ["The launch date is May 4.", "When is the launch?", "Remind me of the launch date", "What about the launch?"]
    for n, text in enumerate(said, start=1):
        send(page, text)
        wait_for_replies(page, n)

    replies = [r.inner_text() for r in page.locator(".msg.assistant .text").all()]
    assert len(replies) == 4
    assert page.locator(".offline-note").count() == 1, "one notice for the page, none in the replies"
    for reply in replies:
        assert "Offline mode" not in reply and "ANTHROPIC_API_KEY" not in reply
        assert "From task" not in reply and "“" not in reply, "nothing quoted inside a quote"
    # Every line of every answer is what the person said (or memory), never a piece of a reply.
    lines = [line.strip() for reply in replies[1:] for line in reply.splitlines()[1:] if line.strip()]
    assert lines and all(re.fullmatch(r"The launch date is May 4 \((you said this on [A-Z][a-z]{2} \d{1,2}|from memory)\)", line) for line in lines), lines
    page.screenshot(path=str(ARTIFACTS / "offline-replies.png"))

    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the notice leaves the conversation room
    assert page.locator(".offline-note").bounding_box()["height"] < 844 * 0.25
    page.screenshot(path=str(ARTIFACTS / "offline-replies-390.png"))
    context.close()


def test_the_report_sentence_says_what_its_bar_shows(server, demo, browser):
    from office.models import Office
    from sessions.models import MemoryItem

    # Remembered before the conversation starts: it is in the prompt's memory part.
    MemoryItem.objects.create(office=Office.objects.get(slug="acme"), text="The launch date is May 4.", kind="project")
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    send(page, "Draft the launch email")
    wait_for_replies(page, 1)
    send(page, "When is the launch?")
    wait_for_replies(page, 2)

    bar = page.locator(".msg.assistant").last.locator(".ctxbar")
    bar.locator(".seg").first.wait_for(timeout=10_000)  # filled in from the report once the reply lands
    bar_layers = {c.split("seg-")[1] for c in bar.locator(".seg").evaluate_all("s => s.map(x => x.className)")}
    bar.click()
    dialog = page.locator(".report")
    dialog.wait_for(state="visible")
    page.locator(".report-sentence:not(:empty)").wait_for()

    sentence = dialog.locator(".report-sentence").inner_text()
    assert sentence == "Mina saw your last task in full and 1 remembered fact."
    dialog_layers = {c.split("seg-")[1] for c in dialog.locator(".big-track .seg").evaluate_all("s => s.map(x => x.className)")}
    assert bar_layers == dialog_layers == {"system", "memory", "recent", "current"}
    text = dialog.inner_text()
    assert "No summary: every earlier task was shown in full." in text
    assert "The launch date is May 4." in text and "in the memory part" in text
    assert re.search(r"Model\s+offline", text) and re.search(r"Cost\s+\$0\b", text)
    assert not re.search(r"\b(?:ch|tok)\b", text) and "claude" not in text
    page.screenshot(path=str(ARTIFACTS / "report-sentence.png"))
    context.close()


def test_the_report_says_an_old_exchange_was_recalled_for_its_meaning(server, demo, browser):
    from office.models import Channel
    from sessions import services, upkeep
    from tests.sessions.test_meaning import ASKED_OTHERWISE, puppies_history

    # Forty earlier tasks in Mina's 1:1, one of them about the puppies, embedded.
    mina = Channel.objects.get(kind=Channel.Kind.DIRECT, coworker__slug="mina")
    session = services.import_session(channel=mina, data=puppies_history()).session
    assert upkeep.embed_session(session)
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    send(page, ASKED_OTHERWISE)
    wait_for_replies(page, 1)

    page.locator(".msg.assistant").last.locator(".ctxbar .seg").first.wait_for(timeout=10_000)
    page.locator(".msg.assistant").last.locator(".ctxbar").click()
    dialog = page.locator(".report")
    dialog.wait_for(state="visible")
    # The import made the forty tasks this conversation; the question is its task 41.
    recalled = dialog.locator(".recalled-list li", has_text="Task 3 of this conversation")
    recalled.wait_for(state="attached")
    assert re.search(r"close in meaning \(0\.\d\d\), no word in common", recalled.inner_text())
    page.screenshot(path=str(ARTIFACTS / "report-recalled-by-meaning.png"))
    context.close()


def test_when_the_network_goes_the_page_says_so_at_once_keeps_the_keyboard_and_is_back_when_it_returns(server, demo, browser):
    context, page = sign_in(browser, server)
    open_channel(page, server, "Mina")
    box = page.locator(".composer textarea")
    box.fill("A draft typed before the network went")

    context.set_offline(True)  # the socket itself may look open for a minute; the browser knows at once
    page.wait_for_selector(".conn:has-text('Offline: no network')", timeout=5_000)
    box.press("End")
    box.type(", and more typed after")  # the keyboard is never taken away
    box.press("Enter")  # nothing to send it over: it stays in the composer
    assert box.input_value() == "A draft typed before the network went, and more typed after"
    assert page.locator(".msg.user").count() == 0
    page.wait_for_timeout(2_500)  # no reconnect attempts while there is no network
    assert page.locator(".conn").inner_text().startswith("Offline: no network")
    page.screenshot(path=str(ARTIFACTS / "network-gone.png"))

    context.set_offline(False)
    page.wait_for_selector(".conn:has-text('Live')", timeout=5_000)  # at once, not after a back-off
    assert box.input_value() == "A draft typed before the network went, and more typed after"
    box.press("Enter")
    page.wait_for_function("document.querySelectorAll('.msg.assistant:not(.live)').length >= 1", timeout=20_000)
    context.close()
