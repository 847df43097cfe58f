"""New meeting and New project: the forms, what they create, their errors, and the 404 outsiders get;
a meeting's notes linked both ways with its follow-ups, and its decisions on the memory page."""

import re
import types

import pytest
from django.core.cache import cache
from django.urls import reverse

from coworkers.models import Coworker
from coworkers.providers.offline import OfflineResponder
from coworkers.providers.scripted import Reply, ScriptedProvider
from office.models import Channel
from sessions import pipeline, posting, services
from sessions.models import MemoryItem, Message, Session, Task

NOTES = """## Decisions
- (task 1, Mina) We decided to launch on May 4 because the beta is stable.
## Commitments and next steps
- (task 1, Theo) I'll fix the invite link on mobile by Friday.
- (task 1) Someone books the launch party venue.
"""


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()  # the per-person counters live in the cache, which outlives a test
    yield
    cache.clear()


@pytest.fixture
def ada(other_office) -> Coworker:
    return Coworker.objects.create(office=other_office, name="Ada", slug="ada", role="Analyst")


def meeting_form(*coworkers, **fields) -> dict:
    return {"title": "Launch sync", "agenda": "Pick the launch date.", "rounds": "1", "coworkers": [c.pk for c in coworkers]} | fields


def test_the_sidebar_offers_a_new_meeting_and_a_new_project(client, alice, mina, main_channel):
    client.force_login(alice)

    page = client.get(reverse("office", args=["acme"])).content.decode()

    assert f'href="{reverse("new_meeting", args=["acme"])}"' in page and ">New meeting</a>" in page
    assert f'href="{reverse("new_project", args=["acme"])}"' in page and ">New project</a>" in page
    assert "<h2>Meetings</h2>" in page and "<h2>Projects</h2>" in page


def test_the_meeting_form_lists_the_offices_coworkers(client, bob, mina, theo, ada):
    client.force_login(bob)

    page = client.get(reverse("new_meeting", args=["acme"])).content.decode()

    assert "Mina · Marketing lead" in page and "Theo · Engineer" in page
    assert "Ada" not in page, "another office's coworker"


def test_a_meeting_starts_in_its_own_channel_listed_under_meetings(client, alice, mina, theo, no_background):
    client.force_login(alice)

    response = client.post(reverse("new_meeting", args=["acme"]), meeting_form(mina, theo, rounds="2"))

    channel = Channel.objects.get(kind=Channel.Kind.MEETING)
    assert response.status_code == 302 and response["Location"] == reverse("channel", args=[channel.pk])
    assert channel.name == "Launch sync" and channel.agenda == "Pick the launch date."
    assert set(channel.members.values_list("slug", flat=True)) == {"mina", "theo"}
    task = Task.objects.get(session__channel=channel)
    assert task.responders == ["mina", "theo", "mina", "theo"], "each speaks in turn, once a round"
    assert task.pk in no_background, "the meeting is queued to run"
    page = client.get(response["Location"]).content.decode()
    assert "Pick the launch date." in page and "With Mina, Theo" in page
    sidebar = page.split("<h2>Meetings</h2>")[1].split("</ul>")[0]
    assert "Launch sync" in sidebar


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"coworkers": "one"}, "coworkers", "Pick at least two coworkers"),
        ({"agenda": "   "}, "agenda", "Write an agenda"),
        ({"agenda": "\u200b\u200d"}, "agenda", "A meeting needs an agenda"),
        ({"agenda": "x" * 4_001}, "agenda", "Keep the agenda under 4,000 characters (it is 4001)"),
        ({"title": ""}, "title", "Give the meeting a title"),
        ({"rounds": "9"}, "rounds", "Choose from 1 to 3 rounds"),
        ({"coworkers": "other office"}, "coworkers", "Pick coworkers of this office"),
    ],
)
def test_a_meeting_form_with_a_mistake_says_what_to_fix_and_starts_nothing(client, alice, mina, theo, ada, fields, field, message, no_background):
    people = {"one": [mina], "other office": [mina, ada]}.get(fields.pop("coworkers", None), [mina, theo])
    client.force_login(alice)

    response = client.post(reverse("new_meeting", args=["acme"]), meeting_form(*people, **fields))

    assert response.status_code == 400
    page = response.content.decode()
    error = re.search(rf'<p class="error field-error" role="alert" id="id_{field}-error">([^<]*)</p>', page)
    assert error and message in error.group(1).replace("&#x27;", "'")
    assert not Channel.objects.filter(kind=Channel.Kind.MEETING).exists() and not Task.objects.exists()


def test_a_meeting_can_have_at_most_six_coworkers(client, alice, office, no_background):
    team = [Coworker.objects.create(office=office, name=f"C{i}", slug=f"c{i}", role="Helper") for i in range(7)]
    client.force_login(alice)

    response = client.post(reverse("new_meeting", args=["acme"]), meeting_form(*team))

    assert response.status_code == 400 and "at most 6 coworkers" in response.content.decode()


def test_a_person_opening_channels_in_a_burst_is_told_to_wait(client, alice, mina, theo, no_background, monkeypatch):
    # The limiter's minute is a fixed window: a burst that straddles two would pass.
    from office import ratelimit

    monkeypatch.setattr(ratelimit, "time", types.SimpleNamespace(time=lambda: 60 * 16_000 + 20.0))
    client.force_login(alice)
    for _ in range(5):
        assert client.post(reverse("new_meeting", args=["acme"]), meeting_form(mina, theo)).status_code == 302

    response = client.post(reverse("new_meeting", args=["acme"]), meeting_form(mina, theo))

    assert response.status_code == 400 and "Try again in" in response.content.decode()
    assert Channel.objects.filter(kind=Channel.Kind.MEETING).count() == 5


def test_a_project_channel_has_its_name_topic_and_coworkers(client, bob, mina, theo):
    client.force_login(bob)

    response = client.post(
        reverse("new_project", args=["acme"]), {"name": "Spring launch", "topic": "Ship v2 by May", "coworkers": [theo.pk]}
    )

    channel = Channel.objects.get(kind=Channel.Kind.PROJECT)
    assert response["Location"] == reverse("channel", args=[channel.pk])
    assert (channel.name, channel.topic, list(channel.members.all())) == ("Spring launch", "Ship v2 by May", [theo])
    page = client.get(response["Location"]).content.decode()
    assert "Ship v2 by May" in page and "With Theo" in page
    assert "Spring launch" in page.split("<h2>Projects</h2>")[1].split("</ul>")[0]


def test_a_project_name_keeps_at_most_a_few_stacked_accents_as_messages_do(client, bob, theo):
    client.force_login(bob)

    client.post(reverse("new_project", args=["acme"]), {"name": "Z" + "\u0301" * 99, "topic": "x\u0300" * 3, "coworkers": [theo.pk]})

    channel = Channel.objects.get(kind=Channel.Kind.PROJECT)
    assert channel.name == "Z" + "\u0301" * 4, "a flood of them drew over every member's sidebar"


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"name": " "}, "name", "A project needs a name"),
        ({"name": "\u202e\u200b"}, "name", "A project needs a name"),  # a direction mark and a zero-width space
        ({"coworkers": []}, "coworkers", "Pick at least one coworker"),
        ({"name": "spring LAUNCH"}, "name", "already has a project called “spring LAUNCH”"),
        ({"topic": "x" * 301}, "topic", "Keep the topic under 300 characters"),
    ],
)
def test_a_project_form_with_a_mistake_says_what_to_fix(client, alice, office, mina, fields, field, message):
    Channel.objects.create(office=office, kind=Channel.Kind.PROJECT, name="Spring launch")
    client.force_login(alice)

    response = client.post(reverse("new_project", args=["acme"]), {"name": "Website", "coworkers": [mina.pk]} | fields)

    assert response.status_code == 400
    error = re.search(rf'id="id_{field}-error">([^<]*)</p>', response.content.decode())
    assert error and message in error.group(1)
    assert Channel.objects.filter(kind=Channel.Kind.PROJECT).count() == 1


def test_a_message_in_a_new_project_gets_a_reply_from_one_of_its_coworkers(client, alice, mina, theo, frames, no_background):
    client.force_login(alice)
    client.post(reverse("new_project", args=["acme"]), {"name": "Infra", "topic": "", "coworkers": [theo.pk]})
    channel = Channel.objects.get(kind=Channel.Kind.PROJECT)

    task = posting.post_instruction(channel=channel, text="What should we do about the slow deploys?", provider=OfflineResponder())
    done = pipeline.run_task(task.pk, provider=OfflineResponder())

    assert done.status == Task.Status.DONE
    reply = services.task_messages(done.session, turn=1).get(role=Message.Role.ASSISTANT)
    assert reply.coworker == "theo", "only the project's coworkers answer there"


def test_outsiders_get_404_for_the_forms_and_create_nothing(client, charlie, mina, theo, no_background):
    client.force_login(charlie)

    for name in ("new_meeting", "new_project"):
        assert client.get(reverse(name, args=["acme"])).status_code == 404
    assert client.post(reverse("new_meeting", args=["acme"]), meeting_form(mina, theo)).status_code == 404
    assert client.post(reverse("new_project", args=["acme"]), {"name": "X", "coworkers": [mina.pk]}).status_code == 404
    assert not Channel.objects.filter(kind__in=["meeting", "project"]).exists()


def test_signed_out_visitors_are_sent_to_sign_in(client, office):
    response = client.get(reverse("new_meeting", args=["acme"]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# A meeting's end: notes, decisions in memory, follow-ups linked both ways --------------------------


@pytest.fixture
def finished_meeting(client, alice, mina, theo, frames, no_background):
    """A meeting run to its notes with a scripted model: Mina and Theo speak, then the notes."""
    from sessions import meetings

    provider = ScriptedProvider([Reply("Let's launch on May 4."), Reply("Agreed; I'll fix the invite link."), Reply(NOTES)])
    channel, task = meetings.start_meeting(
        office=mina.office, title="Launch sync", agenda="Pick the launch date.", participants=[mina, theo], rounds=1, provider=provider
    )
    pipeline.run_task(task.pk, provider=provider)
    client.force_login(alice)
    return channel, Task.objects.get(pk=task.pk)


def test_the_notes_show_in_the_meeting_with_links_to_memory_and_the_follow_up(client, finished_meeting, frames):
    channel, task = finished_meeting
    follow_up = Task.objects.get(handed_off_from=task)

    page = client.get(reverse("channel", args=[channel.pk])).content.decode()

    notes = re.search(r'<aside class="msg notice notes".*?</aside>', page, re.S).group(0)
    assert "<h2>Decisions</h2>" in notes and "launch on May 4" in notes
    item = MemoryItem.objects.get(text__contains="May 4")
    assert f'href="{reverse("memory", args=["acme"])}#item-{item.pk}"' in notes
    assert f'href="{reverse("open_task", args=[follow_up.pk])}"' in notes and "<strong>Theo</strong>" in notes
    assert "nobody in the meeting owns this yet" in notes, "a follow-up without an owner stays in the notes"
    live = [f for f in frames if f["type"] == "message" and f["message"]["role"] == "notice"]
    assert live and live[-1]["message"]["content"].startswith("Meeting notes"), "the notes reach the open page live"
    ended = re.search(r'<p class="muted meeting-ended" id="meeting-ended"[^>]*>', page).group(0)
    assert " hidden" not in ended, "the page says it is over"


def test_a_follow_up_opens_in_its_owners_1_1_and_links_back_to_the_meeting(client, finished_meeting, theo):
    channel, task = finished_meeting
    follow_up = Task.objects.get(handed_off_from=task)
    direct = Channel.objects.get(kind=Channel.Kind.DIRECT, coworker=theo)
    assert follow_up.session.channel == direct and follow_up.coworker == "theo"

    opened = client.get(reverse("open_task", args=[follow_up.pk]))

    assert opened["Location"] == reverse("channel", args=[direct.pk]) + f"#turn-{follow_up.turn}"
    page = client.get(reverse("channel", args=[direct.pk])).content.decode()
    assert "Follow-up from the meeting “Launch sync”: I'll fix the invite link on mobile by Friday." in page
    assert f'From the meeting <a href="{reverse("channel", args=[channel.pk])}">Launch sync</a>' in page
    assert '<span class="who">Meeting follow-up</span>' in page, "not labelled as typed by the person"
    assert 'me-avatar" aria-hidden="true">↪</div>' in page, "nor an initial that reads like a coworker's (M for Mina)"


def test_a_follow_up_link_still_opens_it_after_a_new_conversation(client, finished_meeting, theo):
    _, task = finished_meeting
    follow_up = Task.objects.get(handed_off_from=task)
    services.start_session(channel=follow_up.session.channel)

    opened = client.get(reverse("open_task", args=[follow_up.pk]))

    assert opened["Location"] == reverse("past_session", args=[follow_up.session.channel_id, follow_up.session_id]) + f"#turn-{follow_up.turn}"
    assert Session.objects.get(pk=follow_up.session_id).status == Session.Status.ENDED


def test_the_memory_page_shows_the_decision_from_the_meeting(client, finished_meeting):
    channel, _ = finished_meeting

    page = client.get(reverse("memory", args=["acme"])).content.decode()

    item = MemoryItem.objects.get(text__contains="May 4")
    assert item.kind == "decision" and item.source_task.session.channel == channel
    entry = re.search(rf'<li class="memory-item[^"]*" id="item-{item.pk}">.*?</li>', page, re.S).group(0)
    assert "launch on May 4" in entry and "Decision" in entry
    assert f'<a href="{reverse("channel", args=[channel.pk])}#turn-1">from the meeting “Launch sync”, task 1</a>' in entry


def test_an_outsider_cannot_open_a_task_link(client, finished_meeting, charlie):
    _, task = finished_meeting
    client.force_login(charlie)
    assert client.get(reverse("open_task", args=[task.pk])).status_code == 404
    assert client.get(reverse("open_task", args=[987654])).status_code == 404


def test_a_persons_markdown_is_shown_rendered_like_a_coworkers(client, alice, direct_channel, no_background):
    posting.post_instruction(channel=direct_channel, text="Check this:\n\n```python\ndef price(n):\n    return n * 12\n```")
    client.force_login(alice)
    page = client.get(reverse("channel", args=[direct_channel.pk])).content.decode()
    instruction = page[page.index('data-role="user"') :]
    instruction = instruction[: instruction.index("</article>")]
    shown = instruction[instruction.index('<div class="text md">') :]
    assert "<pre>" in shown and "```" not in shown
    assert 'data-content="Check this:' in instruction, "the words as typed stay on it, for Retry"


def test_a_project_s_name_topic_and_coworkers_can_be_changed_after_it_began(client, bob, charlie, mina, theo):
    client.force_login(bob)
    client.post(reverse("new_project", args=["acme"]), {"name": "Website", "topic": "Redesign", "coworkers": [theo.pk]})
    channel = Channel.objects.get(kind=Channel.Kind.PROJECT)
    page = client.get(reverse("channel", args=[channel.pk])).content.decode()
    assert f'href="{reverse("edit_project", args=[channel.pk])}">Edit</a>' in page
    form = client.get(reverse("edit_project", args=[channel.pk])).content.decode()
    assert 'value="Website"' in form and "Save</button>" in form

    response = client.post(
        reverse("edit_project", args=[channel.pk]), {"name": "Website v2", "topic": "Redesign and copy", "coworkers": [theo.pk, mina.pk]}
    )

    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.topic) == ("Website v2", "Redesign and copy")
    assert set(channel.members.values_list("slug", flat=True)) == {"theo", "mina"}
    assert client.post(reverse("edit_project", args=[channel.pk]), {"name": "Website v2", "coworkers": []}).status_code == 400
    client.force_login(charlie)
    assert client.get(reverse("edit_project", args=[channel.pk])).status_code == 404, "an outsider cannot tell it exists"
