"""Persisted channel events: a gap-free, increasing seq per channel (also with writers on real threads),
sent only after commit, with sanitized html on message events, and replayed by events_after."""

import threading

import pytest
from django.db import connections, transaction

from office import consumers, events
from office.models import Channel, ChannelEvent
from sessions import posting, services
from sessions.models import Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, dict]]:
    """What reached the channel layer, in order (send_event's own bookkeeping stays real)."""
    out: list[tuple[int, dict]] = []
    monkeypatch.setattr(events, "send_now", lambda channel_id, frame: out.append((channel_id, frame)))
    return out


def test_it_numbers_each_channels_events_from_one(main_channel, direct_channel, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        seqs = [events.send_event(main_channel.pk, "task", id=n, status="queued") for n in range(3)]
        other = events.send_event(direct_channel.pk, "task", id=9, status="queued")

    assert seqs == [1, 2, 3] and other == 1
    assert [frame["seq"] for channel_id, frame in sent if channel_id == main_channel.pk] == [1, 2, 3]
    main_channel.refresh_from_db()
    assert main_channel.last_event_seq == 3
    assert list(ChannelEvent.objects.filter(channel=main_channel).values_list("seq", "type")) == [
        (1, "task"), (2, "task"), (3, "task")
    ]


def test_it_sends_only_after_commit_and_nothing_for_a_rollback(main_channel, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            events.send_event(main_channel.pk, "task", id=1, status="queued")
            assert sent == [], "not before the transaction commits"
    assert [frame["seq"] for _, frame in sent] == [1]

    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                events.send_event(main_channel.pk, "task", id=2, status="queued")
                raise RuntimeError("the work failed")

    assert len(sent) == 1
    assert ChannelEvent.objects.filter(channel=main_channel).count() == 1
    main_channel.refresh_from_db()
    assert main_channel.last_event_seq == 1, "a rolled-back event leaves no gap"


def test_the_frame_sent_is_the_frame_stored(main_channel, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        events.send_event(main_channel.pk, "task", id=1, turn=1, status="queued", error="", coworker="mina")

    assert sent[0][1] == {"type": "task", "id": 1, "turn": 1, "status": "queued", "error": "", "coworker": "mina", "seq": 1}
    assert events.events_after(main_channel.pk, 0) == [sent[0][1]]


def test_a_message_event_carries_sanitized_html(direct_channel, sent, django_capture_on_commit_callbacks):
    session = services.get_active_session(channel=direct_channel)
    _, message = services.start_task(session=session, instruction="**Bold** <script>alert(1)</script>")

    with django_capture_on_commit_callbacks(execute=True):
        events.send_event(direct_channel.pk, "message", message=posting.message_json(message))

    frame = sent[0][1]
    assert list(frame) == ["type", "message", "html", "seq"]
    assert "<strong>Bold</strong>" in frame["html"]
    assert "<script" not in frame["html"] and "&lt;script&gt;" in frame["html"]
    assert events.events_after(direct_channel.pk, 0)[0]["html"] == frame["html"]


def test_deltas_are_not_stored(main_channel, sent):
    events.send_now(main_channel.pk, {"type": "delta", "task": 1, "coworker": "mina", "text": "Hel"})

    assert ChannelEvent.objects.count() == 0
    assert "seq" not in sent[0][1]


def test_events_after_replays_in_order_from_a_seq(main_channel, direct_channel, sent):
    for n in range(1, 8):
        events.send_event(main_channel.pk, "task", id=n, status="queued")
    events.send_event(direct_channel.pk, "task", id=99, status="queued")

    assert [e["seq"] for e in events.events_after(main_channel.pk, 0)] == [1, 2, 3, 4, 5, 6, 7]
    assert [e["id"] for e in events.events_after(main_channel.pk, 4)] == [5, 6, 7]
    assert [e["seq"] for e in events.events_after(main_channel.pk, 2, limit=3)] == [3, 4, 5]
    assert events.events_after(main_channel.pk, 7) == []
    assert [e["id"] for e in events.events_after(direct_channel.pk, 0)] == [99]


def test_the_session_frame_shows_the_newest_fifty_messages_with_their_seqs(direct_channel, sent):
    session = services.get_active_session(channel=direct_channel)
    for turn in range(1, 31):
        task, message = services.start_task(session=session, instruction=f"Instruction {turn}")
        events.send_event(direct_channel.pk, "message", message=posting.message_json(message))
        reply = services.append_message(session=session, turn=turn, role=Message.Role.ASSISTANT, content=f"Reply {turn}", coworker="mina")
        events.send_event(direct_channel.pk, "message", message=posting.message_json(reply))

    frame = events.session_frame(direct_channel.pk)

    assert set(frame) == {"type", "session", "messages", "seq"}
    assert frame["session"] == {
        "id": session.pk, "tasks": 30, "started_at": session.started_at.isoformat(), "nudged": False, "carried_note_html": ""
    }
    assert frame["seq"] == 60
    shown = frame["messages"]
    assert len(shown) == 50
    assert [m["message"]["content"] for m in shown[:2]] == ["Instruction 6", "Reply 6"]
    assert shown[-1]["message"]["content"] == "Reply 30"
    assert [m["seq"] for m in shown] == list(range(11, 61))
    assert shown[-1]["html"] == "<p>Reply 30</p>"
    assert set(shown[0]["message"]) == {"id", "previous", "turn", "role", "content", "coworker", "created_at"}


def test_the_session_frame_leaves_out_a_message_whose_event_is_newer_than_its_seq(direct_channel, sent, monkeypatch):
    session = services.get_active_session(channel=direct_channel)
    _, first = services.start_task(session=session, instruction="First")
    events.send_event(direct_channel.pk, "message", message=posting.message_json(first))
    _, second = services.start_task(session=session, instruction="Second")
    events.send_event(direct_channel.pk, "message", message=posting.message_json(second))
    # The seq is read before the messages: here, before the second message's event existed.
    monkeypatch.setattr(events, "last_seq", lambda channel_id: 1)

    frame = events.session_frame(direct_channel.pk)

    assert [m["message"]["content"] for m in frame["messages"]] == ["First"]
    assert frame["seq"] == 1


def test_an_imported_message_has_no_seq(direct_channel, sent):
    session = services.get_active_session(channel=direct_channel)
    services.start_task(session=session, instruction="Imported, never sent as an event")

    (shown,) = events.session_frame(direct_channel.pk)["messages"]

    assert shown["seq"] is None and shown["html"] == "<p>Imported, never sent as an event</p>"


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_on_threads_get_strictly_increasing_gap_free_seqs(main_channel, sent):
    writers, each = 6, 15
    start = threading.Barrier(writers)
    got: dict[int, list[int]] = {}
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            start.wait()
            got[writer] = [events.send_event(main_channel.pk, "task", id=writer, n=n) for n in range(each)]
        except BaseException as error:  # reported below, not lost in the thread
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    for seqs in got.values():
        assert seqs == sorted(seqs) and len(set(seqs)) == each, "each writer's events in the order it sent them"
    every = sorted(seq for seqs in got.values() for seq in seqs)
    assert every == list(range(1, writers * each + 1)), "no gaps, no duplicates"
    assert Channel.objects.get(pk=main_channel.pk).last_event_seq == writers * each
    stored = list(ChannelEvent.objects.filter(channel=main_channel).order_by("seq").values_list("seq", "payload"))
    assert [seq for seq, _ in stored] == every
    # The order of the stored events is each writer's own order.
    for writer in range(writers):
        assert [payload["n"] for _, payload in stored if payload["id"] == writer] == list(range(each))


def test_events_are_read_only_in_admin_and_go_with_their_channel(admin_client, main_channel, sent):
    from django.urls import reverse

    for n in range(3):
        events.send_event(main_channel.pk, "task", id=n, status="queued")
    event = ChannelEvent.objects.get(seq=1)

    assert admin_client.get(reverse("admin:office_channelevent_changelist")).status_code == 200
    page = admin_client.get(reverse("admin:office_channelevent_change", args=[event.pk]))
    assert page.status_code == 200 and b"queued" in page.content
    assert admin_client.get(reverse("admin:office_channelevent_add")).status_code == 403
    assert admin_client.post(reverse("admin:office_channelevent_delete", args=[event.pk]), {"post": "yes"}).status_code == 403

    confirm = admin_client.get(reverse("admin:office_channel_delete", args=[main_channel.pk]))
    assert "3 channel events" in confirm.content.decode()
    assert "permission to delete" not in confirm.content.decode()
    admin_client.post(reverse("admin:office_channel_delete", args=[main_channel.pk]), {"post": "yes"})
    assert ChannelEvent.objects.count() == 0


def test_a_session_of_long_chinese_replies_still_fits_one_frame_with_its_newest_message(direct_channel, sent):
    """The server sends no frame over 1 MiB: a snapshot of fifty long Chinese messages was more,
    and every connect to the channel failed, for everyone in it."""
    import json

    session = services.get_active_session(channel=direct_channel)
    for turn in range(1, 26):
        task, message = services.start_task(session=session, instruction="預算" * 9_000 + str(turn))
        events.send_event(direct_channel.pk, "message", message=posting.message_json(message))
        reply = services.append_message(session=session, turn=turn, role=Message.Role.ASSISTANT, content="場地" * 9_000, coworker="mina")
        events.send_event(direct_channel.pk, "message", message=posting.message_json(reply))

    frame = events.session_frame(direct_channel.pk)

    assert len(json.dumps(frame, ensure_ascii=False).encode()) < 1024 * 1024
    assert frame["messages"][-1]["message"]["id"] == str(reply.pk), "the newest message is shown"
    assert frame["messages"][-2]["message"]["content"].endswith("25")


def test_a_replay_of_large_events_loads_only_about_what_it_sends(direct_channel, monkeypatch):
    """Sizes are read first: 200 events of 300 KB (60 MB) are not loaded to send three of them."""
    ChannelEvent.objects.bulk_create(
        ChannelEvent(channel=direct_channel, seq=seq, type="task", payload={"id": seq, "html": "x" * 300_000})
        for seq in range(1, 201)
    )
    loaded = []
    built = ChannelEvent.from_db.__func__
    monkeypatch.setattr(ChannelEvent, "from_db", classmethod(lambda cls, *a: loaded.append(1) or built(cls, *a)))

    frames, more = events.replay_after(direct_channel.pk, 0, consumers.RESYNC_MAX_EVENTS, consumers.RESYNC_MAX_BYTES)

    assert [frame["seq"] for frame in frames] == [1, 2, 3] and more
    assert len(loaded) <= 3 * events.STORED_SIZE_SLACK + 1, f"{len(loaded)} rows of 300 KB loaded to send three"


def test_a_replay_that_fits_says_nothing_more_is_stored(direct_channel):
    ChannelEvent.objects.bulk_create(
        ChannelEvent(channel=direct_channel, seq=seq, type="task", payload={"id": seq}) for seq in range(1, 8)
    )

    frames, more = events.replay_after(direct_channel.pk, 2, consumers.RESYNC_MAX_EVENTS, consumers.RESYNC_MAX_BYTES)

    assert [frame["seq"] for frame in frames] == [3, 4, 5, 6, 7] and not more
