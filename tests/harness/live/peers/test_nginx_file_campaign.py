"""A campaign's ``{name: nginx, config: FILE}`` peer: the user's own nginx.conf (its limit lines as
written, its upstream replaced by the suite's downstream) run by a real nginx under a scenario,
replayed at the file's limit and judged by it with the same metrics as every run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from harness.cli.main import main
from targets.algorithms import Policy
from tests.harness.campaign.test_config_peers import USER_NGINX
from tests.harness.live.peers.test_nginx import needs_nginx
from tests.recorded import peer_model_agrees


def own_file_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], peer: str, file: str, text: str, policy: dict,
                 algorithm: str) -> tuple[Path, Path, dict]:
    """A boundary burst at the file's limit, the user's file beside ``algorithm`` on the same
    traffic: (the results folder, the peer's run folder, its run.json)."""
    (tmp_path / file).write_text(text)
    campaign = {"name": "own-file", "policy": policy, "algorithms": [algorithm],
                "peers": [{"name": peer, "config": file}],  # relative to the campaign file
                "scenarios": [{"name": "boundary_burst", "params": {"instant": True, "boundaries": 1, "delta_s": 0.33}}],
                "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 0.5}, "downstream": {"concurrency": 8, "median_ms": 5}}
    path, out = tmp_path / "campaign.yaml", tmp_path / "res"
    path.write_text(yaml.safe_dump(campaign))
    assert main(["run", str(path), "--out", str(out), "--no-charts"]) == 0, capsys.readouterr()
    run = out / "runs" / f"boundary_burst__{peer}"
    return out, run, json.loads((run / "run.json").read_text())


@needs_nginx
@pytest.mark.process
def test_a_campaign_runs_the_users_nginx_file_judged_by_its_own_limit(tmp_path, capsys):
    out, run, info = own_file_run(tmp_path, capsys, "nginx", "nginx.conf", USER_NGINX,
                                  {"limit": 10, "window_s": 1, "burst": 6}, "token_bucket")
    assert (info["status"], info["algorithm"], info["system"], info["store"]) == ("ok", "nginx", "nginx", "zone")
    # the file's limit (the campaign's is set to it): rate=10r/s burst=5 is 10 per second, burst 6
    assert info["policy"] == {"limit": 10, "window_s": 1.0, "burst": 6}
    assert info["peer_config"] == {"path": str(tmp_path / "nginx.conf"), "peer": "nginx", "limit_name": "api", "line": 6,
                                   "limit": 10, "window_s": 1.0, "burst": 6}
    conf = (run / "nginx.conf").read_text()
    assert "zone=api:10m rate=10r/s" in conf and "limit_req zone=api burst=5 nodelay;" in conf and "backend" not in conf
    # boundary_burst at the file's limit: 10 at once, 10 more 0.33 s later; NGINX admits 6 (burst=5
    # past the first), then 3 (3.3 requests' worth back): 9 of 20 on the plan's times
    decisions = pq.read_table(run / "decisions.parquet").to_pandas()
    assert len(decisions) == info["planned_requests"] == 20
    peer_model_agrees("nginx", Policy(10, 1, 6), decisions)  # exact, on NGINX's own decision times
    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    assert rows["boundary_burst__token_bucket__memory"]["system"] == "suite"  # beside it, on the same traffic
    row = rows["boundary_burst__nginx"]
    admitted = row["requests"] - row["rejected"]
    assert admitted == int(decisions["allowed"].sum())
    assert admitted in (9, 10), admitted  # 10 only if the second half came 70 ms late (4 requests' worth back)
