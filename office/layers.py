"""The Redis channel layer with a bounded, blocking connection pool.

channels_redis builds a redis-py ConnectionPool per event loop, which refuses to open more than
100 connections and raises MaxConnectionsError instead: 500 sockets closing at once (a deploy, a
network blip) made 260 group_discard calls fail and left their channels in the groups' keys. A
BlockingConnectionPool of the same size makes the 101st caller wait for a free connection (each
group_add or group_discard holds one for a single round trip), so a thousand sockets share it.
"""

from __future__ import annotations

from channels_redis.core import RedisChannelLayer
from redis.asyncio import BlockingConnectionPool


class PooledRedisChannelLayer(RedisChannelLayer):
    """CONFIG as channels_redis's, plus per host `max_connections` (per event loop) and
    `pool_timeout` (seconds a caller waits for a free connection before redis-py raises)."""

    def create_pool(self, index):
        host = dict(self.hosts[index])
        if "address" not in host:
            return super().create_pool(index)  # a sentinel or keyword host: channels_redis's own
        address = host.pop("address")
        max_connections = host.pop("max_connections", 100)
        timeout = host.pop("pool_timeout", 10)
        return BlockingConnectionPool.from_url(address, max_connections=max_connections, timeout=timeout, **host)
