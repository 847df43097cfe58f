"""Recall's search by meaning: the model, the vectors it stores, and an old exchange found though
it shares no word with the request."""

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest

from coworkers.providers.offline import OfflineResponder
from sessions import history, jsonl, meaning, prompts, services, tasks, upkeep, vectors
from office.models import Channel
from sessions.models import ExchangeVector, Session
from tests.conftest import requires_postgres
from benchmarks.recall_conversations import generate_recall_conversation
from tests.sessions.test_background import wait_for
from tests.sessions.test_prompts import TOPICS

PUPPIES = ("My sister's golden retriever had six puppies last night.", "Congratulations to her! Six is a big litter.")
# Not one word in common with PUPPIES once stop words are left out ("dogs" is not "puppies").
ASKED_OTHERWISE = "How many dogs were born to my sibling's pet?"


def test_texts_that_mean_the_same_are_nearer_than_unrelated_ones():
    exchanges = ["\n".join(pair) for pair in TOPICS] + ["\n".join(PUPPIES)]

    vectors_ = meaning.embed(exchanges)
    asked = meaning.embed([ASKED_OTHERWISE])[0]

    assert vectors_.shape == (5, meaning.DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors_, axis=1), 1.0, atol=1e-5)
    scores = vectors_ @ asked
    assert scores.argmax() == 4 and scores[4] > 0.4
    assert max(scores[:4]) < 0.2, "the office topics are unrelated to a litter of puppies"
    assert np.allclose(meaning.embed(exchanges[4:]), vectors_[4:], atol=1e-5), "the same vector alone or in a batch"



def test_the_process_multiplies_on_one_blas_thread_also_after_an_encoding():
    """Two BLAS threads on a busy two-core machine made a request's search by meaning 13 times
    slower (see sessions/meaning.py); an encoding must not leave the process on two again."""
    from threadpoolctl import threadpool_info

    meaning.embed(["Where is the offsite?"])

    assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {1}

def test_a_stored_vector_ranks_as_the_computed_one():
    computed = meaning.embed(["\n".join(PUPPIES), "\n".join(TOPICS[0])])
    stored = meaning.from_bytes([meaning.to_bytes(row) for row in computed])

    assert stored.shape == computed.shape and np.abs(stored - computed).max() < 1e-3


def test_text_mostly_in_chinese_and_empty_text_are_left_to_the_search_by_words():
    assert vectors.readable("What did we decide about the venue?")
    assert vectors.readable("What did we decide about the 會場?"), "a word of Chinese in English text"
    assert not vectors.readable("我們三週前對場地做了什麼決定？")
    assert not vectors.readable("   ")


def test_an_exchange_found_by_both_searches_outranks_one_found_by_either():
    fused = prompts.fused_scores({(1, 1): 8.0, (1, 2): 4.0}, {(1, 1): 0.5, (1, 3): 0.6, (1, 4): -0.1})

    assert max(fused, key=fused.get) == (1, 1)
    assert fused[(1, 3)] == pytest.approx(1.0) and fused[(1, 2)] == pytest.approx(0.5)
    assert fused[(1, 4)] == 0.0, "a negative cosine adds nothing"
    assert prompts.fused_scores({}, {}) == {}
    assert prompts.fused_scores({(1, 1): 3.0}, {}) == {(1, 1): 1.0}


def puppies_history(n_tasks: int = 40, puppies_turn: int = 3) -> str:
    records, previous = [], None
    for turn in range(1, n_tasks + 1):
        question, answer = PUPPIES if turn == puppies_turn else TOPICS[(turn - 1) % len(TOPICS)]
        for role, content in (("user", f"{question}"), ("assistant", answer)):
            record = history.Record(id=f"{turn}-{role}", previous=previous, turn=turn, role=role, content=content,
                                    coworker="mina" if role == "assistant" else None)
            records.append(record)
            previous = record.id
    return jsonl.dump_records(records)


def test_an_old_exchange_that_shares_no_word_with_the_request_is_recalled_by_meaning(settings, direct_channel):
    session = services.import_session(channel=direct_channel, data=puppies_history()).session
    upkeep.catch_up(session, provider=OfflineResponder())
    assert ExchangeVector.objects.filter(session=session).count() == 40, "the import's catch-up embeds every exchange"

    candidates = prompts.find_recall_candidates(session, ASKED_OTHERWISE, through=32)
    assert candidates and candidates[0].turn == 3
    assert candidates[0].matched == () and candidates[0].meaning > 0.4

    prompt = prompts.build_for_task(session=session, instruction=ASKED_OTHERWISE, turn=41)
    assert 3 in prompt.report["recalled_tasks"]
    assert PUPPIES[0] in "\n".join(str(m.content) for m in prompt.messages)
    [shown] = [x for x in prompt.report["layers"]["recalled"]["exchanges"] if x["turn"] == 3]
    assert shown["matched"] == [] and shown["meaning"] > 0.4

    settings.MEANING_SEARCH = False
    assert 3 not in [c.turn for c in prompts.find_recall_candidates(session, ASKED_OTHERWISE, through=32)], (
        "words alone do not find it"
    )


def test_a_request_unrelated_to_everything_recalls_nothing_by_meaning(direct_channel):
    session = services.import_session(channel=direct_channel, data=puppies_history()).session
    upkeep.catch_up(session, provider=OfflineResponder())

    assert prompts.find_recall_candidates(session, "Write a haiku about autumn leaves", through=32) == []
    assert vectors.nearest("我們三週前對場地做了什麼決定？", channel_id=direct_channel.pk, limit=10) == {}


@pytest.mark.django_db(transaction=True)
def test_a_finished_task_gets_its_vector_in_the_background(settings, direct_channel):
    settings.BACKGROUND_WORK = "inprocess"
    session = services.get_active_session(channel=direct_channel)
    task, _ = services.start_task(session=session, instruction=PUPPIES[0])
    services.append_message(session=session, turn=task.turn, role="assistant", content=PUPPIES[1], coworker="mina")

    tasks.after_task(task=task)

    assert wait_for(lambda: ExchangeVector.objects.filter(session=session, turn=task.turn).exists())
    tasks.embed_task(task.pk)  # a job delivered twice writes nothing more
    assert ExchangeVector.objects.filter(session=session).count() == 1
    found = vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=5)
    assert list(found) == [(session.pk, task.turn)] and found[(session.pk, task.turn)] > 0.4


def test_small_talk_finds_at_most_a_few_greetings_by_meaning(direct_channel):
    # A varied conversation (work and small talk over weeks): greetings and thanks are everywhere
    # in it, and close in meaning to each other, but say nothing a request needs.
    records = generate_recall_conversation(300, language="en", seed=0).records
    session = services.import_session(channel=direct_channel, data=jsonl.dump_records(records)).session
    assert upkeep.embed_session(session)

    def by_meaning_alone(said: str) -> list[int]:
        return [c.turn for c in prompts.find_recall_candidates(session, said, through=290) if c.meaning and not c.matched]

    assert by_meaning_alone("Write a haiku about autumn leaves") == []
    for said in ("hello", "thanks!", "Good morning!", "ok"):
        assert len(by_meaning_alone(said)) <= 3, said  # a greeting or two, never dozens


def test_the_search_sees_new_vectors_and_forgets_a_deleted_sessions(direct_channel):
    first = services.import_session(channel=direct_channel, data=puppies_history(8)).session
    upkeep.embed_session(first)
    assert (first.pk, 3) in vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=1)

    second = services.import_session(channel=direct_channel, data=puppies_history(8, puppies_turn=5)).session
    upkeep.embed_session(second)
    assert set(vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=2)) == {(first.pk, 3), (second.pk, 5)}

    first_pk = first.pk
    first.delete()
    left = vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=20)
    assert max(left, key=left.get) == (second.pk, 5) and not any(session == first_pk for session, _ in left)


def commit_vector(session, *, turn, vector, pk=None):
    """A vector written as an embedding job writes it: the row and the session's totals in one
    transaction (sessions.vectors.embed_exchanges), here with the id of our choosing."""
    with transaction.atomic():
        row = ExchangeVector.objects.create(id=pk, channel_id=session.channel_id, session=session, turn=turn, vector=vector)
        Session.objects.filter(pk=session.pk).update(
            vector_count=F("vector_count") + 1, vector_last=Greatest("vector_last", row.pk), vector_ids=F("vector_ids") + row.pk
        )


def searched_before_the_puppies_vector_commits(channel, *, before=0):
    """An embedded session whose puppies vector (turn 3) a search has not seen yet, as if it
    committed late; returns the session, that vector's id and its bytes. `before`: a session
    of that many exchanges, embedded first."""
    if before:
        upkeep.embed_session(services.import_session(channel=channel, data=puppies_history(before, puppies_turn=0)).session)
    session = services.import_session(channel=channel, data=puppies_history(8)).session
    upkeep.embed_session(session)
    puppies = ExchangeVector.objects.get(session=session, turn=3)
    late_id, vector = puppies.pk, bytes(puppies.vector)
    # Not committed yet: neither the row nor its share of the session's totals.
    puppies.delete()
    Session.objects.filter(pk=session.pk).update(vector_count=F("vector_count") - 1, vector_ids=F("vector_ids") - late_id)
    assert (session.pk, 3) not in vectors.nearest(ASKED_OTHERWISE, channel_id=channel.pk, limit=8)
    return session, late_id, vector


def test_a_search_checks_its_copy_by_the_sessions_totals(direct_channel):
    session = services.import_session(channel=direct_channel, data=puppies_history(8)).session
    upkeep.embed_session(session)
    session.refresh_from_db()
    ids = list(ExchangeVector.objects.filter(session=session).values_list("pk", flat=True))
    assert (session.vector_count, session.vector_last, session.vector_ids) == (8, max(ids), sum(ids))
    assert vectors.embed_exchanges(session) == 0, "embedded again, nothing is written or counted twice"
    session.refresh_from_db()
    assert session.vector_count == 8


def test_a_vector_that_commits_after_a_newer_one_is_still_found(direct_channel):
    # In PostgreSQL two embedding jobs can commit out of id order: a search that read up to the
    # newer vector must still see the older one once it is there.
    session, late_id, vector = searched_before_the_puppies_vector_commits(direct_channel)

    commit_vector(session, turn=3, vector=vector, pk=late_id)
    commit_vector(session, turn=9, vector=vector)
    found = vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=9)
    assert {(session.pk, 3), (session.pk, 9)} <= set(found)


def test_a_session_deleted_while_a_vector_commits_late_is_noticed(direct_channel):
    # The count and the newest id stay as they were; the sum of ids does not.
    session, late_id, vector = searched_before_the_puppies_vector_commits(direct_channel, before=1)
    earlier = Session.objects.exclude(pk=session.pk).get(channel=direct_channel)
    earlier.delete()
    commit_vector(session, turn=3, vector=vector, pk=late_id)
    found = vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=8)
    assert (session.pk, 3) in found and not any(key[0] == earlier.pk for key in found)


def test_embed_history_embeds_what_history_from_before_lacks(settings, direct_channel):
    settings.MEANING_SEARCH = False
    session = services.import_session(channel=direct_channel, data=puppies_history(12)).session
    upkeep.catch_up(session, provider=OfflineResponder())
    assert not ExchangeVector.objects.filter(session=session).exists()

    settings.MEANING_SEARCH = True
    out, err = io.StringIO(), io.StringIO()
    call_command("embed_history", stdout=out, stderr=err)
    assert ExchangeVector.objects.filter(session=session).count() == 12
    assert "embedded 12 exchange(s)" in err.getvalue()

    call_command("embed_history", "--session", str(session.pk), stdout=out, stderr=(again := io.StringIO()))
    assert again.getvalue() == "", "a second run has nothing left to embed"


def test_requests_that_arrive_together_are_embedded_together(monkeypatch):
    # A hundred replies starting at once must not queue for a hundred encodings one after another.
    real, calls = meaning.embed, []

    def counted(texts):
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(meaning, "embed", counted)
    asked = [f"What did we decide about the venue for event {n}?" for n in range(40)]
    with ThreadPoolExecutor(max_workers=40) as pool:
        found = list(pool.map(vectors.query_vector, asked))
    assert sum(calls) == len(asked) and len(calls) < len(asked) / 4
    assert all(np.allclose(vector, real([text])[0], atol=1e-5) for vector, text in zip(found, asked))
    assert vectors.query_vector(asked[0]) is found[0] and sum(calls) == len(asked)  # asked again: not embedded again


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_vector_written_while_a_message_is_stored_waits_its_turn_instead_of_deadlocking(direct_channel):
    # Storing a message locks its session's row, then its channel's (for the event's seq). A
    # vector's insert has PostgreSQL check both rows at commit, channel first: unless it takes the
    # session's first, each transaction waits for the other until PostgreSQL aborts one.
    session = services.import_session(channel=direct_channel, data=puppies_history(8)).session
    locked, failures = threading.Event(), []

    def store_a_message() -> None:
        try:
            with transaction.atomic():
                Session.objects.select_for_update().get(pk=session.pk)
                locked.set()
                time.sleep(1.0)  # meanwhile the vector's transaction gets as far as it can
                Channel.objects.select_for_update().get(pk=direct_channel.pk)
        except Exception as error:  # a deadlock aborts one of the two
            failures.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=store_a_message)
    writer.start()
    assert locked.wait(10)
    try:
        written = vectors.embed_exchanges(session, [3])
    except Exception as error:
        failures.append(error)
        written = 0
    writer.join(20)
    assert not writer.is_alive() and not failures and written == 1
    assert ExchangeVector.objects.filter(session=session, turn=3).exists()


def test_embed_history_sets_right_totals_that_drifted(direct_channel):
    session = services.import_session(channel=direct_channel, data=puppies_history(8)).session
    upkeep.embed_session(session)
    Session.objects.filter(pk=session.pk).update(vector_count=0, vector_last=0, vector_ids=0)  # as an older version left them
    assert vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=8) == {}, "the search trusts the totals"

    call_command("embed_history", "--session", str(session.pk), stdout=io.StringIO(), stderr=io.StringIO())
    assert (session.pk, 3) in vectors.nearest(ASKED_OTHERWISE, channel_id=direct_channel.pk, limit=8)
