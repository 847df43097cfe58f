"""Who may see and change what: an outsider (Charlie, of another office) gets exactly the answer a
nonexistent thing gets, over HTTP and the websocket, and changes nothing; sockets from another site
are refused; every form needs its CSRF token; the admin is for staff only."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from coworkers.tools import ToolContext, run_tool
from office.models import Channel, Document
from sessions.models import MemoryEvent, MemoryItem, Message, Session, Task

from tests.conftest import ORIGIN

from .conftest import MISSING, receive_until, snapshot


def as_user(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


# Reading over HTTP: another office's things are not there -------------------------------------------------------


def paired_urls(acme: dict, globex: Channel) -> list[tuple[str, str, str]]:
    """(what, the URL of Acme's real thing, the same URL for a thing that does not exist)."""
    channel, ended, active = acme["channel"].pk, acme["ended"].pk, acme["active"].pk
    item = acme["item"].pk
    return [
        ("office", "/o/acme/", "/o/no-such-office/"),
        ("memory page", "/o/acme/memory/", "/o/no-such-office/memory/"),
        ("usage page", "/o/acme/usage/?range=30d", "/o/no-such-office/usage/?range=30d"),
        ("channel", f"/c/{channel}/", f"/c/{MISSING}/"),
        ("past session", f"/c/{channel}/sessions/{ended}/", f"/c/{MISSING}/sessions/{ended}/"),
        ("past session through own channel", f"/c/{globex.pk}/sessions/{ended}/", f"/c/{globex.pk}/sessions/{MISSING}/"),
        ("active session", f"/c/{channel}/sessions/{active}/", f"/c/{channel}/sessions/{MISSING}/"),
        ("report", f"/c/{channel}/tasks/1/report/", f"/c/{MISSING}/tasks/1/report/"),
        ("report of a past session", f"/c/{channel}/tasks/1/report/?session={ended}", f"/c/{MISSING}/tasks/1/report/?session={ended}"),
        ("report through own channel", f"/c/{globex.pk}/tasks/1/report/?session={active}", f"/c/{globex.pk}/tasks/1/report/?session={MISSING}"),
        ("memory item through own office", f"/o/globex/memory/{item}/edit/", f"/o/globex/memory/{MISSING}/edit/"),
    ]


@pytest.mark.django_db
def test_an_outsider_gets_the_same_404_for_another_offices_things_as_for_nothing(charlie, acme, globex_channel):
    client = as_user(charlie)
    for what, real, missing in paired_urls(acme, globex_channel):
        method = client.post if "/memory/" in real and real.endswith("/edit/") else client.get
        theirs, nothing = method(real), method(missing)
        assert theirs.status_code == nothing.status_code == 404, what
        assert theirs.content == nothing.content, f"{what}: the answer tells an existing thing from a missing one"
        assert b"Acme" not in theirs.content and b"secret" not in theirs.content, what


@pytest.mark.django_db
def test_a_member_does_see_them(bob, acme, globex_channel):
    """The same URLs work for a member: the 404s above are about who asks, not broken URLs."""
    client = as_user(bob)
    channel, ended = acme["channel"].pk, acme["ended"].pk
    assert client.get("/o/acme/").status_code == 200
    assert client.get("/o/acme/usage/").status_code == 200
    assert "Acme&#x27;s trial is 14 days." in client.get("/o/acme/memory/").content.decode()
    # Instructions are shown as markdown, rendered and sanitized as replies are.
    assert "<p>Acme's secret instruction" in client.get(f"/c/{channel}/").content.decode()
    assert "<p>Acme's old secret instruction" in client.get(f"/c/{channel}/sessions/{ended}/").content.decode()
    assert client.get(f"/c/{channel}/tasks/1/report/").json()["report"]["total_chars"] == 10
    assert client.get(f"/c/{channel}/tasks/1/report/?session={ended}").json()["session"] == ended
    # And a member of Acme is an outsider to Globex.
    assert client.get(f"/c/{globex_channel.pk}/").status_code == 404
    assert client.get("/o/globex/").status_code == 404


@pytest.mark.django_db
def test_the_sidebar_and_the_home_page_name_no_other_office(charlie, acme, globex_channel):
    client = as_user(charlie)
    page = client.get("/o/globex/").content.decode()
    home = client.get("/", follow=True).content.decode()
    for shown in (page, home):
        assert "Globex" in shown
        assert "Acme" not in shown and "Mina" not in shown and f"/c/{acme['channel'].pk}/" not in shown


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    ["/", "/o/acme/", "/o/acme/memory/", "/o/acme/usage/", "/c/{channel}/", "/c/{channel}/sessions/{ended}/", "/c/{channel}/tasks/1/report/"],
)
def test_anonymous_visitors_are_sent_to_sign_in_whatever_exists(client, acme, path):
    real = path.format(channel=acme["channel"].pk, ended=acme["ended"].pk)
    missing = path.format(channel=MISSING, ended=MISSING).replace("acme", "no-such-office")
    for url in (real, missing):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), url


# Writing over HTTP: an outsider changes nothing -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["acme", "globex"])
def test_an_outsiders_memory_edits_pins_and_deletes_change_nothing(charlie, acme, globex_channel, slug):
    client = as_user(charlie)
    item = acme["item"]
    before = snapshot()

    responses = [
        client.post(f"/o/{slug}/memory/{item.pk}/edit/", {f"item{item.pk}-text": "Hacked", f"item{item.pk}-kind": "rule"}),
        client.post(f"/o/{slug}/memory/{item.pk}/pin/", {"pinned": "1"}),
        client.post(f"/o/{slug}/memory/{item.pk}/delete/"),
    ]

    assert [r.status_code for r in responses] == [404, 404, 404]
    assert snapshot() == before


# The websocket ----------------------------------------------------------------------------------------------------

# Both sockets: a channel's, and the office's (the live sidebar).
SOCKETS = ["/ws/channels/{channel}/", "/ws/offices/{office}/"]


def socket_path(template: str, channel: Channel, which: str) -> str:
    ids = {"theirs": (channel.pk, channel.office_id), "missing": (MISSING, MISSING), "huge id": (10**30, 10**30)}[which]
    return template.format(channel=ids[0], office=ids[1])


@pytest.mark.parametrize(
    "path, who, which",
    [
        (path, who, which)
        for path in SOCKETS
        for who, which in [("charlie", "theirs"), ("bob", "missing"), ("charlie", "missing"), (None, "theirs"), ("bob", "huge id")]
    ],
)
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_sockets_refuse_outsiders_and_missing_things_the_same_way(path, who, which, bob, charlie, direct_channel, sockets, cookie):
    user = {"bob": bob, "charlie": charlie, None: None}[who]
    session_key = await sync_to_async(cookie)(user) if user else None
    before = await database_sync_to_async(snapshot)()

    socket = sockets(socket_path(path, direct_channel, which), session_key)

    assert await socket.connect() == (False, 4403)
    assert await database_sync_to_async(snapshot)() == before, "not even a session is opened"


@pytest.mark.parametrize("path", SOCKETS)
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", [b"http://evil.example", b"http://127.0.0.1.evil.example:8000", b"null", None])
async def test_the_sockets_refuse_a_page_of_another_site(path, origin, bob, direct_channel, sockets, cookie):
    """A page elsewhere that opens a socket with the member's cookie (cross-site websocket hijacking)."""
    session_key = await sync_to_async(cookie)(bob)
    socket = sockets(socket_path(path, direct_channel, "theirs"), session_key, origin=(b"origin", origin) if origin else None)

    connected, _ = await socket.connect()

    assert not connected
    assert await Session.objects.acount() == 0


@pytest.mark.parametrize("path", SOCKETS)
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "origin, host, opens",
    [
        # Another app on the same machine, another port: the host name alone used to be enough.
        (b"http://127.0.0.1:1234", b"127.0.0.1:8000", False),
        (b"http://127.0.0.1:8000", b"127.0.0.1:8101", False),  # the default port of `make run` is no exception
        (b"http://localhost:1234", b"localhost:8101", False),
        # `make run PORT=8101`: the page's own host and port, whatever the port.
        (b"http://localhost:8101", b"localhost:8101", True),
        (b"http://127.0.0.1", b"127.0.0.1:80", True),
        # A Host that is not one of ALLOWED_HOSTS is not the office, even when the Origin agrees.
        (b"http://evil.example:8101", b"evil.example:8101", False),
    ],
)
async def test_the_sockets_open_only_from_the_pages_own_host_and_port(
    path, origin, host, opens, bob, direct_channel, open_websocket, cookie
):
    session_key = await sync_to_async(cookie)(bob)
    socket = open_websocket(
        socket_path(path, direct_channel, "theirs"), session_key=session_key, origin=(b"origin", origin),
        headers=[(b"host", host)],
    )

    connected, _ = await socket.connect()

    assert connected is opens


@pytest.mark.parametrize("path", SOCKETS)
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_sockets_accept_a_member_from_the_apps_own_origin(path, bob, direct_channel, sockets, cookie):
    """The refusals above are about who asks and from where: the same socket opens for a member."""
    socket = sockets(socket_path(path, direct_channel, "theirs"), await sync_to_async(cookie)(bob), origin=ORIGIN)
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["type"] in {"session", "sidebar"}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_from_their_own_channel_an_outsider_cannot_stop_or_see_another_offices_task(
    charlie, acme, globex_channel, enter, no_background
):
    """Their task id, sent over Charlie's own socket: the same `not_found` as an id that does not exist."""
    socket = await enter(charlie, globex_channel)
    before = await database_sync_to_async(snapshot)()
    answers = []
    for task_id in (acme["task"].pk, MISSING):
        await socket.send_json_to({"type": "task.stop", "task": task_id})
        answers.append(await socket.receive_json_from(timeout=5))

    assert answers[0] == answers[1] == {"type": "error", "code": "not_found", "detail": "There is no such task in this channel."}
    assert await database_sync_to_async(snapshot)() == before


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_new_conversation_and_instructions_from_an_outsider_reach_only_their_own_office(
    charlie, acme, globex_channel, enter, no_background, monkeypatch
):
    monkeypatch.setattr("sessions.tasks.check_nudge.enqueue", lambda *args: None)
    socket = await enter(charlie, globex_channel)
    acme_before = await database_sync_to_async(acme_rows)(acme["channel"])

    await socket.send_json_to({"type": "instruction", "text": "Mine", "client_id": "c-1"})
    await receive_until(socket, "task")
    await socket.send_json_to({"type": "session.new"})
    await receive_until(socket, "session")

    assert await database_sync_to_async(acme_rows)(acme["channel"]) == acme_before
    assert await Task.objects.filter(session__channel=globex_channel).acount() == 2


def acme_rows(channel: Channel) -> dict:
    return {
        "sessions": list(Session.objects.filter(channel=channel).order_by("pk").values_list("pk", "status")),
        "tasks": list(Task.objects.filter(session__channel=channel).order_by("pk").values_list("pk", "status", "client_id")),
        "messages": Message.objects.filter(session__channel=channel).count(),
    }


# CSRF -----------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_form_post_without_its_csrf_token_is_refused_and_changes_nothing(bob, acme):
    client = as_user(bob, enforce_csrf_checks=True)
    item = acme["item"]
    before = snapshot()

    posts = {
        "edit": client.post(f"/o/acme/memory/{item.pk}/edit/", {f"item{item.pk}-text": "Changed", f"item{item.pk}-kind": "rule"}),
        "pin": client.post(f"/o/acme/memory/{item.pk}/pin/", {"pinned": "1"}),
        "delete": client.post(f"/o/acme/memory/{item.pk}/delete/"),
        "sign out": client.post(reverse("logout")),
        "channel page": client.post(f"/c/{acme['channel'].pk}/"),
        "report": client.post(f"/c/{acme['channel'].pk}/tasks/1/report/"),
    }

    assert {name: r.status_code for name, r in posts.items()} == dict.fromkeys(posts, 403)
    assert snapshot() == before
    assert client.get("/o/acme/").status_code == 200, "still signed in"


@pytest.mark.django_db
def test_sign_in_needs_the_token_too(alice):
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "alice", "password": "alice-password"})
    assert response.status_code == 403
    assert client.get("/o/acme/").status_code == 302, "not signed in"


@pytest.mark.django_db
def test_a_token_from_another_session_does_not_work(bob, alice, acme):
    """A token that Alice's page carries is no good with Bob's cookie (and the other way round)."""
    theirs = as_user(alice, enforce_csrf_checks=True)
    theirs.get("/o/acme/memory/")
    token = theirs.cookies["csrftoken"].value
    client = as_user(bob, enforce_csrf_checks=True)
    client.get("/o/acme/memory/")
    client.cookies["csrftoken"] = "x" * 32

    response = client.post(f"/o/acme/memory/{acme['item'].pk}/delete/", {"csrfmiddlewaretoken": token})

    assert response.status_code == 403
    assert MemoryItem.objects.get(pk=acme["item"].pk).active


# The admin --------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/admin/", "/admin/work_sessions/memoryitem/", "/admin/office/document/", "/admin/auth/user/"])
def test_the_admin_refuses_members_who_are_not_staff(alice, acme, path):
    """Alice owns the office, and still: the admin is for staff."""
    client = as_user(alice)

    response = client.get(path)

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert b"Acme" not in client.get(path, follow=True).content


@pytest.mark.django_db
def test_the_admin_sign_in_refuses_a_member_who_is_not_staff(alice):
    client = Client()
    page = client.get("/admin/login/")
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "alice", "password": "alice-password", "csrfmiddlewaretoken": page.cookies["csrftoken"].value},
    )
    assert response.status_code == 200
    assert "Please enter the correct username and password for a staff account." in response.content.decode()
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_the_admin_shows_staff_every_office(acme, globex_channel):
    staff = User.objects.create_superuser("root", password="root-password")
    client = as_user(staff)
    assert client.get("/admin/").status_code == 200
    assert b"Acme launch plan" in client.get("/admin/office/document/").content


# Through the coworkers' tools: documents and memory stay in their office ------------------------------------------


@pytest.fixture
def globex_tools(charlie, globex_channel):
    """What a Globex coworker's tools run with: Charlie's office, channel, session and task."""
    task = Task.objects.get(session__channel=globex_channel)
    return ToolContext(
        office_id=globex_channel.office_id, channel_id=globex_channel.pk, session_id=task.session_id,
        task_id=task.pk, turn=task.turn, coworker="gina",
    )


@pytest.mark.django_db
def test_a_coworker_of_another_office_cannot_read_list_or_overwrite_a_document(acme, globex_tools):
    before = snapshot()
    theirs = run_tool(globex_tools, "read_document", {"title": "Acme launch plan"})
    nothing = run_tool(globex_tools, "read_document", {"title": "Zzz missing plan"})
    listed = run_tool(globex_tools, "list_documents", {"query": "launch"})

    assert theirs.is_error and nothing.is_error
    assert theirs.content.replace("Acme launch plan", "X") == nothing.content.replace("Zzz missing plan", "X")
    assert "May 4" not in theirs.content + listed.content
    assert listed.content == "No documents match “launch”. Call list_documents without a query to see them all."
    assert snapshot() == before

    # Writing the same title makes Globex a document of its own; Acme's is untouched.
    run_tool(globex_tools, "write_document", {"title": "Acme launch plan", "content": "Globex text"})
    acme_document = Document.objects.get(pk=acme["document"].pk)
    assert acme_document.versions.get().content == "May 4"
    assert Document.objects.filter(title="Acme launch plan").count() == 2


@pytest.mark.django_db
def test_a_coworker_of_another_office_cannot_forget_or_see_a_memory_item(acme, globex_tools):
    forgot = run_tool(globex_tools, "forget", {"text": "Acme's trial is 14 days."})
    remembered = run_tool(globex_tools, "remember", {"text": "Acme's trial is 14 days.", "kind": "company"})

    assert forgot.content == "Nothing in memory matches “Acme's trial is 14 days.” closely enough, so nothing was forgotten. Memory holds nothing like it."
    assert remembered.content.startswith("Remembered as item"), "a new item of Globex's, not Acme's known one"
    item = MemoryItem.objects.get(pk=acme["item"].pk)
    assert item.active and item.text == "Acme's trial is 14 days."
    assert MemoryEvent.objects.filter(item=item).count() == 0


@pytest.mark.django_db
def test_every_page_says_which_scripts_may_run_and_that_no_other_site_may_frame_it(bob):
    for url in ("/accounts/login/", "/o/acme/"):
        policy = as_user(bob).get(url).headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
