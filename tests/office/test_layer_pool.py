"""The channel layer under many sockets at once (against real Redis): a thousand sockets joining and
leaving together share a bounded pool, every join and leave lands, and no group keeps a stale member."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels.layers import get_channel_layer

from tests.conftest import requires_redis

pytestmark = [requires_redis, pytest.mark.asyncio, pytest.mark.usefixtures("fresh_channel_layer")]
SOCKETS = 1000


async def members(layer, group: str) -> int:
    return await layer.connection(layer.consistent_hash(group)).zcard(layer._group_key(group))


async def test_it_joins_and_leaves_a_thousand_sockets_at_once_without_running_out_of_connections():
    layer = get_channel_layer()
    group = f"test-pool-{uuid.uuid4().hex}"
    channels = [f"specific.{uuid.uuid4().hex}!{n}" for n in range(SOCKETS)]

    await asyncio.gather(*(layer.group_add(group, channel) for channel in channels))
    joined = await members(layer, group)
    await asyncio.gather(*(layer.group_discard(group, channel) for channel in channels))
    left = await members(layer, group)

    assert (joined, left) == (SOCKETS, 0), "every join landed, and no stale member is left"
    pool = layer.connection(0).connection_pool
    opened = len(pool._available_connections) + len(pool._in_use_connections)
    assert opened <= pool.max_connections <= 100, "a bounded number of connections, never one per socket"
