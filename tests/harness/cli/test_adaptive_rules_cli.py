"""An adaptive rule's parameters outside its domain are refused through the command line and
a campaign file: one line naming the rule and the field, exit 2, nothing written."""

from __future__ import annotations

import pytest

from harness.cli.main import main


@pytest.mark.parametrize(("params", "message"), [
    (["rule=vegas", "vegas_alpha=7"], "adaptive rule vegas: vegas_alpha=7.0 out of its domain"),
    (["rule=envoy", "envoy_percentile=100"], "adaptive rule envoy: envoy_percentile=100.0"),
    (["window=average", "window_size=0"], "adaptive rule windowed: window_size=0"),
    (["rule=gozero", "cpu_threshold=0"], "adaptive rule gozero: cpu_threshold=0.0"),
    (["rule=cubic"], "rule='cubic': choose from: gradient2, aimd, vegas, envoy"),
])
def test_simulate_refuses_a_rule_parameter_out_of_its_domain(tmp_path, capsys, params, message):
    out = tmp_path / "never"
    args = [a for p in params for a in ("--param", p)]
    assert main(["simulate", "--scenario", "steady", "--algorithm", "adaptive", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_campaign_file_refuses_it_naming_the_rule_and_field(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("name: x\npolicy: {limit: 10, window_s: 1, burst: 8}\nalgorithms: [adaptive]\n"
                   "scenarios: [steady]\nparams: {adaptive: {rule: envoy, envoy_percentile: 0}}\n")
    assert main(["simulate", "--campaign", str(bad), "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip()
    assert "adaptive rule envoy: envoy_percentile=0.0" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "never").exists()
