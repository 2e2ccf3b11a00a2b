"""`run_bench.py validate --live`: the policy replayed over HTTP by the campaign runner. The good
policy passes with its live checks computed, a bad one fails a live check with a measured
message, thresholds from the file apply live, JUnit lists the live testcases, Ctrl-C exits 130
leaving nothing running. P99 and CPU thresholds here are generous on purpose: the tests assert
that the checks exist and are computed, never this machine's speed."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from contract.stores import StoreChoice
from harness.campaign.policy_file import load_policy
from harness.cli.main import main
from harness.validate.probes import REDIS_TIMEOUT_S, plan_live
from tests.poll import until

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[3]
POLICIES = ROOT / "campaigns" / "policies"
GENEROUS = ["live_p99_ms < 600000", "live_cpu_ms_per_1k < 1000000000"]


def policy_copy(tmp: Path, name: str, thresholds: list[str]) -> Path:
    raw = yaml.safe_load((POLICIES / name).read_text(encoding="utf-8"))
    raw["thresholds"] = [*raw.get("thresholds", []), *thresholds]
    path = tmp / name
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def validate_live(*args: str) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "run_bench.py", "validate", *args, "--live", "--json", "-"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def live_checks(doc: dict) -> dict[str, dict]:
    return {c["name"]: c for c in doc["checks"] if c["kind"] == "live"}


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> tuple[int, dict, str, Path, Path]:
    tmp = tmp_path_factory.mktemp("good")
    path = policy_copy(tmp, "good.yaml", [*GENEROUS, "api.live_over_admission <= 1.5"])
    junit, out = tmp / "validate.xml", tmp / "live"
    return (*validate_live(str(path), "--junit", str(junit), "--out", str(out)), junit, out)


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> tuple[int, dict, str]:
    tmp = tmp_path_factory.mktemp("bad")
    return validate_live(str(policy_copy(tmp, "bad-burst-below-page-load.yaml", GENEROUS)))


def test_good_policy_passes_live_with_every_live_check_computed(good):
    code, doc, err, _, out = good
    assert code == 0 and doc["passed"], [c for c in doc["checks"] if not c["passed"]]
    live = live_checks(doc)
    assert set(live) == {"live: legit_rejection_rate", "live: p99_ms", "live: cpu_ms_per_1k", "live: api: over_admission"}
    assert all(c["value"] is not None and c["passed"] for c in live.values())
    assert live["live: legit_rejection_rate"]["value"] == 0.0
    assert "simulated: api 0.0%" in live["live: legit_rejection_rate"]["message"]
    assert doc["live"]["results"] == str(out)
    assert (out / "report.html").is_file() and (out / "summary.json").is_file()
    for run in (out / "runs").iterdir():  # decided by the store under test, never its fallback: Redis stays up live
        sources = pd.read_parquet(run / "decisions.parquet", columns=["source"])["source"].value_counts().to_dict()
        assert set(sources) == {"redis"}, (run.name, sources)
    assert any("login-ip, login-account" in n for n in doc["live"]["notes"])
    assert "live 1/2 page-loads" in err and "live 2/2 burst-api" in err


def test_thresholds_from_the_file_apply_live(good, bad):
    live = live_checks(good[1])
    assert live["live: p99_ms"]["threshold"] == "live_p99_ms < 600000"
    assert live["live: cpu_ms_per_1k"]["threshold"] == "live_cpu_ms_per_1k < 1e+09"
    assert live["live: api: over_admission"]["threshold"] == "api.live_over_admission <= 1.5"
    # without a live threshold of its own, the live twin takes the simulated metric's (the default here)
    assert live_checks(bad[1])["live: legit_rejection_rate"]["threshold"] == "live_legit_rejection_rate < 0.001"


def test_junit_lists_the_live_testcases(good):
    cases = ET.parse(good[3]).getroot().iter("testcase")
    live = {c.get("name") for c in cases if c.get("classname") == "validate.shop-api.live"}
    assert live == set(live_checks(good[1]))


def test_bad_policy_fails_its_live_legit_rejection_rate_with_the_measured_fix(bad):
    code, doc, _ = bad
    assert code == 1
    check = live_checks(doc)["live: legit_rejection_rate"]
    assert not check["passed"] and check["value"] > 0.1  # 3 of a page's 8 calls find the bucket of 5 empty
    assert "of legitimate requests saw a 429 live" in check["message"] and "rejected by 'api'" in check["message"]
    assert "simulated: api 37.5%" in check["message"]
    assert "burst >= 8 gives 0.0%" in check["suggestion"]
    assert doc["live"]["results"] is None  # a temp dir, gone


def test_out_needs_live(tmp_path, capsys):
    assert main(["validate", str(POLICIES / "good.yaml"), "--out", str(tmp_path / "x")]) == 2
    assert "--out: only with --live" in capsys.readouterr().err


def test_plan_replays_the_policy_as_deployed():
    good = plan_live(load_policy(POLICIES / "good.yaml"))
    assert [p.run.name for p in good.probes] == ["page_load_burst__gcra__redis-shared",
                                                 "boundary_burst-api__gcra__redis-shared"]
    burst = good.probes[1]
    assert good.campaign is not None and good.campaign.redis.timeout_s == REDIS_TIMEOUT_S >= 1.0  # no busy-machine outage
    assert burst.run.policy.window_s == 2.0 and burst.burst_size == 100  # 600/min: cost 6 a request
    proxy = plan_live(load_policy(POLICIES / "bad-ip-behind-proxy.yaml"))
    page, nat = proxy.probes[0].run.scenario, proxy.probes[1].run.scenario
    assert page.target["limits"][0]["scope"] == "ip"  # no trusted hop count: every client is the proxy
    assert nat.run_name == "page_load_burst-nat" and nat.params["users"] == 5
    assert plan_live(load_policy(POLICIES / "bad-local-not-divided.yaml")).probes[0].run.suite.store == StoreChoice("redis", "local")


def _is_target(process: psutil.Process) -> bool:
    try:
        return "targets" in " ".join(process.cmdline())
    except psutil.Error:
        return False


def test_interrupt_exits_130_and_leaves_nothing_running(tmp_path):
    path = policy_copy(tmp_path, "bad-burst-below-page-load.yaml", GENEROUS)
    proc = subprocess.Popen([sys.executable, "run_bench.py", "validate", str(path), "--live"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[psutil.Process] = set()

    def started() -> bool:
        with contextlib.suppress(psutil.Error):
            seen.update(psutil.Process(proc.pid).children(recursive=True))
        return any(_is_target(p) for p in seen) or proc.poll() is not None

    until(started, 60, every_s=0.2)
    assert seen, "validate --live started no child"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130
    alive = [p.pid for p in seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"left behind: {alive}"
