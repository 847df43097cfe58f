"""Django admin: every model has working pages, history is read only and shown in chain order,
and context policy budgets edited from the list are validated before they are saved."""

from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from sessions import admin as sessions_admin
from sessions.models import ContextPolicy, ExchangeVector, MemoryItem, Message, ModelCall, Session, Task
from sessions.policy import BUDGET_FIELDS

pytestmark = pytest.mark.django_db

OUR_APPS = ("office", "coworkers", "work_sessions")


@pytest.fixture
def session(direct_channel) -> Session:
    return Session.objects.create(channel=direct_channel)


def append(session: Session, previous: Message | None, **fields) -> Message:
    """A message at the end of the chain; created_at runs backwards so only the chain gives the order."""
    position = previous.position + 1 if previous else 1
    fields.setdefault("turn", 1)
    fields.setdefault("created_at", timezone.now() - timedelta(minutes=position))
    return Message.objects.create(session=session, previous=previous, position=position, **fields)


@pytest.fixture
def chain(session) -> list[Message]:
    Task.objects.create(session=session, turn=1, status=Task.Status.DONE, prompt_report={"total_chars": 1234})
    Task.objects.create(session=session, turn=2, status=Task.Status.RUNNING)
    m1 = append(session, None, role="user", content="Which category has the most views?")
    m2 = append(
        session,
        m1,
        role="assistant",
        coworker="mina",
        tool_calls=[{"id": "toolu_1", "name": "read_document", "args": {"title": "Q3 views"}}],
    )
    m3 = append(session, m2, role="tool", coworker="mina", content="music 812, news 640", tool_call_id="toolu_1")
    m4 = append(session, m3, role="assistant", coworker="mina", content="Music has the most views.")
    m5 = append(session, m4, role="user", turn=2, content="Draft a post about it <script>alert(1)</script>")
    return [m1, m2, m3, m4, m5]


@pytest.fixture
def one_of_everything(office, alice, mina, direct_channel, session, chain) -> dict[type, object]:
    memory = MemoryItem.objects.create(office=office, text="Acme Planner launches in April.", kind="project")
    return {
        **{type(row): row for row in (office, mina, direct_channel, session, chain[0], memory)},
        alice.memberships.model: alice.memberships.get(),
        Task: session.tasks.first(),
        ContextPolicy: ContextPolicy.objects.get(channel_kind="direct"),
        ModelCall: ModelCall.objects.create(office=office, coworker=mina, coworker_slug="mina", provider="claude", cost_usd=1),
        ExchangeVector: ExchangeVector.objects.create(channel=direct_channel, session=session, turn=1, vector=b"\0" * 768),
    }


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_it_registers_every_model_of_the_office():
    missing = [
        model._meta.label
        for app in OUR_APPS
        for model in apps.get_app_config(app).get_models()
        if not admin.site.is_registered(model)
    ]
    assert missing == []


def test_it_renders_every_changelist_and_change_page(admin_client, one_of_everything):
    for model, row in one_of_everything.items():
        changelist = admin_client.get(admin_url(model, "changelist"))
        assert changelist.status_code == 200, model
        change = admin_client.get(admin_url(model, "change", row.pk))
        assert change.status_code == 200, model


def test_it_searches_coworkers_by_skill_and_messages_by_session(admin_client, mina, theo, session, chain):
    response = admin_client.get(admin_url(type(mina), "changelist"), {"q": "campaigns"})
    assert list(response.context["cl"].result_list) == [mina]

    response = admin_client.get(admin_url(Message, "changelist"), {"q": str(session.pk)})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == chain


def test_it_shows_the_session_in_chain_order(admin_client, session, chain):
    response = admin_client.get(admin_url(Session, "change", session.pk))

    page = response.content.decode()
    places = [page.index(text) for text in ("the most views?", "read_document", "toolu_1", "music 812", "Music has")]
    assert places == sorted(places)
    assert page.index("Music has") < page.index("Draft a post")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)</script>" not in page
    assert "chain break" not in page
    assert "2 tasks" in page


def test_it_caps_a_long_session_and_links_to_the_rest(admin_client, session, chain, monkeypatch):
    monkeypatch.setattr(sessions_admin, "CHAIN_LIMIT", 3)

    page = admin_client.get(admin_url(Session, "change", session.pk)).content.decode()

    assert "Showing the first 3 of 5 messages" in page
    assert "music 812" in page
    assert "Music has the most views." not in page
    assert f"session__id__exact={session.pk}" in page


def test_it_keeps_messages_read_only(admin_client, chain):
    head = chain[0]

    assert admin_client.get(admin_url(Message, "add")).status_code == 403
    response = admin_client.post(
        admin_url(Message, "change", head.pk),
        {"session": head.session_id, "position": 1, "turn": 1, "role": "user", "content": "rewritten"},
    )
    assert response.status_code == 403
    assert admin_client.post(admin_url(Message, "delete", head.pk), {"post": "yes"}).status_code == 403

    head.refresh_from_db()
    assert head.content == "Which category has the most views?"
    assert Message.objects.count() == 5


def test_it_deletes_a_session_with_its_whole_history(admin_client, session, chain):
    confirm = admin_client.get(admin_url(Session, "delete", session.pk))
    assert confirm.status_code == 200
    assert "5 messages" in confirm.content.decode()
    assert "permission to delete" not in confirm.content.decode()

    admin_client.post(admin_url(Session, "delete", session.pk), {"post": "yes"})

    assert not Session.objects.filter(pk=session.pk).exists()
    assert Message.objects.count() == 0


def edit_policy_from_list(client, policy: ContextPolicy, **changes):
    """POST the context policy changelist's list_editable form for one row, as the Save button does."""
    data = {
        "form-TOTAL_FORMS": "1",
        "form-INITIAL_FORMS": "1",
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "form-0-id": str(policy.pk),
        "_save": "Save",
    }
    for name in sessions_admin.LIST_BUDGETS:
        data[f"form-0-{name}"] = str(changes.get(name, getattr(policy, name)))
    return client.post(admin_url(ContextPolicy, "changelist"), data)


def edit_policy_page(client, policy: ContextPolicy, **changes):
    """POST one context policy's change page, every field as the form shows it, with `changes`."""
    data = {"channel_kind": policy.channel_kind, "coworker": "", "channel": "", "_save": "Save"}
    for name in (*BUDGET_FIELDS, "reply_model", "summary_model", "cache_lifetime"):
        value = changes.get(name, getattr(policy, name))
        data[name] = "" if value is None else str(value)
    return client.post(admin_url(ContextPolicy, "change", policy.pk), data)


def test_it_refuses_a_zero_budget_from_the_list(admin_client):
    policy = ContextPolicy.objects.get(channel_kind="direct")

    response = edit_policy_from_list(admin_client, policy, detailed_chars=0)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Must be between 1,000 and 1,000,000; got 0." in page
    policy.refresh_from_db()
    assert policy.detailed_chars == 20_000


def test_it_refuses_a_detailed_budget_smaller_than_the_tool_digest(admin_client):
    policy = ContextPolicy.objects.get(channel_kind="main")

    response = edit_policy_page(admin_client, policy, detailed_chars=1_000, tool_digest_chars=2_000)

    assert response.status_code == 200
    assert "cannot be smaller than the tool digest" in response.content.decode()
    policy.refresh_from_db()
    assert (policy.detailed_chars, policy.tool_digest_chars) == (16_000, 300)


def test_it_saves_a_valid_budget_from_the_list(admin_client):
    policy = ContextPolicy.objects.get(channel_kind="main")

    response = edit_policy_from_list(admin_client, policy, detailed_chars=24_000, nudge_after_tasks=30)

    assert response.status_code == 302
    policy.refresh_from_db()
    assert (policy.detailed_chars, policy.nudge_after_tasks) == (24_000, 30)


def test_it_names_a_budget_the_list_does_not_show_when_a_list_edit_breaks_it(admin_client):
    """Fewer recent tasks than are summarized at once: the problem is the fold batch's, not on the list."""
    policy = ContextPolicy.objects.get(channel_kind="main")

    response = edit_policy_from_list(admin_client, policy, detailed_tasks=2)

    assert response.status_code == 200
    assert "Tasks summarized at once: The fold batch (4) cannot be larger than the detailed tasks (2)." in response.content.decode()
    policy.refresh_from_db()
    assert policy.detailed_tasks == 8


def test_it_lists_policies_in_plain_words_with_the_office_default_model(admin_client, settings):
    page = admin_client.get(admin_url(ContextPolicy, "changelist")).content.decode()

    for header in ("Recent tasks in full", "Room for recent tasks", "Room for the summary", "Room for memory"):
        assert header in page
    assert f"default ({settings.REPLY_MODEL})" in page
    change = admin_client.get(admin_url(ContextPolicy, "change", ContextPolicy.objects.get(channel_kind="direct").pk))
    assert "How many of the latest tasks the coworker reads word for word" in change.content.decode()


def test_the_demo_admin_tunes_a_budget_and_the_next_prompt_uses_it(client, settings, frames, no_background):
    """What a newcomer does after `make run`: sign in as demo, open the policy in admin, lower a budget."""
    from django.core.management import call_command

    from coworkers.providers.offline import OfflineResponder
    from office.models import Channel
    from sessions import pipeline, posting

    settings.DEBUG = True
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    assert client.login(username="demo", password="demo")
    policy = ContextPolicy.objects.get(channel_kind="direct")
    assert client.get(admin_url(ContextPolicy, "changelist")).status_code == 200

    response = edit_policy_page(client, policy, memory_chars=2_500, detailed_chars=12_000)

    assert response.status_code == 302
    mina = Channel.objects.get(kind=Channel.Kind.DIRECT, coworker__slug="mina")
    task = posting.post_instruction(channel=mina, text="What do we know about the launch?", provider=OfflineResponder())
    done = pipeline.run_task(task.pk, provider=OfflineResponder())
    assert done.prompt_report["layers"]["memory"]["budget"] == 2_500
    assert done.prompt_report["layers"]["recent"]["budget"] == 12_000


def test_an_admin_chooses_how_long_prompts_stay_cached(admin_client):
    policy = ContextPolicy.objects.get(channel_kind="direct")
    change = admin_client.get(admin_url(ContextPolicy, "change", policy.pk)).content.decode()
    assert "Keep the prompt cached" in change
    assert "the 1-hour cache costs 2× the input price to write instead of 1.25×" in change
    assert "As the kind says (auto for a kind)" in change and "Auto, from how long people pause" in change

    response = edit_policy_page(admin_client, policy, cache_lifetime="1h")
    assert response.status_code == 302
    policy.refresh_from_db()
    assert policy.cache_lifetime == "1h"

    response = edit_policy_page(admin_client, policy, cache_lifetime="2h")
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    policy.refresh_from_db()
    assert policy.cache_lifetime == "1h"
