"""`compare`'s goals in virtual time (cheap and deterministic): two runs of one campaign at other
seeds pass (A/A, at least 19 of 20 pairs: the gate's 95% family-wise confidence); the same
campaign whose target costs 50% more CPU per request, or whose limiter admits 20% more than its
policy, fails in 20 of 20 (A/B); with one seed a side and with two. Pair k compares the campaign
at seed 1000 + 10k with the baseline or candidate at seed 1000 + 10(k + 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.compare import Folder, failed, folder, judged
from analysis.gate import Limits
from analysis.pool import InlineExecutor
from harness.campaign.system import SystemSettings
from harness.sim.runner import execute, make_plan
from targets.algorithms import Policy

pytestmark = pytest.mark.slow  # A/B and A/A folders simulated over seeds

PAIRS = 20
L, W = 20.0, 5.0
ADMIT_MORE = [("fixed_window.limit", "24"), ("token_bucket.capacity", "24"), ("token_bucket.rate", "4.8")]
"""The limiters' own parameters 20% above the policy they are recorded under (L 20 per 5 s)."""
CPU_US = 159.0
"""50% above the model's fixed window and token bucket (106.0 and 106.2 µs per request)."""


def _campaign(out: Path, seed: int, repeats: int, params: list[tuple[str, str]] | None = None,
              cpu_us: float | None = None) -> Folder:
    plan = make_plan(name="goal", policy=Policy(L, W), algorithms=["fixed_window", "token_bucket"],
                     scenarios=["page_load_burst"], traces=[], algorithm_params=params or [], scenario_params=[],
                     seed=seed, repeats=repeats, system=None if cpu_us is None else SystemSettings(cpu_us=cpu_us))
    execute(plan, out)
    return folder(out, pool=InlineExecutor())


def _seed(k: int) -> int:
    return 1000 + 10 * k


def _passes(a: Folder, b: Folder) -> bool:
    c = judged(a, b, Limits(2.0, 0.01))
    return c.comparable and not failed(c)


@pytest.fixture(scope="module", params=[1, 2], ids=["one seed a side", "two seeds a side"])
def baselines(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[Folder]]:
    root = tmp_path_factory.mktemp(f"seeds{request.param}")
    return request.param, [_campaign(root / str(k), _seed(k), request.param) for k in range(PAIRS + 1)]


def test_a_a_passes(baselines: tuple[int, list[Folder]]) -> None:
    _, a = baselines
    assert sum(_passes(a[k], a[k + 1]) for k in range(PAIRS)) >= 19


@pytest.mark.parametrize("change", [{"cpu_us": CPU_US}, {"params": ADMIT_MORE}], ids=["cpu +50%", "admits +20%"])
def test_a_b_fails(baselines: tuple[int, list[Folder]], change: dict, tmp_path: Path) -> None:
    repeats, a = baselines
    b = [_campaign(tmp_path / str(k), _seed(k + 1), repeats, **change) for k in range(PAIRS)]
    assert sum(not _passes(a[k], b[k]) for k in range(PAIRS)) == PAIRS
