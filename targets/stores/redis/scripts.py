"""The Lua scripts and the wire format shared by the sync and async stores.

- Key layout: ``<namespace>:{<key>}:<suffix>``. The braces are a Redis Cluster hash tag, so
  every key of one script call (the sliding log has two) lands in one slot. ``%`` and ``}`` in
  a client key are percent-escaped and the empty key is written ``%``, so the tag is never
  empty and never cut short (an empty tag would hash the whole name and split the keys).
- ARGV: ``now`` ('' = Redis server time), ``cost``, ``want``, the TTL in ms, then the params
  in dataclass field order. Floats go as ``repr()`` strings (shortest round-trip form) and
  come back as ``%.17g`` strings: a Lua number reply would be truncated to an integer.
- TTL: ``ceil(state_ttl * 1000)`` ms, written by the script in the same command as the state
  (``SET ... PX``); ``inf`` (concurrency) means no TTL at all. ``ttl_s`` overrides it: Redis
  expires keys in its own real time, so tests that inject a virtual ``now`` pass a long TTL.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from pathlib import Path
from typing import Any

from ...algorithms.base import Algorithm, Decision, new_decision
from .errors import RedisConfigError

LUA_DIR = Path(__file__).with_name("lua")

SUFFIXES: dict[str, tuple[str, ...]] = {
    "fixed_window": ("fw",),
    "sliding_log": ("sl", "slm"),
    "sliding_window_counter": ("swc",),
    "sliding_window_ring": ("swr",),
    "token_bucket": ("tb",),
    "leaky_bucket": ("lb",),
    "gcra": ("gcra",),
    "concurrency": ("cc",),
}
"""The algorithms with a Lua script, and the key suffix(es) of their state."""


@cache
def script_source(name: str) -> str:
    """The full script of an algorithm: the shared prelude, then its own body."""
    return (LUA_DIR / "prelude.lua").read_text() + "\n" + (LUA_DIR / f"{name}.lua").read_text()


@cache
def release_source() -> str:
    return (LUA_DIR / "concurrency_release.lua").read_text()


def hash_tag(key: str) -> str:
    return key.replace("%", "%25").replace("}", "%7D") or "%"


def encode(value: Any) -> str:
    return value if isinstance(value, str) else repr(float(value))


def ttl_ms(ttl_s: float) -> int:
    return 0 if math.isinf(ttl_s) else max(1, math.ceil(ttl_s * 1000))


class Codec:
    """Keys and arguments of one algorithm's calls, and the decoding of its replies."""

    def __init__(self, algorithm: Algorithm, params: Any, namespace: str = "rl", ttl_s: float | None = None) -> None:
        if algorithm.name not in SUFFIXES:
            raise RedisConfigError(f"algorithm {algorithm.name!r} has no Redis script; choose from: {', '.join(SUFFIXES)}")
        self.algorithm, self.params, self.namespace = algorithm, params, namespace
        self.source = script_source(algorithm.name)
        self._suffixes = SUFFIXES[algorithm.name]
        ttl = ttl_ms(algorithm.state_ttl(params) if ttl_s is None else ttl_s)
        self._tail = [str(ttl), *(encode(getattr(params, f.name)) for f in dataclasses.fields(params))]

    def keys(self, key: str) -> list[str]:
        head = f"{self.namespace}:{{{hash_tag(key)}}}:"
        return [head + suffix for suffix in self._suffixes]

    def args(self, now: float | None, cost: float, want: float | None = None) -> list[str]:
        c = repr(float(cost))
        return ["" if now is None else repr(float(now)), c, c if want is None else repr(float(want)), *self._tail]


def parse(reply: bytes) -> tuple[Decision, float]:
    """A script's reply, ``b"allowed remaining retry reset delay granted"``, as a Decision plus
    the granted cost (> cost only for a lease)."""
    allowed, remaining, retry, reset, delay, granted = reply.split()
    return new_decision(Decision, (allowed == b"1", float(remaining), float(retry), float(reset), float(delay))), float(granted)
