"""Unread counts in the sidebar: coworkers' replies a person has not been shown yet."""

from office import events, reading
from office.models import ChannelRead
from sessions import posting, services


def say(channel, role: str, content: str) -> None:
    session = services.get_active_session(channel=channel)
    if role == "user":
        _, message = services.start_task(session=session, instruction=content)
    else:
        turn = session.tasks.order_by("-turn").values_list("turn", flat=True).first()
        message = services.append_message(session=session, turn=turn, role=role, content=content, coworker="mina")
    events.send_event(channel.pk, "message", message=posting.message_json(message))


def test_a_coworkers_reply_is_unread_until_the_channel_is_opened(client, bob, direct_channel, main_channel):
    client.force_login(bob)
    say(direct_channel, "user", "Draft the launch email")
    say(direct_channel, "assistant", "Here is a draft.")
    say(direct_channel, "assistant", "And a shorter one.")

    office = client.get("/o/acme/")
    assert b'aria-label="2 unread"' in office.content, "two replies; my own message is not unread"

    client.get(f"/c/{direct_channel.pk}/")
    assert b"unread" not in client.get("/o/acme/").content.split(b"</nav>")[0]


def test_read_marks_are_per_person_and_only_move_forward(bob, alice, direct_channel):
    say(direct_channel, "user", "Hi")
    say(direct_channel, "assistant", "Hello!")

    reading.mark_read(user=bob, channel_id=direct_channel.pk, seq=2)
    reading.mark_read(user=bob, channel_id=direct_channel.pk, seq=1)

    assert ChannelRead.objects.get(user=bob).last_seen_seq == 2
    assert reading.unread_counts(user=bob, office=direct_channel.office) == {}
    assert reading.unread_counts(user=alice, office=direct_channel.office) == {direct_channel.pk: 1}
