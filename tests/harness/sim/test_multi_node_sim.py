"""multi_node and store_failure as traffic models and in virtual time: the fleet's physics on N
independent memory stores behind the balancer, routing, and bad parameters (exit 2)."""

from __future__ import annotations

import pytest
import yaml

from analysis.metrics import over_admission
from harness.cli.main import main
from harness.sim.simulator import simulate
from scenarios import build_model
from scenarios.fleet import Fleet, assign_nodes
from targets.algorithms import Policy, build_params

POLICY = Policy(20, 1.0)


def skewed_ratio(virtual_store: str, routing: str, **params: str) -> float:
    model = build_model("multi_node", 20, 1.0, 1, {"virtual_store": virtual_store, "routing": routing, **params})
    table, _ = simulate(model, "sliding_log", POLICY, build_params("sliding_log", POLICY))
    df = table.to_pandas()
    return over_admission(df[df["key"] == "skewed"], 20, 1.0)


def test_local_limits_on_k_nodes_admit_k_times_l_with_round_robin():
    assert skewed_ratio("local", "round_robin", nodes="3") == pytest.approx(3.0, abs=0.1)
    assert skewed_ratio("shared", "round_robin", nodes="3") == 1.0


def test_sticky_routing_with_limit_over_n_cuts_the_skewed_client_below_l():
    assert skewed_ratio("local_split", "sticky", nodes="3") <= 1 / 3
    assert skewed_ratio("local", "sticky", nodes="3") == 1.0  # one node, the whole L


def test_a_node_added_mid_run_adds_one_more_l_with_local_limits():
    assert skewed_ratio("local", "round_robin", nodes="2", skew="5", add_node_at_s="2", duration_s="4") == pytest.approx(3.0, abs=0.1)


def test_routing_is_deterministic_and_honours_joins():
    fleet = Fleet((0.0, 0.0, 1.0), "round_robin")
    nodes = assign_nodes([0.1, 0.2, 0.3, 1.0, 1.1, 1.2], ["a"] * 6, fleet)
    assert nodes == [0, 1, 0, 0, 1, 2]
    sticky = assign_nodes([0.1, 0.2, 0.3], ["a", "b", "a"], Fleet((0.0, 0.0), "sticky"))
    assert sticky[0] == sticky[2]


@pytest.mark.parametrize(("param", "message"), [
    ("nodes=0", "nodes=0: out of bounds, must be between 1 and 1,000"),
    ("routing=random", "routing='random': choose from: round_robin, sticky"),
    ("add_node_at_s=1000", "add_node_at_s must be before the end"),
])
def test_bad_multi_node_parameters_exit_2_naming_them(capsys, param, message):
    assert main(["simulate", "--scenario", "multi_node", "--scenario-param", param]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_bad_store_failure_window_exits_2(capsys):
    assert main(["simulate", "--scenario", "store_failure", "--scenario-param", "restore_at_s=1"]) == 2
    assert "restore_at_s must be after outage_at_s" in capsys.readouterr().err


@pytest.mark.parametrize(("scenario", "message"), [
    ({"name": "multi_node", "stores": ["memory"]}, "scenarios[multi_node].stores: multi_node runs 3 nodes"),
    ({"name": "store_failure", "stores": ["redis-local"]}, "scenarios[store_failure].stores: store_failure stops Redis mid-run"),
])
def test_campaigns_with_a_store_the_scenario_cannot_use_exit_2(tmp_path, capsys, scenario, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["fixed_window"],
                                    "scenarios": [scenario]}))
    assert main(["run", str(path), "--out", str(tmp_path / "never")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
