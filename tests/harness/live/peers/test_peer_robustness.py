"""Whatever a peer does, the campaign holds: a peer that does not start fails its run with its
log's tail and the next run goes on; Ctrl-C leaves no process of any peer behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import psutil
import pytest
import yaml

from harness.campaign.peers import PeerError
from harness.live.peers import LIVE_PEERS

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[4]
CI = os.environ.get("CI", "").lower() == "true"
ONE_PER_SYSTEM = sorted({p.spec.system: name for name, p in reversed(LIVE_PEERS.items())}.values())
"""The first peer of each system (its variants start the same binary)."""
CAMPAIGN = {
    "name": "robust", "policy": {"limit": 20, "window_s": 1}, "algorithms": ["token_bucket"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.33}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0}, "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}


def _installed(name: str) -> None:
    try:
        LIVE_PEERS[name].spec.executable()  # on PATH, or in its wheel
    except PeerError as exc:
        if not CI:
            pytest.skip(f"{exc} (CI never skips this)")


def _ours(out: Path) -> list[psutil.Process]:
    """Every process whose command line names the results folder (peers, downstreams, Locust)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        with suppress(psutil.Error):
            if str(out) in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
                found.append(p)
    return found


def _alive(family: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_a_peer_that_does_not_start_fails_its_run_with_the_log_tail_and_the_next_run_goes_on(tmp_path):
    _installed("nginx")
    real = shutil.which("nginx") or "nginx"
    fake = tmp_path / "bin" / "nginx"
    fake.parent.mkdir()
    # the first start fails as a bad config does; every later one is the real nginx
    fake.write_text(f'#!/bin/sh\nif [ ! -e "{tmp_path}/failed" ]; then touch "{tmp_path}/failed"\n'
                    'echo "nginx: [emerg] unknown directive \\"limit_reqq\\" in nginx.conf:14" >&2; exit 1; fi\n'
                    f'exec {real} "$@"\n')
    fake.chmod(0o755)
    path, out = tmp_path / "c.yaml", tmp_path / "res"
    path.write_text(yaml.safe_dump({**CAMPAIGN, "peers": ["nginx", "nginx-problem"]}))
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts", "--only", "nginx",
                           "--only", "nginx-problem"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    failed = json.loads((out / "runs" / "boundary_burst__nginx" / "run.json").read_text())
    ok = json.loads((out / "runs" / "boundary_burst__nginx-problem" / "run.json").read_text())
    assert failed["status"] == "failed" and failed["error"].startswith("nginx did not start")
    assert 'unknown directive "limit_reqq"' in failed["error"]
    assert (ok["status"], ok["response"]["findings"]) == ("ok", [])
    assert "1 failed" in proc.stdout
    assert not _alive(_ours(out))


@pytest.mark.parametrize("name", ONE_PER_SYSTEM)
def test_ctrl_c_during_a_peer_run_leaves_no_process_behind(tmp_path, name):
    _installed(name)
    path, out = tmp_path / "peer.yaml", tmp_path / "res"
    # bursts at 15 edges, 30 s: a busy machine's late signal still finds the run going
    burst = {"name": "boundary_burst", "params": {"instant": 1, "boundaries": 15, "delta_s": 0.33}}
    path.write_text(yaml.safe_dump({**CAMPAIGN, "scenarios": [burst], "peers": [name]}))
    proc = subprocess.Popen([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts", "--only", name],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_json = out / "runs" / f"boundary_burst__{name}" / "logs"
    deadline, family = time.monotonic() + 90, []
    binary = LIVE_PEERS[name].spec.binary
    while time.monotonic() < deadline:  # the peer is up (its binary, or any child beside Locust and the downstream)
        family = [p for p in _ours(out) if p.pid != proc.pid]
        with suppress(psutil.Error):
            if run_json.exists() and any(binary is None or p.name() == binary for p in family) and len(family) >= 3:
                break
        time.sleep(0.1)
    assert family
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130
    assert not _alive(family) and not _alive(_ours(out))
    assert json.loads((out / "runs" / f"boundary_burst__{name}" / "run.json").read_text())["status"] == "interrupted"


@pytest.mark.parametrize("name", [n for n in ONE_PER_SYSTEM if LIVE_PEERS[n].spec.binary and not LIVE_PEERS[n].spec.wheel])
def test_a_missing_peer_binary_exits_2_before_anything_starts(refused_run, monkeypatch, name):
    binary = LIVE_PEERS[name].spec.binary
    monkeypatch.setenv("PATH", "")
    err = refused_run({**CAMPAIGN, "peers": [name]})
    assert f"peer {name}: the {binary} binary was not found on PATH (install Debian's {binary} package)" in err
