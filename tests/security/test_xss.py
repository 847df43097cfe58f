"""Script in what people type, what the model writes, coworker names, channel names and document titles
reaches every page it appears on as text: nothing runs, and the text is still there to read."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from coworkers.models import Coworker
from coworkers.providers.scripted import CallTools, Reply, ScriptedProvider
from office.models import Channel, Document
from sessions import history, nudge, pipeline, posting
from sessions.models import MemoryItem, Session, Task

from .conftest import assert_inert

pytestmark = pytest.mark.django_db

USER_TEXT = 'Plan <script>alert("user")</script> <img src=x onerror=alert("user")> [go](javascript:alert("user"))'
MODEL_TEXT = (
    'Sure. <script>alert("model")</script> <img src=x onerror=alert("model")> '
    '[go](javascript:alert("model")) <a href="javascript:alert(1)">x</a> "><svg onload=alert("model")>'
)
NAME = '<img src=x onerror=alert("name")>Mina'
ROLE = '<script>alert("role")</script>'
CHANNEL_NAME = '<script>alert("channel")</script>'
TOPIC = '"><img src=x onerror=alert("topic")>'
TITLE = '<script>alert("title")</script> plan'
DOCUMENT_TEXT = '<img src=x onerror=alert("document")>'
MEMORY_TEXT = '<img src=x onerror=alert("memory")> The launch is on May 4.'


def escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@pytest.fixture
def hostile(office, bob, frames, no_background, monkeypatch):
    """An office where every name and text carries script: a coworker, a project channel, an instruction,
    a reply that writes a document, remembers a fact and lists the documents, then an ended session."""
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)
    coworker = Coworker.objects.create(office=office, name=NAME, slug="mina", role=ROLE, persona="You are Mina.")
    direct = Channel.objects.create(office=office, kind=Channel.Kind.DIRECT, name=NAME, coworker=coworker)
    project = Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name=CHANNEL_NAME, topic=TOPIC)
    project.members.add(coworker)

    model = ScriptedProvider(
        [
            CallTools(
                [
                    history.ToolCall(id="toolu_1", name="write_document", args={"title": TITLE, "content": DOCUMENT_TEXT}),
                    history.ToolCall(id="toolu_2", name="remember", args={"text": MEMORY_TEXT, "kind": "project"}),
                    history.ToolCall(id="toolu_3", name="list_documents", args={}),
                ]
            ),
            Reply(MODEL_TEXT),
        ]
    )
    task = posting.post_instruction(channel=direct, text=USER_TEXT, provider=model)
    task = pipeline.run_task(task.pk, provider=model)
    assert task.status == Task.Status.DONE, task.error
    assert Document.objects.get(office=office).title == TITLE
    assert MemoryItem.objects.get(office=office, active=True).text == MEMORY_TEXT

    ended = Session.objects.get(channel=direct, status=Session.Status.ACTIVE)
    nudge.start_new_conversation(channel=direct)
    # The new session's first instruction is hostile too, so the channel page shows one.
    posting.post_instruction(channel=direct, text=USER_TEXT, coworker=coworker)
    return {"direct": direct, "project": project, "ended": ended, "coworker": coworker, "task": task}


@pytest.fixture
def client(bob) -> Client:
    client = Client()
    client.force_login(bob)
    return client


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    html = response.content.decode()
    assert_inert(html)
    return html


def test_the_office_page_and_its_sidebar_show_names_as_text(client, hostile):
    html = page(client, "/o/acme/")

    assert escaped(NAME) in html and escaped(ROLE) in html
    assert escaped(CHANNEL_NAME) in html and escaped(TOPIC) in html


def test_the_channel_page_shows_instructions_replies_names_and_titles_as_text(client, hostile):
    ended = hostile["ended"]
    # The ended session holds the reply; the channel page shows the new session's instruction.
    html = page(client, f"/c/{hostile['direct'].pk}/")
    # A person's markdown is rendered as a coworker's is: raw HTML shown as text, no script link.
    shown_as_text = 'Plan &lt;script&gt;alert("user")&lt;/script&gt; &lt;img src=x onerror=alert("user")&gt;'
    assert shown_as_text in html and '<a href="javascript' not in html
    assert f"<h1>{escaped(NAME)}</h1>" in html and escaped(ROLE) in html
    assert '"name": "\\u003Cimg src=x onerror=alert(\\"name\\")\\u003EMina"' in html, "the page data is JSON, not markup"

    past = page(client, f"/c/{hostile['direct'].pk}/sessions/{ended.pk}/")
    assert shown_as_text in past
    # The model's markdown is rendered, its raw HTML shown as text, its script link gone.
    assert "Sure. &lt;script&gt;alert(" in past and "&lt;img src=x onerror=alert(" in past
    # The document title in the tool call, and in the results of the tools.
    assert escaped(TITLE).replace("&quot;", '\\&quot;') in past, "the call's arguments, as JSON text"
    assert f"Saved “{escaped(TITLE)}” as version 1." in past
    assert f"- {escaped(TITLE)} (draft, version 1" in past
    assert escaped(MEMORY_TEXT) in past


def test_a_project_channel_shows_its_name_and_topic_as_text(client, hostile):
    html = page(client, f"/c/{hostile['project'].pk}/")

    assert f"<h1>{escaped(CHANNEL_NAME)}</h1>" in html
    assert escaped(TOPIC) in html


def test_the_memory_page_shows_facts_and_names_as_text(client, hostile):
    html = page(client, "/o/acme/memory/")

    assert f'<p class="memory-text">{escaped(MEMORY_TEXT)}</p>' in html
    assert escaped(NAME) in html, "the coworker's section and the item's source link"


def test_a_hostile_memory_edit_and_delete_come_back_as_text(client, hostile):
    item = MemoryItem.objects.get(active=True)

    invalid = client.post(f"/o/acme/memory/{item.pk}/edit/", {f"item{item.pk}-text": USER_TEXT, f"item{item.pk}-kind": "gossip"})
    assert invalid.status_code == 400
    assert_inert(invalid.content.decode())
    assert escaped(USER_TEXT) in invalid.content.decode(), "the text typed is kept in the form, as text"

    client.post(f"/o/acme/memory/{item.pk}/edit/", {f"item{item.pk}-text": USER_TEXT, f"item{item.pk}-kind": "rule"})
    assert escaped(USER_TEXT) in page(client, "/o/acme/memory/")

    client.post(f"/o/acme/memory/{item.pk}/delete/")
    html = page(client, "/o/acme/memory/")
    assert "Deleted “Plan &lt;script&gt;alert(&quot;user&quot;)&lt;/script&gt;" in html, "the flash message names it, as text"


def test_the_report_is_json_that_a_browser_will_not_read_as_a_page(client, hostile):
    item = MemoryItem.objects.get(active=True)
    task = hostile["task"]
    Task.objects.filter(pk=task.pk).update(prompt_report={"layers": {"memory": {"chars": 10, "items": [item.pk]}}})

    response = client.get(f"/c/{hostile['direct'].pk}/tasks/1/report/?session={hostile['ended'].pk}")

    assert response["Content-Type"] == "application/json"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.json()["memory_items"][0]["text"] == MEMORY_TEXT, "the report page script shows it with textContent"


def test_the_admin_shows_titles_names_and_messages_as_text(hostile):
    staff = User.objects.create_superuser("root", password="root-password")
    client = Client()
    client.force_login(staff)
    document = Document.objects.get()

    for url in [
        "/admin/office/document/",
        f"/admin/office/document/{document.pk}/change/",
        "/admin/coworkers/coworker/",
        f"/admin/work_sessions/session/{hostile['ended'].pk}/change/",
        "/admin/work_sessions/memoryitem/",
        "/admin/office/channel/",
    ]:
        html = page(client, url)
        assert "&lt;script&gt;alert(" in html or "&lt;img src=x onerror=alert(" in html, url


@pytest.mark.parametrize(
    "live",
    [
        USER_TEXT,
        NAME,
        f'<p title="x">{TOPIC}</p>',
        '<a href=" JavaScript:alert(1)">x</a>',
        "<script>fetch('/steal')</script>",
        '<div onmouseover="steal()">x</div>',
    ],
)
def test_the_check_itself_catches_live_script(live):
    """The pages above pass because they are inert, not because the check is blind."""
    with pytest.raises(AssertionError):
        assert_inert(f"<html><body>{live}</body></html>")
    assert_inert(f"<html><body>{escaped(live)}</body></html>")
