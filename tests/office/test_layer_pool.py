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


async def test_a_busy_process_s_sockets_get_every_delta_even_when_thousands_wait_between_them():
    # One Daphne process, its sockets' channels sharing one Redis key: five deltas wait for each
    # of 300 sockets before the process reads any (it is busy relaying), 1,500 in all.
    layer = get_channel_layer()
    channels = [await layer.new_channel() for _ in range(300)]
    groups = [f"test-capacity-{uuid.uuid4().hex}" for _ in channels]
    await asyncio.gather(*(layer.group_add(group, channel) for group, channel in zip(groups, channels)))
    for n in range(5):
        await asyncio.gather(*(layer.group_send(group, {"type": "office.event", "text": f"{n} "}) for group in groups))

    async def streamed(channel: str) -> str:
        return "".join([(await layer.receive(channel))["text"] for _ in range(5)])

    # A dropped delta never comes: its socket waits out the timeout.
    received = await asyncio.wait_for(asyncio.gather(*(streamed(channel) for channel in channels)), 10)
    assert received == ["0 1 2 3 4 "] * len(channels), "no delta dropped for being over capacity"
    await asyncio.gather(*(layer.group_discard(group, channel) for group, channel in zip(groups, channels)))
