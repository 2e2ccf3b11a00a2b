"""A gateway's token bucket in front of an adaptive limiter, live: the campaign entry's
``gateway`` becomes the target's first layer, and the target decides as the simulator's gateway
store does, judged on the times the target recorded (tests/recorded.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest
import yaml

from analysis.adaptive import one_row_per_request
from contract.schema import GATEWAY_LIMIT
from harness.campaign.config_file import GUARDED_LIMIT
from harness.campaign.live import load_campaign
from harness.live.config import target_config
from harness.live.plan import plan_runs
from harness.live.runner import planned_record
from harness.processes.target import start_target
from harness.sim.runner import SimRun
from targets.algorithms import get_algorithm
from targets.stores.memory import MemoryStore
from tests.recorded import in_time_order

pytestmark = pytest.mark.process  # every test here starts processes

SERVICE_MS = 4000
"""Nothing is answered before the schedule ends, even with its second wave late on a busy machine
(checked on the recorded times): the rule's in flight is every request it admitted."""
SCHEDULE = [(0.0, 10), (0.3, 3)]
"""(offset s, requests at once): the bucket (10/s, burst 4) takes 4 of the first 10; 0.3 s later
its 3 tokens meet a rule full at 5 (AIMD, limit 5): one admitted, two refused by the rule."""


def _config(tmp_path: Path) -> tuple[dict, SimRun]:
    """The target config a campaign entry with a gateway gets, and the simulator's run of it."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": "gw", "policy": {"limit": 1000, "window_s": 1, "burst": 5}, "algorithms": ["adaptive"],
        "scenarios": [{"name": "steady", "gateway": {"rate": 10, "burst": 4},
                       "algorithm_params": {"adaptive": {"rule": "aimd"}}}]}))
    [run] = plan_runs(load_campaign(path))
    config = target_config(run, load_campaign(path), time.time(), tmp_path)
    config["downstream"] = {"concurrency": 32, "service_time": {"median_ms": SERVICE_MS, "sigma": 0}}
    config["decision_log"] = {"path": str(tmp_path / "decisions.parquet")}
    sim = SimRun("steady", "adaptive", run.model, run.params, run.policy, gateway=run.scenario.gateway)
    assert planned_record(run, 1).to_json()["gateway"] == {"rate": 10, "burst": 4}  # run.json says so from the start
    return config, sim


async def _send(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=16)) as client:
        start = time.monotonic()
        waves = []
        for at, n in SCHEDULE:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            waves.append(asyncio.gather(*(client.get("/api/items") for _ in range(n))))
        await asyncio.gather(*waves)


def test_live_gateway_decides_as_virtual_on_recorded_times(tmp_path):
    config, sim = _config(tmp_path)
    assert [lim["name"] for lim in config["limits"]] == [GATEWAY_LIMIT, GUARDED_LIMIT]
    (tmp_path / "target.yaml").write_text(yaml.safe_dump(config))
    target = start_target(["--config", str(tmp_path / "target.yaml")], log_dir=tmp_path / "logs")
    try:
        asyncio.run(_send(target.url))
    finally:
        target.stop()
    live, _ = one_row_per_request(in_time_order(pd.read_parquet(tmp_path / "decisions.parquet")))
    assert len(live) == sum(n for _, n in SCHEDULE)
    assert live["t"].max() - live["t"].min() < SERVICE_MS / 1000  # no slot given back while deciding
    store = sim.gateway_store().over(MemoryStore(get_algorithm("adaptive"), sim.params))
    virtual = [store.decide("global", t)[0] for t in live["t"]]
    assert live["allowed"].tolist() == virtual
    assert live["limit_name"].astype(str).tolist() == store.limit_names()


def test_the_schedule_by_hand_on_its_planned_times(tmp_path):
    # 4 of the first 10 pass the bucket (burst 4), 6 are refused by it; 0.3 s later 3 tokens meet
    # the rule with 4 in flight: 1 admitted (5 = its limit), then 2 refused by the rule
    _, sim = _config(tmp_path)
    store = sim.gateway_store().over(MemoryStore(get_algorithm("adaptive"), sim.params))
    planned = [at + i / 1000 for at, n in SCHEDULE for i in range(n)]
    assert [store.decide("global", t)[0] for t in planned] == [True] * 4 + [False] * 6 + [True, False, False]
    assert store.limit_names() == [GUARDED_LIMIT] * 4 + [GATEWAY_LIMIT] * 6 + [GUARDED_LIMIT] * 3
