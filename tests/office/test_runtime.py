"""The configuration checks and the two runtimes: embedded and production."""

import os

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.checks import run_checks
from django.db import connection

from office.checks import out_of_process_worker_problem
from tests.conftest import requires_postgres, requires_redis

IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def check_ids() -> set[str]:
    return {message.id for message in run_checks()}


def test_it_refuses_celery_workers_with_the_in_memory_layer(settings):
    settings.CHANNEL_LAYERS = IN_MEMORY
    settings.BACKGROUND_WORK = "celery"

    assert "office.E002" in check_ids()
    assert "REDIS_URL" in out_of_process_worker_problem()


def test_it_refuses_an_unknown_background_mode(settings):
    settings.BACKGROUND_WORK = "threads"
    assert "office.E001" in check_ids()


def test_the_embedded_default_passes_its_checks(settings):
    settings.CHANNEL_LAYERS = IN_MEMORY
    settings.BACKGROUND_WORK = "inprocess"
    assert not check_ids() & {"office.E001", "office.E002", "office.E003"}


def test_a_celery_worker_will_not_start_with_the_in_memory_layer(settings):
    from office.celery import refuse_in_memory_layer

    settings.CHANNEL_LAYERS = IN_MEMORY
    with pytest.raises(RuntimeError, match="in-memory channel layer"):
        refuse_in_memory_layer()


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="SQLite only")
def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(db):
    with connection.cursor() as cursor:
        assert cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert cursor.execute("PRAGMA busy_timeout").fetchone()[0] == 20_000


@requires_postgres
def test_database_url_selects_postgresql(db):
    assert connection.vendor == "postgresql"


@requires_redis
def test_redis_url_carries_events_between_processes():
    """With REDIS_URL the layer is channels_redis: a group message reaches a receiver."""
    layer = get_channel_layer()
    from channels_redis.core import RedisChannelLayer

    assert isinstance(layer, RedisChannelLayer)

    async def round_trip() -> dict:
        channel = await layer.new_channel()
        await layer.group_add("test-runtime", channel)
        await layer.group_send("test-runtime", {"type": "message.created", "text": "hello"})
        received = await layer.receive(channel)
        await layer.group_discard("test-runtime", channel)
        return received

    assert async_to_sync(round_trip)() == {"type": "message.created", "text": "hello"}
