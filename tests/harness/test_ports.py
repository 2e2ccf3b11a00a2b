"""Free ports chosen for the processes the suite starts: below the kernel's ephemeral range (an
outgoing connection could take an ephemeral one between the choice and the child's listen()),
distinct, free, never handed out twice by one process within minutes, never one it was told to
avoid (a remote run's master port: free while the side's ports are chosen, bound right after), and
from the share of ports its environment names (two test workers choosing at once)."""

from __future__ import annotations

import random
import socket

import pytest

from contract.errors import BadInput
from harness.processes import ports


class _Draws:
    """Stands in for the ports' random draw: the ports of a sequence, in turn."""

    def __init__(self, sequence: list[int]) -> None:
        self.next = iter(sequence)

    def choice(self, _candidates: range) -> int:
        return next(self.next)


def test_an_avoided_a_repeated_and_a_taken_port_are_passed_over(monkeypatch):
    with socket.socket() as taken:
        taken.bind((ports.HOST, 0))
        taken.listen()
        busy = taken.getsockname()[1]
        free = [p for p in range(20_000, 20_100) if ports.bindable(p)][:4]
        monkeypatch.setattr(ports, "_given", {})
        monkeypatch.setattr(ports, "_DRAW", _Draws([free[0], busy, free[1], free[1], free[0], free[2]]))
        assert ports.free_ports(2, avoid=frozenset([free[0]])) == [free[1], free[2]]
        # handed out a moment ago (its child may not listen yet): passed over by this process
        monkeypatch.setattr(ports, "_DRAW", _Draws([busy, free[2], free[1], free[0]]))
        assert ports.free_port() == free[0]
        monkeypatch.setattr(ports, "_DRAW", _Draws([free[1], free[2], free[0], free[3]]))
        assert ports.free_ports(1) == [free[3]]
        monkeypatch.setattr(ports, "_given", {p: at - ports.HELD_S - 1 for p, at in ports._given.items()})
        monkeypatch.setattr(ports, "_DRAW", _Draws([free[1]]))
        assert ports.free_port() == free[1]  # held long enough: its child listens on it, or failed


def test_real_ports_are_below_the_ephemeral_range_distinct_bindable_and_not_seeded():
    low = ports.ephemeral_low()
    random.seed(1)
    chosen = ports.free_ports(8)
    random.seed(1)
    again = ports.free_ports(8)
    assert len(set(chosen)) == 8 and all(ports.bindable(p) for p in chosen) and chosen != again
    assert all(ports.LOWEST <= p < low for p in chosen + again)
    node = ports.free_port(cluster_bus=True)
    assert ports.LOWEST <= node < node + ports.CLUSTER_BUS < low


def test_the_ephemeral_range_is_read_from_the_kernel_or_linuxs_default(tmp_path):
    path = tmp_path / "ip_local_port_range"
    path.write_text("40000\t60999\n")
    assert ports.ephemeral_low(path) == 40000
    path.write_text("garbage")
    assert ports.ephemeral_low(path) == 32768
    assert ports.ephemeral_low(tmp_path / "absent") == 32768


def test_a_share_draws_only_its_own_ports_and_a_bad_share_is_named(monkeypatch):
    """Four workers choosing at once, each from its share: no port is drawn by two of them, a
    cluster node's bus port is in its node's share, and unset means every port."""
    low = ports.ephemeral_low()
    drawn: dict[int, set[int]] = {}
    for k in range(4):
        monkeypatch.setenv(ports.SHARD_ENV, f"{k}/4")
        drawn[k] = set(ports.free_ports(20))
        node = ports.free_port(cluster_bus=True)
        assert node % 4 == (node + ports.CLUSTER_BUS) % 4 == k and node + ports.CLUSTER_BUS < low
        assert all(p % 4 == k and ports.LOWEST <= p < low for p in drawn[k])
    assert len(set.union(*drawn.values())) == 80
    assert ports.shard("3/8") == (3, 8) and ports.shard("") == (0, 1)
    monkeypatch.delenv(ports.SHARD_ENV)
    assert ports.shard() == (0, 1) and ports._candidates() == range(ports.LOWEST, low)
    for bad in ("4/4", "1", "a/4", "-1/4", "1/0"):
        with pytest.raises(BadInput, match=f"{ports.SHARD_ENV}='{bad}': expected k/N"):
            ports.shard(bad)
