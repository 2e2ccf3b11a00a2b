"""The Lua scripts and the wire format shared by the sync and async stores.

- Key layout: ``<namespace>:{<key>}:<suffix>``. The braces are a Redis Cluster hash tag, so
  every key of one script call (the sliding log has two) lands in one slot. ``%`` and ``}`` in
  a client key are percent-escaped and the empty key is written ``%``, so the tag is never
  empty and never cut short (an empty tag would hash the whole name and split the keys).
- ARGV[1]: ``now`` (NaN = Redis server time), ``cost``, ``want``, the numeric params (in
  dataclass field order) and the µs constants the params derive (``window_us``, ``interval_us``
  ...: algorithms.base), packed as little-endian doubles in one string; the script's first
  line, written here, unpacks them into locals named after the fields. ARGV[2]: the TTL in ms
  (a decimal string: the scripts hand it to SET/PEXPIRE as is); text params from ARGV[3].
- Reply: one bulk string packed ``<?ddddd`` (allowed, remaining, retry, reset, delay, granted).
  A Lua number reply would be truncated to an integer; packed doubles are exact and cost no
  ``%.17g`` formatting in Lua nor ``float()`` parsing here (the old text reply and state were
  a good part of a decision's cost). Stored states are packed doubles too (see the scripts).
- TTL: ``ceil(state_ttl * 1000)`` ms, written by the script in the same command as the state
  (``SET ... PX``); ``inf`` (concurrency) means no TTL at all. ``ttl_s`` overrides it: Redis
  expires keys in its own real time, so tests that inject a virtual ``now`` pass a long TTL.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from functools import cache
from pathlib import Path
from typing import Any

from ...algorithms.base import Algorithm, Decision, derived_names, new_decision
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

pack_cost = struct.Struct("<d").pack
"""The release script's one argument."""
unpack_decision = struct.Struct("<?dddd").unpack_from
"""A reply's first five fields: ``new_decision(Decision, unpack_decision(reply))``."""
_unpack_lease = struct.Struct("<?ddddd").unpack


def _is_text(field: dataclasses.Field[Any]) -> bool:
    return field.type in (str, "str") or str(field.type).startswith("Literal[")


@cache
def script_source(name: str, params_type: type) -> str:
    """The full script of an algorithm: the line that unpacks its arguments into locals (one
    struct.unpack: cheaper than a tonumber per param), the shared prelude, then its own body."""
    fields = dataclasses.fields(params_type)
    numbers = ["now", "cost", "want", *(f.name for f in fields if not _is_text(f)), *derived_names(params_type)]
    head = [f"local {', '.join(numbers)} = struct.unpack('<{'d' * len(numbers)}', ARGV[1])"]
    head += [f"local {f.name} = ARGV[{i}]" for i, f in enumerate((f for f in fields if _is_text(f)), start=3)]
    return "\n".join(head) + "\n" + (LUA_DIR / "prelude.lua").read_text() + "\n" + (LUA_DIR / f"{name}.lua").read_text()


@cache
def release_source() -> str:
    return (LUA_DIR / "concurrency_release.lua").read_text()


def hash_tag(key: str) -> str:
    return key.replace("%", "%25").replace("}", "%7D") or "%"


def ttl_ms(ttl_s: float) -> int:
    return 0 if math.isinf(ttl_s) else max(1, math.ceil(ttl_s * 1000))


class Codec:
    """Keys and arguments of one algorithm's calls."""

    def __init__(self, algorithm: Algorithm, params: Any, namespace: str = "rl", ttl_s: float | None = None) -> None:
        if algorithm.name not in SUFFIXES:
            raise RedisConfigError(f"algorithm {algorithm.name!r} has no Redis script; choose from: {', '.join(SUFFIXES)}")
        self.algorithm, self.params, self.namespace = algorithm, params, namespace
        self.source = script_source(algorithm.name, type(params))
        self._head = f"{namespace}:{{"
        self._tails = [f"}}:{suffix}" for suffix in SUFFIXES[algorithm.name]]
        fields = dataclasses.fields(params)
        numbers = [f.name for f in fields if not _is_text(f)] + list(derived_names(type(params)))
        self._numbers = tuple(float(getattr(params, name)) for name in numbers)
        self._pack = struct.Struct("<" + "d" * (3 + len(self._numbers))).pack
        ttl = ttl_ms(algorithm.state_ttl(params) if ttl_s is None else ttl_s)
        self._tail_args = [str(ttl), *(getattr(params, f.name) for f in fields if _is_text(f))]

    def keys(self, key: str) -> list[str]:
        head = self._head + hash_tag(key)
        return [head + tail for tail in self._tails]

    def args(self, now: float | None, cost: float, want: float | None = None) -> list[bytes | str]:
        return [self._pack(math.nan if now is None else now, cost, cost if want is None else want, *self._numbers),
                *self._tail_args]


def parse(reply: bytes) -> tuple[Decision, float]:
    """A script's reply as a Decision plus the granted cost (> cost only for a lease)."""
    allowed, remaining, retry, reset, delay, granted = _unpack_lease(reply)
    return new_decision(Decision, (allowed, remaining, retry, reset, delay)), granted
