"""A campaign's ``{name: haproxy, config: FILE}`` peer: the user's own haproxy.cfg (its stick
table and deny rule as written, its backend replaced by the suite's downstream) run by a real
haproxy under a scenario, replayed at the file's limit and judged with the same metrics."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from targets.algorithms import Policy
from tests.harness.live.peers.test_haproxy import needs_haproxy
from tests.harness.live.peers.test_nginx_file_campaign import own_file_run
from tests.harness.validate.test_validate_haproxy import BLOG
from tests.recorded import peer_model_agrees

USER_HAPROXY = BLOG.replace("http_req_rate(10s)", "http_req_rate(1s)").replace("gt 20", "gt 10")
"""HAProxy's blog example at 10 per 1 s (its 20 per 10 s would make the run 10 s longer)."""


@needs_haproxy
@pytest.mark.process
def test_a_campaign_runs_the_users_haproxy_file_judged_by_its_own_limit(tmp_path, capsys):
    out, run, info = own_file_run(tmp_path, capsys, "haproxy", "haproxy.cfg", USER_HAPROXY,
                                  {"limit": 10, "window_s": 1}, "sliding_window_counter")
    assert (info["status"], info["algorithm"], info["system"], info["store"]) == ("ok", "haproxy", "haproxy", "zone")
    assert info["policy"] == {"limit": 10, "window_s": 1.0, "burst": None}  # the file's: gt 10 over 1 s
    assert info["peer_config"] == {"path": str(tmp_path / "haproxy.cfg"), "peer": "haproxy", "limit_name": "website",
                                   "line": 1, "limit": 10, "window_s": 1.0, "burst": None}
    conf = (run / "haproxy.cfg").read_text()
    assert "store http_req_rate(1s)" in conf and "if { sc_http_req_rate(0) gt 10 }" in conf and "10.0.0.1" not in conf
    # boundary_burst at the file's limit: 10 at once, 10 more 0.33 s later in the same period of
    # HAProxy's counter: 10 of 20, exactly as its model on HAProxy's own decision times
    decisions = pq.read_table(run / "decisions.parquet").to_pandas()
    assert len(decisions) == info["planned_requests"] == 20
    peer_model_agrees("haproxy", Policy(10, 1), decisions)
    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    assert rows["boundary_burst__sliding_window_counter__memory"]["system"] == "suite"  # beside it, on the same traffic
    assert rows["boundary_burst__haproxy"]["requests"] - rows["boundary_burst__haproxy"]["rejected"] == int(
        decisions["allowed"].sum())
