"""Fixtures that start the production topology (see topology.py). They need PostgreSQL and Redis,
so they are skipped in the embedded run (no DATABASE_URL / REDIS_URL) and run in CI's second pass."""

from __future__ import annotations

import os
import urllib.parse
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from .topology import Topology, drop_database, fresh_database

needs_services = pytest.mark.skipif(
    not (os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL")),
    reason="the production topology needs DATABASE_URL (PostgreSQL) and REDIS_URL",
)

# Redis database numbers of their own, so a topology's queues and groups never mix with
# the test run's (which uses REDIS_URL's own database); TOPOLOGY_REDIS_DB picks another (several runs on one Redis).
TOPOLOGY_REDIS_DB = int(os.environ.get("TOPOLOGY_REDIS_DB", "11"))


def redis_url_with_db(url: str, db: int) -> str:
    return url.rsplit("/", 1)[0] + f"/{db}" if url.count("/") >= 3 else f"{url.rstrip('/')}/{db}"


@pytest.fixture
def start_topology(tmp_path) -> Iterator[Callable[..., Topology]]:
    """Start `deploy/prod` on a fresh database; everything it started is stopped afterwards.

    Call it with `env={...}` for extra variables, `redis_url=` for a Redis of the test's own and
    `database_port=` for a proxy to PostgreSQL that the topology (not `topology.database_url`, which
    the test reads the store through) connects through.
    """
    started: list[Topology] = []

    def start(
        *, env: dict[str, str] | None = None, redis_url: str | None = None, database_port: int | None = None
    ) -> Topology:
        name = f"vo_topology_{uuid.uuid4().hex[:8]}"
        redis_url = redis_url or redis_url_with_db(os.environ["REDIS_URL"], TOPOLOGY_REDIS_DB)
        redis.Redis.from_url(redis_url).flushdb()
        database_url = fresh_database(os.environ["DATABASE_URL"], name)
        env = dict(env or {})
        if database_port is not None:
            parts = urllib.parse.urlsplit(database_url)
            user = parts.netloc.rpartition("@")[0]
            netloc = f"{user}@127.0.0.1:{database_port}" if user else f"127.0.0.1:{database_port}"
            env["DATABASE_URL"] = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        topology = Topology(
            database_url=database_url,
            redis_url=redis_url,
            run_dir=tmp_path / f"run-{len(started)}",
            env=env,
        )
        started.append(topology)
        return topology.start()

    yield start
    for topology in started:
        try:
            topology.stop()
        finally:
            drop_database(topology.database_url)
