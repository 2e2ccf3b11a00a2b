"""Config validation: every error names its field."""

from __future__ import annotations

import pytest

from targets.config import ConfigError, load


def write(tmp_path, text: str):
    path = tmp_path / "target.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "field"), [
    ("algorithm: leaky_tap\n", "algorithm"),
    ("routes: {search: {cost: -2}}\n", "routes.search.cost"),
    ("downstream: {schedule: 'soon:degraded'}\n", "downstream.schedule"),
    ("downstream: {schedule: [{at_s: 0, health: sick}]}\n", "downstream.schedule.0.health"),
    ("downstream: {schedule: '0:healthy,5:outtage'}\n", "downstream.schedule.1.health"),
    ("downstream: {schedule: '0:outage,0:recovered'}\n", "downstream.schedule"),
    ("downstream: {schedule: [{at_s: 5, health: healthy}, {at_s: 1, health: degraded}]}\n", "downstream.schedule"),
    ("limits: [{name: a, scope: planet}]\n", "limits.0.scope"),
    ("limits: [{name: a, routes: [nowhere]}]\n", "limits.0.routes"),
    ("limits: [{name: a, params: {capacity: -1}}]\n", "limits.0"),
    ("params: {bogus: 1}\n", "params"),
    ("colour: blue\n", "colour"),
    ("limit: 5\nroutes: {reports: {cost: 20}}\n", "routes.reports.cost"),  # a cost the user set, never admitted
    ("window_s: 1.0e-20\n", "params: window_s=1e-20: out of bounds, must be between 1e-09 and 1,000,000,000,000"),
    ("- just\n- a list\n", "--config"),
])
def test_errors_name_the_field(tmp_path, text, field):
    with pytest.raises(ConfigError) as err:
        load(write(tmp_path, text), {})
    assert str(err.value).startswith(field), str(err.value)


def test_a_default_cost_that_can_never_be_admitted_is_a_warning_not_an_error():
    warnings: list[str] = []
    config = load(None, {"algorithm": "fixed_window", "limit": 5.0}, warnings)
    assert config.cost("reports") == 20
    assert warnings == ["routes.reports.cost: the default cost 20 can never be admitted by per-client (at most 5 per "
                        "request): POST /api/reports will answer 429; set routes.reports.cost (--cost reports=N) or a "
                        "larger limit to serve it"]
    load(None, {"limit": 100.0}, warnings)
    assert len(warnings) == 1  # nothing to say about a limit that admits every route


def test_layers_tiers_and_compact_schedule(tmp_path):
    config = load(write(tmp_path, """
algorithm: fixed_window
limit: 100
window_s: 60
limits:
  - {name: per-user, scope: user, tiers: {vip: {limit: 1000}}}
  - {name: per-tenant, scope: tenant, limit: 5000, algorithm: token_bucket}
routes: {reports: {cost: 5}}
downstream: {schedule: "0:healthy,30:degraded:4,60:recovered,90:outage,95:recovered"}
"""), {"node": "n2"})
    assert [lim.name for lim in config.layers()] == ["per-user", "per-tenant"]
    assert config.cost("reports") == 5 and config.cost("items") == 1 and config.node == "n2"
    assert [(p.health, p.factor) for p in config.downstream.schedule] == [
        ("healthy", 1), ("degraded", 4), ("recovered", 1), ("outage", 1), ("recovered", 1)]


def test_default_layers():
    config = load(None, {"algorithm": "adaptive", "burst": 20})
    assert [(lim.name, lim.scope) for lim in config.layers()] == [("adaptive", "global")]
    names = [(lim.name, lim.scope) for lim in load(None, {}).layers()]
    assert names == [("per-client", "client"), ("login-ip", "ip"), ("login-account", "account")]


def test_an_unknown_field_is_named_with_the_nearest_valid_one(tmp_path):
    with pytest.raises(ConfigError) as err:
        load(write(tmp_path, "algoritm: fixed_window\n"), {})
    assert str(err.value).startswith("algoritm: unknown field (did you mean 'algorithm'?); valid: ")
