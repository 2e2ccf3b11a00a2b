"""fixed_block: L per W in a sliding log, then a block of block_s from the refusal that trips it."""

from __future__ import annotations

from targets.algorithms import PEER_MODELS, Policy, build_params, get_algorithm


def _run(times: list[float], **overrides: object) -> list[bool]:
    algo = get_algorithm("fixed_block")
    p = build_params("fixed_block", Policy(2, 10), overrides)
    state, out = None, []
    for t in times:
        d, state = algo.decide(state, t, 1.0, p)
        out.append(d.allowed)
    return out


def test_registered_as_a_peer_model() -> None:
    assert "fixed_block" in PEER_MODELS


def test_a_trip_blocks_for_block_s_then_starts_over() -> None:
    # 2 per 10 s, blocked 30 s: t=0, 1 admitted; t=2 trips (block until 32); 12 is inside the
    # block although the log would admit; 32 starts over: 32, 33 admitted, 34 trips again
    assert _run([0, 1, 2, 12, 31.999, 32, 33, 34], block_s=30) == [True, True, False, False, False, True, True, False]


def test_default_block_is_one_window() -> None:
    assert _run([0, 1, 2, 11.9, 12]) == [True, True, False, False, True]


def test_extend_restarts_the_block_on_each_refusal() -> None:
    # blocked at 2 until 32; a knock at 20 extends it to 50, so 50 is admitted (32 would not be)
    assert _run([0, 1, 2, 20, 50], block_s=30, extend=True) == [True, True, False, False, True]
    assert _run([0, 1, 2, 20, 32], block_s=30, extend=True) == [True, True, False, False, False]
