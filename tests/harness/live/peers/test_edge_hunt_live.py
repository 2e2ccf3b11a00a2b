"""The edge hunt against a limiter the suite did not write: slowapi's fixed window (limits' window,
opened by each key's first request) as a url peer, judged client-side. The clock's boundary burst
meets that window mid-way and is held to L; the hunt's bursts at the key's own edge get 2L - 1
through, and the campaign's worst-case answer names that run. Judged on slowapi's own times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from analysis.answers import answers
from analysis.metrics import over_admission
from contract.schema import CLIENT_FILE, ROLE_PLAN
from harness.live.peers import live_peer
from harness.live.peers.standalone import peer_before_none
from targets.algorithms import Policy
from tests.recorded import peer_model_agrees

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[4]
POLICY = Policy(10, 1)
CAMPAIGN = {
    "name": "hunt", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["sliding_log"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.4}},
                  {"name": "edge_hunt", "params": {"rounds": 1, "delta_s": 0.4}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0}, "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}


def test_the_hunt_finds_the_edge_of_a_window_opened_by_each_keys_first_request(tmp_path):
    path, out = tmp_path / "hunt.yaml", tmp_path / "res"
    with peer_before_none("slowapi-fixed-window", POLICY, tmp_path / "endpoint") as (url, logs):
        peers = [{"name": "gw", "url": url, "claims": {"algorithm": "limits_fixed_window"}}]
        path.write_text(yaml.safe_dump({**CAMPAIGN, "peers": peers}))
        proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts"], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    own = live_peer("slowapi-fixed-window").decisions(logs, store="memory").to_pandas()
    peer_model_agrees("slowapi-fixed-window", POLICY, own)  # limits' first-hit window on its own times
    # the endpoint keeps its limiter's state between runs: each run's API keys after a prefix of its own
    prefix = own["key"].str.extract(r"^(b\d+)-(.*)$")
    assert set(prefix[0].dropna()) == {"b1", "b2"}  # the boundary burst's run, then the hunt's
    assert set(prefix.loc[prefix[1] == "attacker", 0]) == {"b1"} and set(prefix.loc[prefix[1] == "hunt-first-0", 0]) == {"b2"}
    own = own.assign(key=prefix[1].fillna(own["key"]))

    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    # the claimed model on the planned times: exact (virtual time)
    assert rows["boundary_burst__gw~twin"]["over_admission"] == pytest.approx(1.0)
    assert rows["edge_hunt__gw~twin"]["over_admission"] == pytest.approx(1.9)

    hunt = own[own["key"].isin(["hunt-first-0", "hunt-clock-0"])]
    first = hunt[hunt["key"] == "hunt-first-0"].sort_values("t")
    before_edge = int((first["t"].iloc[1:] < first["t"].iloc[0] + POLICY.window_s).sum())
    if before_edge == POLICY.limit - 1:  # on slowapi's times, the 9 aimed before the key's edge fell before it
        assert over_admission(hunt, POLICY.limit, POLICY.window_s) == pytest.approx(1.9)
        assert rows["edge_hunt__gw"]["over_admission"] == pytest.approx(1.9)
        answer = {a.key: a for a in answers(list(rows.values()))}["over_admission"].sentence
        assert "edge_hunt__gw" in answer, answer  # the campaign's most, after the window-edge question's own figures
        assert answer in " ".join((out / "report.md").read_text().split())
    # the endpoint keeps its limiter's state between runs: each run's clients send from addresses of their own
    sent_from = [set(pq.read_table(out / "runs" / run / CLIENT_FILE, columns=["client_address"],
                                   filters=[("role", "==", ROLE_PLAN)]).column("client_address").to_pylist())
                 for run in ("boundary_burst__gw", "edge_hunt__gw")]
    assert all(sent_from) and not sent_from[0] & sent_from[1]
    # the clock's burst: one window, opened by its first request, holds both halves to L
    assert over_admission(own[own["key"] == "attacker"], POLICY.limit, POLICY.window_s) == pytest.approx(1.0)
