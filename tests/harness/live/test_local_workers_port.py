"""A run's local Locust workers meet their own master: on a port of the run's own, not Locust's
default 5557, which another campaign on the machine (or anything else) may hold. Held here, a run
of two workers failed before: its master was refused the port and its workers knocked on the
holder's; with two campaigns at once, the second's workers joined the first's master, which then
failed its run for workers it "lost" (CI)."""

from __future__ import annotations

import socket

import pytest
import yaml

from harness.campaign.live import load_campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

pytestmark = pytest.mark.process  # every test here starts processes

LOCUST_DEFAULT_PORT = 5557
CAMPAIGN = {
    "name": "own-port", "seed": 1, "policy": {"limit": 50, "window_s": 1}, "algorithms": ["token_bucket"],
    "scenarios": [{"name": "steady", "params": {"clients": 4, "load": 0.5, "duration_s": 2}}],
    "scale": {"workers": 2, "lead_s": 2.0, "drain_s": 0.5}, "downstream": {"concurrency": 8, "median_ms": 1, "sigma": 0.1},
}


def test_two_local_workers_keep_their_run_while_another_process_holds_locusts_default_port(tmp_path):
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("0.0.0.0", LOCUST_DEFAULT_PORT))
    except OSError:
        pytest.skip(f"port {LOCUST_DEFAULT_PORT} is held already (by another test's master before the fix, or this machine)")
    holder.listen()
    try:
        path = tmp_path / "campaign.yaml"
        path.write_text(yaml.safe_dump(CAMPAIGN))
        campaign = load_campaign(path)
        [info] = LiveRunner(campaign, tmp_path / "res").run_all(plan_runs(campaign))
    finally:
        holder.close()
    assert info["status"] == "ok", info.get("error")
    assert info["planned_requests"] > 0 and info["planned_sent"] == info["planned_requests"]
