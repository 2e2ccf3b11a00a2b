"""Shared mode: every decision is one atomic script call (EVALSHA, one round trip).

``RedisStore`` (sync: tests, harness, benchmark) and ``AsyncRedisStore`` (redis.asyncio with
hiredis: the targets) take a ready client, standalone or cluster, and send EVALSHA through its
``execute_command`` (the cluster client routes it by the hash-tagged key's slot). On NOSCRIPT (a
restarted or failed-over server, SCRIPT FLUSH) they hand the call to redis-py's ``Script``, which
loads the script and calls again; the hot path skips ``Script.__call__`` (its tuple copies and
pipeline check cost more than our own argument encoding). ``now=None`` uses the Redis server's
clock (one clock for all nodes, so their skew does not matter); tests inject ``now``. An injected
``now`` does not move Redis's own TTL clock: keys still expire in real server time.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import NoScriptError

from ...algorithms.base import Algorithm, Decision, new_decision
from .errors import RedisConfigError
from .scripts import Codec, pack_cost, parse, release_source, unpack_decision


class _Base:
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, namespace: str, ttl_s: float | None) -> None:
        if client.get_encoder().decode_responses:
            raise RedisConfigError("the Redis store needs a client with decode_responses=False: script replies are packed binary")
        self.client = client
        self.algorithm, self.params = algorithm, params
        self.codec = Codec(algorithm, params, namespace, ttl_s)
        self._script = client.register_script(self.codec.source)
        self._release = client.register_script(release_source()) if algorithm.release else None
        self.calls = 0
        """Round trips made (one per decide, lease or release)."""


class RedisStore(_Base):
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, *, namespace: str = "rl",
                 ttl_s: float | None = None) -> None:
        super().__init__(client, algorithm, params, namespace, ttl_s)

    def _run(self, keys: list[str], args: list[Any]) -> bytes:
        self.calls += 1
        try:
            return self.client.execute_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return self._script(keys, args)

    def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        # _run inlined: the hot path, where a Python call is a visible share of the client's work
        self.calls += 1
        c = self.codec
        keys, args = c.keys(key), c.args(now, cost)
        try:
            reply = self.client.execute_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
        except NoScriptError:
            reply = self._script(keys, args)
        return new_decision(Decision, unpack_decision(reply))

    def lease(self, key: str, now: float | None = None, cost: float = 1.0, want: float | None = None) -> tuple[Decision, float]:
        """A decision for ``cost`` that, when ``want`` > cost, takes the largest whole amount up
        to ``want`` that fits; returns the decision and the amount taken."""
        c = self.codec
        return parse(self._run(c.keys(key), c.args(now, cost, want)))

    def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        """Concurrency: give back ``cost`` slots (``now`` is unused; kept for MemoryStore's signature)."""
        if self._release is not None:
            self.calls += 1
            self._release(self.codec.keys(key), [pack_cost(cost)])


class AsyncRedisStore(_Base):
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, *, namespace: str = "rl",
                 ttl_s: float | None = None) -> None:
        super().__init__(client, algorithm, params, namespace, ttl_s)

    async def _run(self, keys: list[str], args: list[Any]) -> bytes:
        self.calls += 1
        try:
            return await self.client.execute_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self._script(keys, args)

    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        # _run inlined: one coroutine less per decision
        self.calls += 1
        c = self.codec
        keys, args = c.keys(key), c.args(now, cost)
        try:
            reply = await self.client.execute_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
        except NoScriptError:
            reply = await self._script(keys, args)
        return new_decision(Decision, unpack_decision(reply))

    async def lease(self, key: str, now: float | None = None, cost: float = 1.0,
                    want: float | None = None) -> tuple[Decision, float]:
        c = self.codec
        return parse(await self._run(c.keys(key), c.args(now, cost, want)))

    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        if self._release is not None:
            self.calls += 1
            await self._release(self.codec.keys(key), [pack_cost(cost)])
