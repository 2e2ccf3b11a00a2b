"""The bounded memory store: LRU order, idle TTL, thread safety."""

from __future__ import annotations

import threading

from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import SWEEP_EVERY, MemoryStore


def store(name="fixed_window", limit=10, window=1.0, **kw):
    return MemoryStore(ALGORITHMS[name], build_params(name, Policy(limit, window)), **kw)


def test_least_recently_used_key_goes_first():
    s = store(max_keys=2)
    s.decide("a", 0.0)
    s.decide("b", 0.0)
    s.decide("a", 0.1)  # a is now the most recent
    s.decide("c", 0.2)  # evicts b
    assert s.state("a") is not None and s.state("c") is not None
    assert s.state("b") is None
    assert s.evictions == 1


def test_idle_keys_expire_after_the_state_lifetime():
    s = store(window=1.0)  # fixed window: state lives one window
    assert s.idle_ttl_s == 1.0
    s.decide("idle", 0.0)
    for i in range(SWEEP_EVERY):
        s.decide(f"busy{i % 3}", 1.0 + i / 1000)
    assert s.state("idle") is None
    assert len(s) == 3


def test_an_expired_key_starts_fresh_even_before_the_sweep():
    s = store(limit=1, window=1.0)
    assert s.decide("k", 0.0).allowed
    assert not s.decide("k", 0.5).allowed
    assert s.decide("k", 1.0).allowed


def test_key_rotation_attack_is_bounded():
    s = store(name="token_bucket", max_keys=1000)
    for i in range(200_000):
        s.decide(f"rotating-{i}", i * 1e-6)
    assert len(s) == 1000
    assert s.evictions == 199_000


def test_batch_decisions_equal_single_decisions():
    keys = [f"k{i % 7}" for i in range(500)]
    times = [i / 64 for i in range(500)]
    costs = [1 + i % 3 for i in range(500)]
    for name in ALGORITHMS:
        one, many = store(name, limit=8), store(name, limit=8)
        expected = [one.decide(k, t, c) for k, t, c in zip(keys, times, costs)]
        assert many.decide_many(keys, times, costs) == expected, name


def test_threads_never_over_admit():
    s = store(name="fixed_window", limit=1000, window=60.0)
    admitted = []

    def worker():
        n = sum(s.decide("shared", 1.0).allowed for _ in range(500))
        admitted.append(n)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(admitted) == 1000


def test_concurrency_release_frees_a_slot():
    s = MemoryStore(ALGORITHMS["concurrency"], build_params("concurrency", Policy(10, 1, burst=1)))
    assert s.decide("k", 0.0).allowed
    assert not s.decide("k", 0.0).allowed
    s.release("k", 0.1)
    assert s.decide("k", 0.1).allowed
