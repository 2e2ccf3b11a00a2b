"""Scenario entries, the same in simulation and live campaigns: each entry runs with its own
parameters, policy and run name; entries that would share a run name are refused (exit 2); config
errors name the entry and list the valid choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from analysis.loader import load_results
from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
STORM = {"clients": 50, "base_s": 0.1, "cap_s": 2, "deadline_s": 10}


def write(tmp_path: Path, scenarios: list, **extra) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "entries", "policy": {"limit": 10, "window_s": 1},
                                    "algorithms": ["token_bucket"], "scenarios": scenarios, **extra}))
    return path


def alone(capsys, backoff: str) -> dict:
    """The same storm simulated on its own from the command line."""
    args = ["simulate", "--scenario", "retry_storm", "--algorithm", "token_bucket", "--limit", "10", "--window", "1",
            *(a for k, v in {**STORM, "backoff": backoff}.items() for a in ("--scenario-param", f"{k}={v}")), "--json", "-"]
    assert main(args) == 0
    [row] = json.loads(capsys.readouterr().out)["runs"]
    return row


def test_two_labelled_entries_of_one_scenario_run_with_their_own_params(tmp_path, capsys):
    path = write(tmp_path, [
        {"name": "retry_storm", "label": "full_jitter", "params": {**STORM, "backoff": "full_jitter"}},
        {"name": "retry_storm", "label": "exponential", "params": {**STORM, "backoff": "exponential"}},
        {"name": "steady", "label": "strict", "policy": {"limit": 5, "window_s": 1}, "params": {"duration_s": 5}},
    ])
    out = tmp_path / "res"
    assert main(["simulate", "--campaign", str(path), "--out", str(out), "--no-charts"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (out / "runs").iterdir()) == [
        "retry_storm-exponential__token_bucket__memory", "retry_storm-full_jitter__token_bucket__memory",
        "steady-strict__token_bucket__memory"]
    rows = {r["scenario"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    for backoff in ("full_jitter", "exponential"):
        row, reference = rows[f"retry_storm-{backoff}"], alone(capsys, backoff)
        assert row["scenario_params"]["backoff"] == backoff
        for measure in ("calls", "amplification", "completed_requests", "peak_concurrent_retries", "admitted"):
            assert row[measure] == reference[measure], measure
    assert rows["retry_storm-full_jitter"]["calls"] != rows["retry_storm-exponential"]["calls"]
    assert rows["steady-strict"]["limit"] == 5 and rows["retry_storm-exponential"]["limit"] == 10
    # the analysis reads each run's own policy and parameters back from the folder
    infos = {r.info.scenario: r.info for r in load_results(out).runs}
    assert infos["retry_storm-exponential"].scenario_params["backoff"] == "exponential"
    assert infos["retry_storm-full_jitter"].scenario_params["backoff"] == "full_jitter"
    assert infos["steady-strict"].policy.limit == 5 and infos["retry_storm-full_jitter"].policy.limit == 10


UNLABELLED = [{"name": "retry_storm", "params": {"backoff": "full_jitter"}},
              {"name": "retry_storm", "params": {"backoff": "exponential"}}]


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_two_unlabelled_entries_of_one_scenario_exit_2_and_start_nothing(tmp_path, capsys, command):
    out = tmp_path / "never"
    args = ["simulate", "--campaign"] if command == "simulate" else ["run"]
    assert main([*args, str(write(tmp_path, UNLABELLED)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "scenarios[retry_storm].label: retry_storm listed more than once" in err
    assert "give each entry of a scenario its own label" in err
    assert not out.exists()


def test_the_same_label_twice_exits_2(tmp_path, capsys):
    entries = [{**e, "label": "x"} for e in UNLABELLED]
    assert main(["simulate", "--campaign", str(write(tmp_path, entries))]) == 2
    assert "scenarios[retry_storm-x].label: retry_storm label 'x' is used twice" in capsys.readouterr().err


def test_one_scenario_twice_on_the_command_line_exits_2(capsys):
    assert main(["simulate", "--scenario", "steady", "--scenario", "steady"]) == 2
    assert "--scenario steady is given twice" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "scenarios", "extra", "message"), [
    ("simulate", ["steady", "retyr_storm"], {}, "scenarios[retyr_storm].name: unknown scenario 'retyr_storm'; choose from: steady,"),
    ("run", [{"name": "steady", "label": "a", "algorithms": ["tokenbucket"]}], {},
     "scenarios[steady-a].algorithms: unknown algorithm 'tokenbucket'; choose from: fixed_window,"),
    ("simulate", [{"name": "retry_storm", "label": "b", "params": {"backof": "none"}}], {},
     "scenarios[retry_storm-b].params: unknown scenario parameter 'backof'; valid: clients, backoff,"),
    ("run", [{"name": "retry_storm", "params": {"backoff": "sometimes"}}], {},
     "scenarios[retry_storm].params: backoff='sometimes': choose from: none, fixed, exponential"),
    ("run", [{"name": "steady", "stores": ["memroy"]}], {}, "scenarios[steady].stores[memroy]: Input should be 'memory', 'redis',"),
    ("run", [{"name": "steady", "colour": "red"}], {},
     "scenarios[steady].colour: unknown field; valid: name, label, params, policy, algorithms, algorithm_params, gateway, stores, target"),
    ("simulate", [{"name": "steady", "gateway": {"rate": 10, "burst": 5}}], {},
     "scenarios[steady].gateway: a token bucket in front of token_bucket: only in front of an adaptive limiter"),
    ("run", [{"name": "steady", "algorithms": ["adaptive"], "gateway": {"rate": 0, "burst": 5}}], {},
     "scenarios[steady].gateway.rate: Input should be greater than 0"),
    ("simulate", [{"name": "steady", "stores": ["memory"]}], {}, "scenarios[steady].stores: only live campaigns"),
    ("simulate", ["steady"], {"params": {"token_bucket": {"size": 3}}},
     "params.token_bucket: unknown parameter 'size' for token_bucket; valid: capacity, rate"),
    ("run", ["steady"], {"redis": {"mod": "shared"}}, "redis.mod: unknown field (did you mean 'mode'?); valid: url, mode, batch"),
    ("run", ["steady"], {"policy": {"limit": 10, "window": 1}},  # the typo, not the missing window_s it leaves
     "policy.window: unknown field (did you mean 'window_s'?); valid: limit, window_s, burst"),
    ("simulate", [{"name": "steady", "label": "a__b"}], {}, "scenarios[steady-a__b].label: 'a__b': use letters, digits"),
])
def test_config_errors_name_the_entry_and_list_the_choices(tmp_path, capsys, command, scenarios, extra, message):
    out = tmp_path / "never"
    args = ["simulate", "--campaign"] if command == "simulate" else ["run"]
    assert main([*args, str(write(tmp_path, scenarios, **extra)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_shipped_campaigns_load(capsys):
    """Every campaign file of the suite passes the shared entry checks (full.yaml's labelled storms)."""
    from harness.campaign.live import load_campaign
    from harness.campaign.simulate import load_sim_campaign

    load_sim_campaign(ROOT / "campaigns" / "simulate.yaml")
    for name in ("smoke", "default", "full", "throughput"):
        load_campaign(ROOT / "campaigns" / f"{name}.yaml")


def test_only_picks_one_labelled_entry_and_a_miss_lists_the_choices(tmp_path, capsys):
    from harness.campaign.live import load_campaign
    from harness.live.plan import plan_runs

    path = write(tmp_path, [{**e, "label": e["params"]["backoff"]} for e in UNLABELLED])
    runs = plan_runs(load_campaign(path), ["retry_storm-exponential"])
    assert [r.name for r in runs] == ["retry_storm-exponential__token_bucket__memory"]
    assert [r.scenario.params["backoff"] for r in runs] == ["exponential"]
    assert len(plan_runs(load_campaign(path), ["retry_storm"])) == 2
    assert main(["run", str(path), "--only", "nothing", "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert "choose from: retry_storm, retry_storm-full_jitter, retry_storm-exponential, token_bucket" in err
    assert not (tmp_path / "never").exists()


def test_a_simulation_folder_written_before_runs_existed_still_loads(tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["simulate", "--scenario", "retry_storm", "--algorithm", "token_bucket", "--limit", "10", "--window", "1",
                 "--scenario-param", "backoff=fixed", "--out", str(out)]) == 0
    config = yaml.safe_load((out / "campaign.yaml").read_text())
    [run] = config.pop("runs").values()
    config.update(params={"token_bucket": run["params"]}, scenario_params={"retry_storm": run["scenario_params"]})
    (out / "campaign.yaml").write_text(yaml.safe_dump(config))
    [loaded] = load_results(out).runs
    assert loaded.info.policy.limit == 10 and loaded.info.params["capacity"] == 10
    assert loaded.info.scenario_params["backoff"] == "fixed"


def test_a_run_folder_without_run_json_under_a_live_campaign_yaml_is_left_out_as_interrupted(tmp_path):
    """A live campaign.yaml lists its run names under ``runs`` (no per-run policy): every live run
    writes its run.json, even when interrupted, so a folder there without one was stopped before
    it was recorded. It is left out, saying so, never read as a run of 0 requests or a crash."""
    out = tmp_path / "res"
    assert main(["simulate", "--scenario", "retry_storm", "--algorithm", "token_bucket", "--limit", "10", "--window", "1",
                 "--out", str(out)]) == 0
    config = yaml.safe_load((out / "campaign.yaml").read_text())
    config["runs"] = list(config["runs"])
    (out / "campaign.yaml").write_text(yaml.safe_dump(config))
    for run_json in (out / "runs").glob("*/run.json"):
        run_json.unlink()
    results = load_results(out)
    assert results.runs == [] and len(results.left_out) == 1
    assert "run interrupted: no run.json" in str(results.left_out[0])


def test_an_entry_runs_with_its_own_algorithm_params_over_the_campaigns(tmp_path):
    from harness.campaign.simulate import load_sim_campaign
    from harness.sim.runner import plan_from_campaign

    path = write(tmp_path, [
        {"name": "steady", "label": "vegas", "params": {"duration_s": 2}, "algorithm_params": {"adaptive": {"rule": "vegas"}}},
        {"name": "steady", "label": "default", "params": {"duration_s": 2}},
    ], algorithms=["adaptive"], params={"adaptive": {"rule": "aimd", "timeout_s": 0.5}})
    plan = plan_from_campaign(load_sim_campaign(path))
    rules = {run.scenario: (run.params.rule, run.params.timeout_s) for run in plan.runs}
    assert rules == {"steady-vegas": ("vegas", 0.5), "steady-default": ("aimd", 0.5)}
