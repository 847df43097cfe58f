"""The channel page, a past conversation, the prompt report endpoint and the memory page, as a member
and as an outsider sees them (the page script and the socket are tested in the browser and test_consumer)."""

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from office.models import Channel
from sessions import history, nudge, services
from sessions.models import MemoryEvent, MemoryItem, Message, Session, SummaryVersion, Task

pytestmark = pytest.mark.django_db

NUDGE = "💡 This conversation is getting long. If the topic has changed, starting a new conversation will help."


def report(*, memory_items=(), summarized_through=0, detailed=(1,), recalled=()) -> dict:
    """A prompt report shaped like sessions.context's."""
    return {
        "turn": 3,
        "layers": {
            "system": {"chars": 1200, "tokens": 300},
            "memory": {"chars": 80, "tokens": 20, "items": list(memory_items), "budget": 4000},
            "summary": {"chars": 400, "tokens": 100, "budget": 6000, "summarized_through": summarized_through, "digested_tasks": [2]},
            "recent": {"chars": 2000, "tokens": 500, "budget": 20000, "tasks": list(detailed), "levels": {"1": "full"}},
            "recalled": {"chars": 0, "tokens": 0, "budget": 3000, "tasks": list(recalled), "memory_items": []},
            "current": {"chars": 40, "tokens": 10},
        },
        "detailed_tasks": list(detailed),
        "digested_tasks": [2],
        "summarized_through": summarized_through,
        "recalled_tasks": list(recalled),
        "total_chars": 3720,
        "estimated_tokens": 930,
        "notes": ["shortened 1 old tool result"],
    }


@pytest.fixture
def conversation(direct_channel):
    """A 1:1 with Mina: an instruction with markup in it, a tool call and its result, a reply in markdown."""
    session = services.get_active_session(channel=direct_channel)
    task, _ = services.start_task(session=session, instruction="Draft the <script>alert(1)</script> email")
    services.append_message(
        session=session,
        turn=1,
        role="assistant",
        content="",
        tool_calls=[history.ToolCall(id="toolu_1", name="read_document", args={"title": "Launch <plan>"})],
        coworker="mina",
    )
    services.append_message(session=session, turn=1, role="tool", content="Launch on <b>May 4</b>.", tool_call_id="toolu_1", coworker="mina")
    services.append_message(
        session=session,
        turn=1,
        role="assistant",
        content="Here is a **draft**.\n\n<img src=x onerror=alert(1)> [click](javascript:alert(1))",
        coworker="mina",
    )
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, prompt_report=report())
    return session


def test_it_renders_history_with_user_text_escaped_and_assistant_html_sanitized(client, bob, conversation, direct_channel):
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    assert "Draft the &lt;script&gt;alert(1)&lt;/script&gt; email" in page
    assert "<script>alert(1)" not in page
    assert "Here is a <strong>draft</strong>." in page  # the server's markdown, not raw text
    assert "<img" not in page and 'href="javascript:' not in page and "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")
    # Tool traffic is compact: the call by name with its arguments folded away, the result collapsed.
    assert '<code>read_document</code>' in page and "&quot;title&quot;: &quot;Launch &lt;plan&gt;&quot;" in page
    assert '<details class="msg tool-result"' in page and "Launch on &lt;b&gt;May 4&lt;/b&gt;." in page
    assert "1 task in this conversation" in page


def test_the_page_tells_its_script_where_to_start(client, bob, conversation, direct_channel):
    client.force_login(bob)
    direct_channel.refresh_from_db()

    response = client.get(f"/c/{direct_channel.pk}/")

    data = json.loads(response.content.decode().split('<script id="channel-data" type="application/json">')[1].split("</script>")[0])
    assert data["session"] == conversation.pk
    assert data["seq"] == direct_channel.last_event_seq
    assert data["socket"] == f"/ws/channels/{direct_channel.pk}/"
    assert data["coworkers"]["mina"]["name"] == "Mina"
    # The context bar of turn 1, ready for the first paint.
    assert [s["name"] for s in data["reports"]["1"]["segments"]] == ["system", "memory", "summary", "recent", "recalled", "current"]


def test_a_reply_shows_what_its_prompt_was_made_of(client, bob, conversation, direct_channel):
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    assert 'class="ctxbar" data-report="1"' in page
    assert "Context · 3,720 characters · ~930 tokens" in page
    assert 'title="Instructions: 1,200 characters · ~300 tokens"' in page


def test_the_bar_goes_on_the_replies_of_the_coworker_whose_prompt_it_was(client, bob, main_channel, mina, theo):
    session = services.get_active_session(channel=main_channel)
    task, _ = services.start_task(session=session, instruction="@mina @theo ideas?", coworker="mina", responders=["mina", "theo"])
    services.append_message(session=session, turn=1, role="assistant", content="Idea from Mina", coworker="mina")
    services.append_message(session=session, turn=1, role="assistant", content="Idea from Theo", coworker="theo")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, prompt_report=report())
    client.force_login(bob)

    page = client.get(f"/c/{main_channel.pk}/").content.decode()

    mina_reply = page[page.index("Idea from Mina") : page.index("Idea from Theo")]
    theo_reply = page[page.index("Idea from Theo") :].split("</article>")[0]
    assert 'class="ctxbar"' in mina_reply and 'class="ctxbar"' not in theo_reply


def test_notices_are_styled_apart_and_the_nudge_sits_under_its_instruction(client, bob, conversation, direct_channel):
    services.start_task(session=conversation, instruction="Second instruction")
    services.append_message(session=conversation, turn=2, role="assistant", content="Second reply", coworker="mina")
    services.append_message(session=conversation, turn=2, role="notice", content=NUDGE)
    services.append_message(session=conversation, turn=2, role="notice", content="Mina handed this to Theo.")
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    instruction, nudge, reply = page.index("Second instruction"), page.index("💡 This conversation"), page.index("Second reply")
    assert instruction < nudge < reply
    assert 'class="msg nudge"' in page and "Start a new conversation" in page and "Keep going" in page
    assert '<aside class="msg notice"' in page and "Mina handed this to Theo." in page


def test_a_failed_task_says_so_under_its_instruction(client, bob, conversation, direct_channel):
    task, _ = services.start_task(session=conversation, instruction="Try again")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.FAILED, error="The model is overloaded. Try again in a minute.")
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/").content.decode()

    assert 'data-status="failed">Failed</span>' in page
    assert "The model is overloaded. Try again in a minute." in page


def test_the_sidebar_shows_who_is_working(client, bob, direct_channel, theo, office):
    Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name="Theo", coworker=theo)
    session = services.get_active_session(channel=direct_channel)
    task, _ = services.start_task(session=session, instruction="Plan the launch")
    Task.objects.filter(pk=task.pk).update(status=Task.Status.RUNNING)
    client.force_login(bob)

    page = client.get(reverse("office", args=["acme"])).content.decode()

    mina = page[page.index('data-coworker="mina"') :][:600]
    theo_link = page[page.index('data-coworker="theo"') :][:600]
    assert "status working" in mina and "(working)" in mina
    assert "status idle" in theo_link and "(idle)" in theo_link
    assert reverse("memory", args=["acme"]) in page


# Past conversations ------------------------------------------------------------------------------


def end(session: Session) -> Session:
    services.end_active_session(channel=session.channel)
    session.refresh_from_db()
    return session


def test_a_member_reads_a_past_conversation(client, bob, conversation, direct_channel):
    ended = end(conversation)
    client.force_login(bob)

    page = client.get(f"/c/{direct_channel.pk}/")
    past = client.get(reverse("past_session", args=[direct_channel.pk, ended.pk]))

    assert reverse("past_session", args=[direct_channel.pk, ended.pk]).encode() in page.content
    assert past.status_code == 200
    text = past.content.decode()
    assert "Past conversation with Mina" in text and "read-only" in text
    assert "Draft the &lt;script&gt;" in text and "Here is a <strong>draft</strong>." in text
    assert 'id="composer' not in text  # nothing to send from here


def test_a_past_conversation_of_a_shared_channel_says_where_it_was(client, bob, main_channel):
    session = services.get_active_session(channel=main_channel)
    services.start_task(session=session, instruction="Is the deploy green?")
    nudge.start_new_conversation(channel=main_channel)
    client.force_login(bob)

    text = client.get(reverse("past_session", args=[main_channel.pk, session.pk])).content.decode()

    assert f"Past conversation in #{main_channel.name}" in text


def test_the_active_conversation_is_on_the_channel_page(client, bob, conversation, direct_channel):
    client.force_login(bob)
    response = client.get(reverse("past_session", args=[direct_channel.pk, conversation.pk]))
    assert response.status_code == 302 and response["Location"] == f"/c/{direct_channel.pk}/"


def test_an_outsider_cannot_read_a_past_conversation(client, charlie, conversation, direct_channel, main_channel):
    ended = end(conversation)
    client.force_login(charlie)
    assert client.get(reverse("past_session", args=[direct_channel.pk, ended.pk])).status_code == 404


def test_a_session_is_found_only_under_its_own_channel(client, bob, conversation, direct_channel, main_channel):
    ended = end(conversation)
    client.force_login(bob)
    assert client.get(reverse("past_session", args=[main_channel.pk, ended.pk])).status_code == 404


# The prompt report -------------------------------------------------------------------------------


def report_url(channel: Channel, turn: int, session: Session | None = None) -> str:
    url = reverse("task_report", args=[channel.pk, turn])
    return f"{url}?session={session.pk}" if session else url


def test_a_member_gets_a_tasks_report_with_its_summary_memory_and_cost(client, bob, office, conversation, direct_channel):
    fact = MemoryItem.objects.create(office=office, text="Launch is on May 4.", kind="project", pinned=True)
    SummaryVersion.objects.create(session=conversation, text="## Decisions\n- Launch on May 4.", from_turn=1, through_turn=2, model="claude-haiku-4-5")
    SummaryVersion.objects.create(session=conversation, text="An older fold", from_turn=1, through_turn=1, model="claude-haiku-4-5")
    task = Task.objects.get(session=conversation, turn=1)
    Task.objects.filter(pk=task.pk).update(
        prompt_report=report(memory_items=[fact.pk], summarized_through=2),
        provider="claude",
        model="claude-sonnet-4-6",
        input_tokens=1200,
        cache_write_tokens=800,
        cache_read_tokens=0,
        output_tokens=150,
        cost_usd=Decimal("0.006150"),
    )
    client.force_login(bob)

    answer = client.get(report_url(direct_channel, 1)).json()

    assert answer["turn"] == 1 and answer["coworker"] == ""
    assert answer["report"]["layers"]["recent"]["tasks"] == [1]
    assert answer["report"]["total_chars"] == 3720
    assert answer["summary"]["text"] == "## Decisions\n- Launch on May 4." and answer["summary"]["through_turn"] == 2
    assert answer["memory_items"] == [
        {"id": fact.pk, "text": "Launch is on May 4.", "kind": "project", "scope": "office", "scope_name": "Office", "pinned": True, "active": True, "layer": "memory"}
    ]
    assert answer["usage"] == {
        "provider": "claude",
        "model": "claude-sonnet-4-6",
        "input_tokens": 1200,
        "cache_write_tokens": 800,
        "cache_read_tokens": 0,
        "output_tokens": 150,
        "cost_usd": "0.006150",
        "calls": 0,  # the tokens were set on the task here, with no model call recorded
        "cache_ttl": [],  # so no cache lifetime was asked for either
    }


def test_a_task_still_waiting_has_no_report_yet(client, bob, conversation, direct_channel):
    services.start_task(session=conversation, instruction="Queued one")
    client.force_login(bob)

    answer = client.get(report_url(direct_channel, 2)).json()

    assert answer["status"] == "queued" and answer["report"] is None and answer["summary"] is None


def test_the_report_of_a_past_session_is_found_with_its_id(client, bob, conversation, direct_channel):
    ended = end(conversation)
    client.force_login(bob)

    assert client.get(report_url(direct_channel, 1)).status_code == 404  # the new session has no task 1
    assert client.get(report_url(direct_channel, 1, ended)).json()["session"] == ended.pk
    assert client.get(report_url(direct_channel, 1) + "?session=abc").status_code == 404


def test_an_outsider_gets_404_for_a_report(client, charlie, conversation, direct_channel):
    client.force_login(charlie)
    assert client.get(report_url(direct_channel, 1)).status_code == 404
    assert client.get(report_url(direct_channel, 1, conversation)).status_code == 404


def test_a_report_is_not_found_through_another_channel(client, bob, conversation, direct_channel, main_channel):
    client.force_login(bob)
    # main has no task 1 of its own, and the 1:1's session is not main's.
    assert client.get(report_url(main_channel, 1)).status_code == 404
    assert client.get(report_url(main_channel, 1, conversation)).status_code == 404


def test_the_report_requires_login(client, conversation, direct_channel):
    assert client.get(report_url(direct_channel, 1)).status_code == 302


# The memory page ---------------------------------------------------------------------------------


@pytest.fixture
def memory(office, mina, direct_channel):
    return {
        "office": MemoryItem.objects.create(office=office, text="Our trial is 14 days.", kind="company"),
        "mina": MemoryItem.objects.create(office=office, scope="coworker", coworker=mina, text="Mina writes the newsletter.", kind="rule"),
        "gone": MemoryItem.objects.create(office=office, text="An old fact", kind="project", active=False),
    }


def memory_url(name: str, item: MemoryItem | None = None) -> str:
    return reverse(name, args=["acme", item.pk]) if item else reverse(name, args=["acme"])


def test_the_memory_page_lists_the_offices_and_each_coworkers_memory(client, bob, memory):
    client.force_login(bob)

    page = client.get(memory_url("memory")).content.decode()

    assert "Our trial is 14 days." in page and "Mina writes the newsletter." in page
    assert "An old fact" not in page  # deleted items are gone from the page (kept in the audit log)
    office_chars = len("Our trial is 14 days.")
    assert f"Office memory: <strong>{round(100 * office_chars / 4000)}%</strong> of 4,000 characters" in page
    mina_chars = office_chars + len("Mina writes the newsletter.")
    assert f"<strong>{round(100 * mina_chars / 4000)}%</strong> of 4,000 characters" in page


def test_a_large_memory_shows_its_newest_items_and_counts_them_all(client, bob, memory, office, monkeypatch):
    from office import memory_views

    monkeypatch.setattr(memory_views, "PAGE_ITEMS", 5)
    for n in range(20):
        MemoryItem.objects.create(office=office, text=f"Locker {n} code is {1000 + n}.", kind="project")
    client.force_login(bob)

    page = client.get(memory_url("memory")).content.decode()

    assert page.count('class="memory-item') == 5 and "Showing 5 of 22 items" in page
    office_chars = len("Our trial is 14 days.") + sum(len(f"Locker {n} code is {1000 + n}.") for n in range(20))
    assert f"Office memory: <strong>{round(100 * office_chars / 4000)}%</strong>" in page, "the budget counts every item"


def test_a_member_edits_a_memory_item_and_the_edit_is_audited(client, bob, memory):
    client.force_login(bob)
    item = memory["office"]

    response = client.post(
        memory_url("memory_edit", item), {f"item{item.pk}-text": "  Our trial is 30 days.  ", f"item{item.pk}-kind": "rule"}
    )

    assert response.status_code == 302 and response["Location"].endswith(f"#item-{item.pk}")
    item.refresh_from_db()
    assert (item.text, item.kind, item.pinned) == ("Our trial is 30 days.", "rule", False)
    event = MemoryEvent.objects.get(item=item)
    assert (event.action, event.before, event.after, event.actor) == ("update", "Our trial is 14 days.", "Our trial is 30 days.", "person:bob")
    assert "Memory saved." in client.get(memory_url("memory")).content.decode()


def test_saving_without_a_change_writes_no_event(client, bob, memory):
    client.force_login(bob)
    item = memory["office"]

    client.post(memory_url("memory_edit", item), {f"item{item.pk}-text": item.text, f"item{item.pk}-kind": item.kind})

    assert not MemoryEvent.objects.exists()


def test_a_member_pins_and_unpins_an_item(client, alice, memory):
    client.force_login(alice)
    item = memory["mina"]

    client.post(memory_url("memory_pin", item), {"pinned": "1"})
    item.refresh_from_db()
    assert item.pinned

    client.post(memory_url("memory_pin", item), {"pinned": "0"})
    item.refresh_from_db()
    assert not item.pinned
    assert list(MemoryEvent.objects.order_by("created_at").values_list("action", "actor")) == [
        ("update", "person:alice"),
        ("update", "person:alice"),
    ]


def test_a_member_deletes_an_item(client, bob, memory):
    client.force_login(bob)
    item = memory["office"]

    response = client.post(memory_url("memory_delete", item))

    assert response.status_code == 302
    item.refresh_from_db()
    assert not item.active
    event = MemoryEvent.objects.get(item=item)
    assert (event.action, event.before, event.actor) == ("delete", "Our trial is 14 days.", "person:bob")
    page = client.get(memory_url("memory")).content.decode()
    assert "Deleted “Our trial is 14 days.”; the audit log keeps it." in page
    assert '<p class="memory-text">Our trial is 14 days.</p>' not in page
    # Deleting it again finds nothing to delete.
    assert client.post(memory_url("memory_delete", item)).status_code == 404


@pytest.mark.parametrize(
    "text, kind, message",
    [
        ("   ", "rule", "A memory needs some text. To remove it, use Delete."),
        ("x" * 1001, "rule", "Keep a memory under 1,000 characters (it is 1001)."),
        ("Fine text", "gossip", "Pick one of the listed kinds."),
    ],
)
def test_an_invalid_edit_is_shown_with_its_error_and_changes_nothing(client, bob, memory, text, kind, message):
    client.force_login(bob)
    item = memory["office"]

    response = client.post(memory_url("memory_edit", item), {f"item{item.pk}-text": text, f"item{item.pk}-kind": kind})

    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    assert f'<li class="memory-item invalid" id="item-{item.pk}">' in page
    assert 'aria-invalid="true"' in page
    item.refresh_from_db()
    assert item.text == "Our trial is 14 days." and not MemoryEvent.objects.exists()


def test_an_outsider_gets_404_on_the_memory_page_and_its_forms(client, charlie, memory):
    client.force_login(charlie)
    item = memory["office"]

    assert client.get(memory_url("memory")).status_code == 404
    assert client.post(memory_url("memory_edit", item), {f"item{item.pk}-text": "Hacked", f"item{item.pk}-kind": "rule"}).status_code == 404
    assert client.post(memory_url("memory_pin", item), {"pinned": "1"}).status_code == 404
    assert client.post(memory_url("memory_delete", item)).status_code == 404
    item.refresh_from_db()
    assert item.text == "Our trial is 14 days." and item.active and not item.pinned


def test_an_item_of_another_office_is_not_found_through_this_one(client, charlie, alice, other_office, memory):
    theirs = MemoryItem.objects.create(office=other_office, text="Globex secret", kind="company")
    client.force_login(alice)

    assert client.post(memory_url("memory_delete", theirs)).status_code == 404
    assert "Globex secret" not in client.get(memory_url("memory")).content.decode()
    theirs.refresh_from_db()
    assert theirs.active


def test_memory_forms_require_csrf(bob, memory):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    item = memory["office"]

    assert client.post(memory_url("memory_delete", item)).status_code == 403
    assert client.post(memory_url("memory_pin", item), {"pinned": "1"}).status_code == 403
    item.refresh_from_db()
    assert item.active and not item.pinned

    # With the token from the page, the same post goes through.
    page = client.get(memory_url("memory"))
    token = page.cookies["csrftoken"].value
    assert client.post(memory_url("memory_pin", item), {"pinned": "1", "csrfmiddlewaretoken": token}).status_code == 302


def test_memory_changes_are_posts_only(client, bob, memory):
    client.force_login(bob)
    assert client.get(memory_url("memory_delete", memory["office"])).status_code == 405
    memory["office"].refresh_from_db()
    assert memory["office"].active


def test_the_memory_page_links_an_item_to_the_task_it_came_from(client, bob, office, conversation, direct_channel):
    task = Task.objects.get(session=conversation, turn=1)
    MemoryItem.objects.create(office=office, text="Launch on May 4.", kind="project", source_task=task)
    client.force_login(bob)

    page = client.get(memory_url("memory")).content.decode()

    assert f'href="/c/{direct_channel.pk}/#turn-1">from Mina, task 1</a>' in page



def test_large_tool_call_arguments_count_toward_the_page_and_are_shown_cut(client, bob, direct_channel, monkeypatch):
    """Imported tool calls of 900 KB of nested lists each made a 291 MB page: the page counts them
    and shows each cut short."""
    from office import views

    monkeypatch.setattr(views, "PAGE_CHARS", 100_000)
    session = services.get_active_session(channel=direct_channel)
    nested = [[[0] * 10_000]] * 3  # about 60,000 characters of JSON
    for n in range(6):
        task, _ = services.start_task(session=session, instruction=f"Step {n}", coworker="mina")
        services.append_message(session=session, turn=task.turn, role="assistant", coworker="mina",
                                tool_calls=[history.ToolCall(id=f"toolu_{n}", name="write_document", args={"rows": nested})])
    client.force_login(bob)

    page = client.get(reverse("channel", args=[direct_channel.pk])).content.decode()

    assert "Step 5" in page and "Step 0" not in page, "only the newest that fit"
    assert len(page) < 100_000
    assert "characters in all)</pre>" in page

def test_message_records_are_never_changed_by_the_page(client, bob, conversation, direct_channel):
    before = list(Message.objects.values_list("id", "content"))
    client.force_login(bob)
    client.get(f"/c/{direct_channel.pk}/")
    assert list(Message.objects.values_list("id", "content")) == before


def test_a_page_of_large_messages_shows_the_newest_that_fit_and_says_so(client, bob, direct_channel, monkeypatch):
    from office import views

    monkeypatch.setattr(views, "PAGE_CHARS", 10_000)  # each instruction is 3,000 characters of code
    session = services.get_active_session(channel=direct_channel)
    for n in range(6):
        services.start_task(session=session, instruction=f"Code {n}:\n```python\n" + "x = 1\n" * 500 + "```", coworker="mina")
    client.force_login(bob)

    page = client.get(reverse("channel", args=[direct_channel.pk])).content.decode()

    shown = page.count('class="msg user')
    assert 1 <= shown < 6 and "Code 5:" in page and "Code 0:" not in page, "the newest, and only what fits"
    assert f"Showing the latest {shown} messages." in page
