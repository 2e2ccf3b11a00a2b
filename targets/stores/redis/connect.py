"""Clients from a REDIS_URL, checked once at start so that a bad URL fails with one clear
message (``RedisConfigError``) instead of a fallback to the local limit on every request.

Decision clients get short socket timeouts (the failover's budget) and retry nothing but a
broken connection, once: after Redis restarts, every pooled connection is dead, and the first use
of each must reconnect rather than count as a new outage. A timeout is never retried (that would
double the budget); the failover decides what a slow or failed call means. The start-up check
uses a longer timeout.
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from ...redact import redact_url
from .errors import RedisConfigError

CHECK_TIMEOUT_S = 2.0


def check(url: str, *, cluster: bool = False, timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Raise RedisConfigError unless ``url`` reaches a Redis of the asked kind (the message
    shows the URL without its password)."""
    shown = redact_url(url)
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    except ValueError as exc:
        raise RedisConfigError(f"REDIS_URL {shown!r} is not a Redis URL ({exc})") from None
    try:
        enabled = bool(client.info("cluster").get("cluster_enabled"))
        if cluster and not enabled:
            raise RedisConfigError(f"REDIS_URL {shown}: cluster mode asked, but this Redis is not a cluster (cluster_enabled:0)")
        if not cluster and enabled:
            raise RedisConfigError(f"REDIS_URL {shown}: this Redis is a cluster node; ask cluster mode")
        if cluster and client.cluster("info").get("cluster_state") != "ok":
            raise RedisConfigError(f"REDIS_URL {shown}: the cluster is not ready (cluster_state is not ok)")
    except (redis.RedisError, OSError) as exc:
        raise RedisConfigError(f"REDIS_URL {shown}: cannot use Redis there ({type(exc).__name__}: {exc})") from None
    finally:
        client.close()


RECONNECT_ONCE = (NoBackoff(), 1)
RECONNECT_ERRORS = (redis.exceptions.ConnectionError,)


def _options(timeout_s: float) -> dict[str, Any]:
    return {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s}


def sync_client(url: str, *, cluster: bool = False, timeout_s: float = CHECK_TIMEOUT_S) -> Any:
    if cluster:
        return redis.cluster.RedisCluster.from_url(url, **_options(timeout_s))
    return redis.Redis.from_url(url, retry=Retry(*RECONNECT_ONCE, supported_errors=RECONNECT_ERRORS), **_options(timeout_s))


def async_client(url: str, *, cluster: bool = False, timeout_s: float = 0.05, max_connections: int = 64) -> Any:
    if cluster:
        return redis.asyncio.cluster.RedisCluster.from_url(url, max_connections=max_connections, **_options(timeout_s))
    retry = AsyncRetry(*RECONNECT_ONCE, supported_errors=RECONNECT_ERRORS)
    return redis.asyncio.Redis.from_url(url, max_connections=max_connections, retry=retry, **_options(timeout_s))
