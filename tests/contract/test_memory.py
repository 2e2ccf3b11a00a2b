"""The bound of a figure that sizes memory: the suite's ceiling or half this machine's memory,
whichever is smaller, named with the figure in one line."""

from __future__ import annotations

import pytest

from contract import memory
from contract.errors import BadInput


def test_the_bound_is_the_ceiling_on_a_large_machine_and_the_memory_share_on_a_small_one(monkeypatch) -> None:
    monkeypatch.setattr(memory, "machine_bytes", lambda: 64 * 2**30)
    assert memory.bound_of(10_000_000, 400) == 10_000_000
    monkeypatch.setattr(memory, "machine_bytes", lambda: 2 * 2**30)
    assert memory.bound_of(10_000_000, 400) == 2**30 // 400 == 2_684_354


def test_a_figure_past_its_bound_is_one_line_naming_both(monkeypatch) -> None:
    monkeypatch.setattr(memory, "machine_bytes", lambda: 2 * 2**30)
    memory.check_fits("requests", 2_684_354, 10_000_000, 400)
    with pytest.raises(BadInput, match=r"^requests 2,684,355 is beyond the bound of 2,684,354 \(50% of this machine's "
                                       r"2.0 GiB at 400 bytes each\); lower it$"):
        memory.check_fits("requests", 2_684_355, 10_000_000, 400, advice="lower it")
    monkeypatch.setattr(memory, "machine_bytes", lambda: 64 * 2**30)
    with pytest.raises(BadInput, match=r"span 1,000,000,000,000,000 is beyond the bound of 2,678,400 \(the suite's ceiling\)"):
        memory.check_fits("span", 1e15, 2_678_400, 512)
    with pytest.raises(BadInput, match="nan"):
        memory.check_fits("span", float("nan"), 2_678_400, 512)
