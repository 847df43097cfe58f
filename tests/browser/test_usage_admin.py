"""Usage and admin in a real browser, on a laptop screen (1440 px): this week's costs from the sidebar,
and the demo user tuning a budget in the context policy list, every column in view.

Screenshots go to test-artifacts/ (usage.png, usage-dark.png, policy-list.png, policy-page.png).
"""

from decimal import Decimal

from coworkers.models import Coworker
from office.models import Channel, Office
from sessions.models import ContextPolicy, ModelCall
from sessions.policy import BUDGET_FIELDS, default_policy
from tests.browser.test_office import ARTIFACTS, browser, demo, open_channel, send, server, sign_in  # noqa: F401

LAPTOP = {"width": 1440, "height": 900}


def spend(slug: str, *, tokens: int, cached: int, cost: str, cache_ttl: str = "5m") -> None:
    """A Claude call of the coworker's, recorded as the pipeline records one."""
    office = Office.objects.get(slug="acme")
    ModelCall.objects.create(
        office=office, coworker=Coworker.objects.get(office=office, slug=slug), coworker_slug=slug,
        provider="claude", model="claude-sonnet-4-6", input_tokens=tokens, cache_read_tokens=cached,
        output_tokens=tokens // 10, cost_usd=Decimal(cost), cache_ttl=cache_ttl,
    )


def test_a_person_sees_this_weeks_usage_per_coworker_and_day(server, demo, browser):
    spend("mina", tokens=12_000, cached=36_000, cost="0.0612", cache_ttl="1h")
    spend("theo", tokens=4_000, cached=0, cost="0.018")
    context, page = sign_in(browser, server)
    page.set_viewport_size(LAPTOP)
    # And one reply now, from the offline coworker: recorded too, at no cost.
    open_channel(page, server, "Iris")
    send(page, "What should the empty state of the planner say?")
    page.locator(".msg.assistant:not(.live)").wait_for(timeout=30_000)
    page.wait_for_function("document.getElementById('working').childElementCount === 0", timeout=10_000)

    page.get_by_role("link", name="Usage").click()
    page.wait_for_url(f"{server}/o/acme/usage/")

    assert page.locator("h1").inner_text() == "Usage"
    mina = page.locator("tr[data-coworker='mina']")
    assert mina.locator("[data-col='share']").inner_text() == "75%"
    assert mina.locator("[data-col='cost']").inner_text() == "$0.06"
    assert page.locator("tr[data-coworker='iris'] [data-col='cost']").inner_text() == "$0.00"
    assert page.locator("tr[data-coworker='iris'] [data-col='tokens']").inner_text() != "0"
    # How long prompts were cached: Mina's person pauses (the hour), Theo's follow up quickly; offline, none.
    assert mina.locator("[data-col='kept']").inner_text() == "1 hour"
    assert page.locator("tr[data-coworker='theo'] [data-col='kept']").inner_text() == "5 minutes"
    assert page.locator("tr[data-coworker='iris'] [data-col='kept']").inner_text() == "—"
    assert page.locator("[data-total='cost']").inner_text() == "$0.08"
    assert page.locator("svg.chart").count() == 2
    assert page.locator("svg.chart rect").count() >= 3, "a bar segment for each coworker who worked today"
    page.screenshot(path=str(ARTIFACTS / "usage.png"), full_page=True)

    # On a phone the tables scroll sideways; what each coworker cost is in view without it.
    page.set_viewport_size({"width": 390, "height": 844})
    cost = page.locator("tr[data-coworker='theo'] [data-col='cost']").bounding_box()
    assert cost and cost["x"] + cost["width"] <= 390, cost
    page.set_viewport_size({"width": 1280, "height": 800})

    page.emulate_media(color_scheme="dark")
    page.reload()
    page.screenshot(path=str(ARTIFACTS / "usage-dark.png"), full_page=True)
    # The chart's words are drawn in the text colour of the page around them, whatever the scheme.
    axis = page.locator("svg.chart text").first
    assert axis.evaluate("t => getComputedStyle(t).fill") == page.locator(".chart-box").first.evaluate(
        "b => getComputedStyle(b).color"
    )
    context.close()


def kind_policies() -> None:
    """The channel kinds' rows a migration creates (a browser test's flushed database may have lost them)."""
    for kind in Channel.Kind.values:
        budgets = {name: getattr(default_policy(kind), name) for name in BUDGET_FIELDS}
        ContextPolicy.objects.get_or_create(channel_kind=kind, defaults=budgets)


def test_the_demo_user_tunes_a_budget_in_a_policy_list_that_fits_a_laptop(server, demo, browser):
    kind_policies()
    context, page = sign_in(browser, server)
    page.set_viewport_size(LAPTOP)

    page.goto(f"{server}/admin/work_sessions/contextpolicy/")

    table = page.locator("#result_list")
    headers = table.locator("thead th")
    assert headers.count() >= 7
    # The list scrolls sideways inside its box when it does not fit: every header must be inside that box.
    visible = page.locator("#changelist .results").evaluate("r => r.getBoundingClientRect().right")
    assert visible <= LAPTOP["width"]
    for index in range(headers.count()):
        box = headers.nth(index).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= visible + 0.5, headers.nth(index).inner_text()
    assert page.locator("#changelist .results").evaluate("r => r.scrollWidth <= r.clientWidth")
    # Headers wrap rather than run into the next column.
    overflowing = headers.evaluate_all("ths => ths.filter(th => th.scrollWidth > th.clientWidth + 1).map(th => th.innerText)")
    assert overflowing == []
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"], "no sideways scrolling"
    assert "room for memory" in table.inner_text().lower()
    page.screenshot(path=str(ARTIFACTS / "policy-list.png"), full_page=True)

    direct = ContextPolicy.objects.get(channel_kind="direct")
    row = table.locator("tbody tr", has=page.locator(f"a[href*='/contextpolicy/{direct.pk}/']"))
    row.locator("input[name$='-memory_chars']").fill("3000")
    page.locator("input[name='_save']").click()
    page.wait_for_selector(".messagelist .success")

    direct.refresh_from_db()
    assert direct.memory_chars == 3_000

    # Each policy's page: every field, grouped, with what it means in plain words.
    page.goto(f"{server}/admin/work_sessions/contextpolicy/{direct.pk}/change/")
    assert page.locator("fieldset h2", has_text="What the coworker reads in full").count() == 1
    assert "reads word for word" in page.locator("#id_detailed_tasks_helptext").inner_text()
    page.screenshot(path=str(ARTIFACTS / "policy-page.png"), full_page=True)
    context.close()
