"""`run_bench.py run`: the smoke campaign end to end against real targets and Locust, the
physics it must show, interruption, and bad campaign files."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from analysis.answers import answers
from contract.schema import CLIENT_SCHEMA, DECISION_SCHEMA
from harness.campaign.live import load_campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.sim.simulator import simulate
from targets.algorithms import build_params
from tests.analysis.render import fits_the_page
from tests.poll import until
from tests.recorded import suite_model_agrees

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[3]
SMOKE = ROOT / "campaigns" / "smoke.yaml"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    # started outside the repository with a relative --out, as a user in their own folder: the
    # targets start in the repository's root and must still find the run folder
    out = tmp_path_factory.mktemp("smoke") / "res"
    proc = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "run", str(SMOKE), "--out", "res"], cwd=out.parent,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (out.parent / "stdout.txt").write_text(proc.stdout)
    return out


def run_dir(root: Path, scenario: str, algorithm: str) -> Path:
    return root / "runs" / f"{scenario}__{algorithm}__memory"


def test_smoke_writes_the_whole_results_layout(smoke):
    assert (smoke / "campaign.yaml").is_file()
    rows = json.loads((smoke / "summary.json").read_text())["runs"]
    assert len(rows) == 5 == len(list((smoke / "runs").iterdir()))
    assert (smoke / "summary.csv").read_text().count("\n") == 6
    for path in (smoke / "runs").iterdir():
        info = json.loads((path / "run.json").read_text())
        assert info["status"] == "ok", info.get("error")
        assert pd.read_parquet(path / "decisions.parquet").columns.tolist() == DECISION_SCHEMA.names
        client = pd.read_parquet(path / "client.parquet")
        assert client.columns.tolist() == CLIENT_SCHEMA.names
        plan = client[client["role"] == "plan"]
        assert len(plan) == info["planned_requests"] == info["sent"]
        assert info["own_requests"] == client.loc[client["role"] != "plan", "role"].value_counts().to_dict()
        assert (path / "cpu.csv").read_text().startswith("t,process,role,cpu_percent,rss_bytes")
        assert (path / "locust" / "stats_stats.csv").is_file()
        assert (path / "target.yaml").is_file() and (path / "plan.json").is_file()
    assert (smoke / "report.html").is_file() and (smoke / "report.md").is_file()
    assert list((smoke / "charts").glob("*.png"))
    assert not list(smoke.rglob("*.tmp"))


def test_smoke_answers_first_in_the_terminal_and_a_report_that_fits_1400_px(smoke, tmp_path):
    rows = json.loads((smoke / "summary.json").read_text())["runs"]
    found = answers(rows)
    assert [a.key for a in found] == ["over_admission", "legit_rejections", "bounded_p99", "cpu"]
    stdout = " ".join((smoke.parent / "stdout.txt").read_text().split())  # rich wraps long lines
    head = stdout[:stdout.index("live campaign summary")]  # the answers first, then the table
    assert all(" ".join(a.line().split()) in head for a in found)
    assert "skipped" not in stdout
    html = (smoke / "report.html").read_text()
    assert "retry_storm" not in html and "skipped" not in html
    fits_the_page(smoke / "report.html", len(list((smoke / "charts").glob("*.png"))), tmp_path)


def test_every_answer_keeps_its_limit_fields_and_the_summary_checks_their_promises(smoke):
    """The suite's targets send their limit fields on every answer; the client log keeps them, open
    loop (the raw replay engine) and closed loop (page loads) alike, and every row checks them."""
    rows = {r["run"]: r for r in json.loads((smoke / "summary.json").read_text())["runs"]}
    for path in (smoke / "runs").iterdir():
        client = pd.read_parquet(path / "client.parquet", filters=[("role", "==", "plan")])  # not the warm-up's
        answered = client[client["status"].isin([200, 429])]
        assert len(answered) and answered["limit_fields"].str.contains("ratelimit: ").all(), path.name
        assert rows[path.name]["limit_fields_form"] == "ietf-list"
    loads = rows["page_load_burst__sliding_log__memory"]  # refusals, and pages apart: promises to check
    assert loads["remaining_checked"] > 0 and loads["remaining_kept"] == loads["remaining_checked"]


def test_piped_progress_is_one_line_per_run(smoke):
    lines = (smoke.parent / "stdout.txt").read_text().splitlines()
    runs = [line.split("  ")[:2] for line in lines if line.startswith("run ")]
    # a run past PLAIN_EVERY_S (a busy machine) also prints its figures so far, headed by its seconds
    during = [(head.split()[1], so_far) for head, so_far in runs if re.fullmatch(r"\d+ s", so_far)]
    ended = [(head, status) for head, status in runs if not re.fullmatch(r"\d+ s", status)]
    assert [(head.split()[1], status) for head, status in ended] == [(f"{i}/5", "ok") for i in range(1, 6)]
    assert sorted(head.split()[2] for head, _ in ended) == sorted(p.name for p in (smoke / "runs").iterdir())
    assert len(during) + len(ended) == len(runs) and {n for n, _ in during} <= {f"{i}/5" for i in range(1, 6)}
    assert not [line for line in lines if "req/s" in line or "waiting" in line]


def test_every_request_is_logged_on_both_sides(smoke):
    path = run_dir(smoke, "page_load_burst", "token_bucket")
    decisions = pd.read_parquet(path / "decisions.parquet")
    logged = pd.read_parquet(path / "client.parquet")
    client, own = logged[logged["role"] == "plan"], logged[logged["role"] != "plan"]
    assert set(client["request_id"]) == set(decisions["request_id"])
    assert set(client["status"]) <= {200, 429}
    # the warm-up asked whether the target was up: logged, from its own address, decided by no limit
    assert set(own["role"]) == {"warm-up"} and set(own["client_address"]) == {"127.0.0.2"}
    assert not set(own["request_id"]) & set(decisions["request_id"])


def test_boundary_burst_live_is_its_model_on_its_own_times_and_2x_in_virtual_time(smoke):
    path = run_dir(smoke, "boundary_burst", "fixed_window")
    info = json.loads((path / "run.json").read_text())
    # the physics where the sends are exact: 20 just before a boundary, 20 just after, 2x
    assert info["virtual_over_admission"] == 2.0
    # live, the target's decisions are the fixed window's on the times the target recorded
    suite_model_agrees(path)
    assert info["burst_size"] == 20 and info["burst_spread_ms"]["max"] > 0


def test_page_loads_hurt_a_strict_limit_more_than_a_bucket(smoke):
    """Live, each limiter decided as its model on its own times; the comparison itself in virtual
    time (the same model and seed), where no busy moment stretches a page load."""
    for algorithm in ("token_bucket", "sliding_log"):
        suite_model_agrees(run_dir(smoke, "page_load_burst", algorithm))
    campaign = load_campaign(SMOKE)
    entry = next(e for e in campaign.scenarios if e.name == "page_load_burst")
    policy, model = campaign.policy_for(entry), campaign.model_for(entry)
    legit = {}
    for algorithm in ("token_bucket", "sliding_log"):
        table, _ = simulate(model, algorithm, policy, build_params(algorithm, policy))
        df = table.to_pandas()
        legit[algorithm] = int(((df["client_class"] == "legit") & ~df["allowed"]).sum())
    assert legit["sliding_log"] > legit["token_bucket"]


def test_adaptive_lowers_its_limit_when_the_downstream_degrades(smoke):
    """What the limiter decided, from its own records; that this keeps P99 below the fixed window's
    is a measurement (the default campaign's answer, ``run_bench.py bench twin``), not a test."""
    path = run_dir(smoke, "unhealthy_downstream", "adaptive")
    info = json.loads((path / "run.json").read_text())
    decisions = pd.read_parquet(path / "decisions.parquet").sort_values("t")
    [degraded] = info["phases"]
    before = decisions.loc[decisions["t"] < degraded["start_t"], "adaptive_limit"]
    during = decisions.loc[decisions["t"].between(degraded["start_t"], degraded["end_t"]), "adaptive_limit"]
    assert during.min() < before.iloc[-1]
    assert decisions["adaptive_limit"].notna().all()  # every row, admitted or refused, carries its limit
    for run_dir_ in (smoke / "runs").glob("unhealthy_downstream__*"):  # the degraded phase is recorded
        info = json.loads((run_dir_ / "run.json").read_text())
        assert [p["name"] for p in info["phases"]] == ["degraded"]
        assert info["phases"][0]["end_t"] > info["phases"][0]["start_t"] > info["start_at"]


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _is_target(p: psutil.Process) -> bool:
    try:
        return "targets" in " ".join(p.cmdline())
    except psutil.Error:  # it exited meanwhile
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_every_child_and_keeps_finished_runs(tmp_path, sig):
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "run_bench.py", "run", str(SMOKE), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = out / "runs" / "boundary_burst__fixed_window__memory" / "run.json"
    second = out / "runs" / "page_load_burst__token_bucket__memory"
    seen: dict[int, psutil.Process] = {}

    def second_planned() -> bool:
        seen.update((p.pid, p) for p in _children(proc.pid))
        return first.exists() and (second / "plan.json").exists()

    until(second_planned, 90)

    def inside_the_second_run() -> list[psutil.Process]:
        found = _children(proc.pid)
        return found if any(_is_target(p) for p in found) else []

    children = until(inside_the_second_run, 60)
    assert any(_is_target(p) for p in children)
    seen.update((p.pid, p) for p in children)
    proc.send_signal(sig)
    assert proc.wait(60) == 130
    # is_running() also compares the start time, so a PID reused by another process is not ours
    alive = [f"{p.pid} {p.cmdline()}" for p in seen.values()
             if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"left behind: {alive}"
    assert json.loads(first.read_text())["status"] == "ok"
    assert json.loads((second / "run.json").read_text())["status"] == "interrupted"
    assert (out / "summary.json").is_file()


def test_the_campaign_goes_on_after_a_failed_run(tmp_path, monkeypatch):
    import harness.live.sides.suite as live  # the suite's side writes its nodes' config

    real = live.target_config

    def broken_boundary(run, campaign, start_at, path):
        config = real(run, campaign, start_at, path)
        return {**config, "algorithm": "bogus"} if run.scenario.name == "boundary_burst" else config

    monkeypatch.setattr(live, "target_config", broken_boundary)
    campaign = load_campaign(SMOKE)
    infos = LiveRunner(campaign, tmp_path / "res").run_all(plan_runs(campaign, ["boundary_burst", "token_bucket"]))
    assert [i["status"] for i in infos] == ["failed", "ok"]
    assert "target did not start" in infos[0]["error"] and "bogus" in infos[0]["error"]
    assert (tmp_path / "res" / "runs" / "boundary_burst__fixed_window__memory" / "logs").is_dir()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "colour: unknown field; valid: name, description, seed, repeats, policy, algorithms, params, stores"),
        ({"policy": {"limit": "lots", "window_s": 1}}, "policy.limit: Input should be a valid number"),
        ({"nodes": 2}, "more than one node needs a shared store"),
        ({"server": "stock", "processes": 2}, "server: stock serves one process per node"),
        ({"server": "fast"}, "server: Input should be 'tuned' or 'stock'"),
        ({"scenarios": [{"name": "page_load_burst", "params": {"users": 0}}]},
         "scenarios[page_load_burst].params: users=0: out of bounds, must be between 1 and 100,000"),
        ({"algorithms": ["fixed_window", "nope"]}, "unknown algorithm 'nope'"),
        ({"scale": {"workers": 0}}, "scale.workers: Input should be greater than or equal to 1"),
    ],
)
def test_bad_campaign_exits_2_naming_the_field_and_starts_nothing(refused_run, change, message):
    assert message in refused_run({**yaml.safe_load(SMOKE.read_text()), **change})


def test_a_stock_server_campaign_runs_its_targets_on_uvicorns_own_server(tmp_path):
    """``server: stock``: the run is made on ``--server stock`` targets, its decisions logged as
    ever, and run.json says which server it measured."""
    campaign = load_campaign(SMOKE).model_copy(update={"server": "stock"})
    infos = LiveRunner(campaign, tmp_path / "res").run_all(plan_runs(campaign, ["boundary_burst", "token_bucket"]))
    assert [(i["status"], i["server"]) for i in infos] == [("ok", "stock")] * 2
    run = tmp_path / "res" / "runs" / "boundary_burst__fixed_window__memory"
    decisions = pd.read_parquet(run / "decisions.parquet")
    client = pd.read_parquet(run / "client.parquet")
    assert len(decisions) == (client["role"] == "plan").sum()  # every planned request decided (the warm-up is not)
    assert decisions["arrived_t"].isna().all()  # uvicorn's own protocol stamps no arrival: the stock server served it
