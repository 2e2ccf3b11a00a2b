"""A gateway's token bucket in front of an adaptive limiter in virtual time: decided as the live
target's layered check decides (the bucket first, both committed only when both admit), each
refusal recorded under the layer that made it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from contract.schema import GATEWAY_LIMIT
from harness.campaign.config_file import GUARDED_LIMIT
from harness.cli.main import main
from harness.sim.gateway_store import Gateway
from targets.algorithms import Policy, build_params, get_algorithm
from targets.stores.memory import MemoryStore

KEY = "global"


def gateway(rate: float, burst: float) -> Gateway:
    return Gateway(build_params("token_bucket", Policy(rate, 1, burst)), (GATEWAY_LIMIT, GUARDED_LIMIT))


def test_the_bucket_refuses_a_burst_before_the_rule_sees_it():
    # bucket 10/s, burst 4, in front of AIMD at a limit of 5 (its ceiling: a fast sample cannot raise it)
    store = gateway(10, 4).over(
        MemoryStore(get_algorithm("adaptive"), build_params("adaptive", Policy(1000, 1, 5), {"rule": "aimd"})))
    # t=0: ten at once; the bucket holds 4, so 6 are refused at the gateway, and the rule has seen
    # (and holds in flight) only the 4 that were left
    assert [store.decide(KEY, 0.0)[0] for _ in range(10)] == [True] * 4 + [False] * 6
    assert store.state(KEY)[:2] == (5, 4.0)
    # t=0.1: one token back (10/s x 0.1 s): admitted, 5 in flight = the rule's limit
    assert store.decide(KEY, 0.1)[0] and store.state(KEY)[1] == 5.0
    # t=0.2: a token, but the rule is full: refused by the rule, the token is not spent
    assert not store.decide(KEY, 0.2)[0]
    # t=0.25: one request answers in 0.1 s (fast: AIMD stays at its ceiling 5), 4 in flight
    assert store.finish(KEY, 0.25, 1.0, 0.1)[:2] == (5, 4.0)
    # t=0.3: 2 tokens (the one kept at 0.2, one more): the first is admitted, then the rule is full
    assert [store.decide(KEY, 0.3)[0] for _ in range(3)] == [True, False, False]
    assert store.front.state(KEY)[0] / 1e5 == 1.0  # one token left (token_bucket keeps 1e5 units a token)
    names = [GUARDED_LIMIT] * 4 + [GATEWAY_LIMIT] * 6 + [GUARDED_LIMIT] * 5
    assert store.limit_names() == names


def _campaign(tmp_path, gateway: dict | None, capsys) -> tuple[pd.DataFrame, str]:
    """One overload run of Vegas (with ``gateway`` in front): its decision log and the terminal."""
    entry = {"name": "downstream_breaks", "label": "overload", "algorithm_params": {"adaptive": {"rule": "vegas"}},
             "params": {"kind": "overload", "break_at_s": 1, "recover_at_s": 2, "duration_s": 3}}
    if gateway is not None:
        entry["gateway"] = gateway
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "gw", "policy": {"limit": 1000, "window_s": 1, "burst": 16},
                                    "algorithms": ["adaptive"], "downstream": {"concurrency": 8, "median_ms": 20, "sigma": 0.3},
                                    "scenarios": [entry]}))
    out = tmp_path / ("gw" if gateway else "alone")
    capsys.readouterr()
    assert main(["simulate", "--campaign", str(path), "--out", str(out), "--no-charts"]) == 0
    log = pd.read_parquet(out / "runs" / "downstream_breaks-overload__adaptive__memory" / "decisions.parquet")
    return log, capsys.readouterr().out


def test_a_campaign_gateway_caps_the_admitted_rate_and_logs_who_refused(tmp_path, capsys):
    alone, _ = _campaign(tmp_path, None, capsys)
    gated, terminal = _campaign(tmp_path, {"rate": 200, "burst": 8}, capsys)
    assert set(alone["limit_name"]) == {"default"}
    by = gated[~gated["allowed"]].groupby("limit_name").size()
    assert by[GATEWAY_LIMIT] > 0 and set(by.index) <= {GATEWAY_LIMIT, GUARDED_LIMIT}
    assert (gated.loc[gated["allowed"], "limit_name"] == GUARDED_LIMIT).all()
    # the bucket's bound: at most burst + rate x d admitted in any interval of length d (d = 1 s)
    t = np.sort(gated.loc[gated["allowed"], "t"].to_numpy())
    assert (np.searchsorted(t, t + 1.0, side="left") - np.arange(len(t))).max() <= 8 + 200
    # requests the gateway refused never reached the rule: it admitted fewer than the rule alone
    assert gated["allowed"].sum() < alone["allowed"].sum()
    # the terminal's head to head names the rule with its bucket and counts the bucket's refusals
    # (goodput, P99, legit rejected %, then the bucket's refusals)
    line = next(x for x in terminal.splitlines() if x.strip().startswith("vegas + bucket 200/s, burst 8"))
    assert line.split("burst 8")[1].split()[3] == f"{by[GATEWAY_LIMIT]:,}"
