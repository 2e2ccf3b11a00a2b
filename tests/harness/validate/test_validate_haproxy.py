"""validate --config of a user's own haproxy.cfg: its limit, the deny's status and key read, and
--live running its deciding lines (acls, http-request rules, the stick tables they track) in the
real haproxy in front of a suite target, checked as NGINX files are."""

from __future__ import annotations

import json
import os
import shutil

import psutil
import pytest

from harness.campaign.peers import PEERS
from harness.campaign.peers.haproxy_config import read_haproxy
from harness.cli.main import main
from harness.live.peers.haproxy import file_cfg
from targets.algorithms import Policy

needs_haproxy = pytest.mark.skipif(shutil.which("haproxy") is None and os.environ.get("CI", "").lower() != "true",
                                   reason="haproxy not on PATH: install Debian's haproxy package (CI never skips this)")
# HAProxy's blog, "Four Examples of HAProxy Rate Limiting": the sliding window limit
BLOG = """frontend website
    bind :80
    stick-table type ipv6 size 100k expire 30s store http_req_rate(10s)
    http-request track-sc0 src
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }
    default_backend servers

backend servers
    server server1 10.0.0.1:80
"""
# the table in a backend of its own, keyed by a header, a deny without deny_status (403)
SPLIT = """global
    maxconn 100
frontend api # keyed by the API key
    bind :8080
    acl has_key req.hdr(x-api-key) -m found
    acl abuse sc_http_req_rate(1) gt 4
    http-request track-sc1 req.hdr(x-api-key) table per_key if has_key
    http-request deny if abuse
    http-after-response set-header Retry-After 2 if { status 403 }
    default_backend app
backend per_key
    stick-table type string len 64 size 1m expire 10s store http_req_rate(2s)
backend app
    server a 10.0.0.2:80
"""


def test_the_files_limit_status_and_key_are_read():
    blog, split = PEERS["haproxy"].read_config(BLOG), PEERS["haproxy"].read_config(SPLIT)
    assert [(lim.name, lim.policy, lim.key) for lim in blog.limits] == [("website", Policy(20, 10.0), "ip")]
    assert (blog.reject_status, blog.retry_after) == (429, False)
    assert [(lim.name, lim.policy, lim.key) for lim in split.limits] == [("api", Policy(4, 2.0), "api_key")]
    assert (split.reject_status, split.retry_after) == (403, True)  # HAProxy's deny answers 403 by default


def test_the_live_config_keeps_the_deciding_lines_and_their_tables_not_the_users_servers():
    cfg = file_cfg(read_haproxy(SPLIT), port=1, downstream_port=2)
    kept = [line.strip() for line in cfg.splitlines()]
    for line in ("acl abuse sc_http_req_rate(1) gt 4", "http-request track-sc1 req.hdr(x-api-key) table per_key if has_key",
                 "http-request deny if abuse", "http-after-response set-header Retry-After 2 if { status 403 }",
                 "backend per_key", "stick-table type string len 64 size 1m expire 10s store http_req_rate(2s)"):
        assert line in kept
    assert "bind 127.0.0.1:1" in kept and "server downstream 127.0.0.1:2" in kept
    assert not {"bind :8080", "server a 10.0.0.2:80", "maxconn 100", "backend app"} & set(kept)


def test_a_file_is_recognised_and_a_403_deny_is_linted(tmp_path, capsys):
    path = tmp_path / "haproxy.cfg"
    path.write_text(SPLIT)
    assert main(["validate", "--config", str(path), "--json", "-"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["lint: reject_status_429"]["message"].startswith("refusals are 403, not 429")
    assert "deny_status 429" in checks["lint: reject_status_429"]["suggestion"]


@needs_haproxy
@pytest.mark.process
@pytest.mark.parametrize(("text", "status", "admitted"), [(BLOG, "429", "20"), (SPLIT, "403", "4")])
def test_live_the_users_lines_run_in_a_real_haproxy_and_admit_the_models_count(tmp_path, capsys, text, status, admitted):
    """The probe's burst on one key: the real haproxy refuses after exactly the model's count
    (gt 20 over 10 s: 20; gt 4 over 2 s: 4, the key the probe sends as X-API-Key)."""
    path = tmp_path / "haproxy.cfg"
    path.write_text(text)
    main(["validate", "--config", str(path), "--live", "--json", "-"])
    live = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}
    assert live["live: refusal status"]["display"] == status
    agree = next(v for k, v in live.items() if k.endswith("admitted before refusing"))
    assert (agree["display"], agree["passed"]) == (admitted, True)


@needs_haproxy
@pytest.mark.process
def test_a_haproxy_that_rejects_the_users_lines_is_its_own_error_exit_2_leaving_nothing(tmp_path, capsys):
    path = tmp_path / "haproxy.cfg"
    path.write_text(BLOG.replace("http-request track-sc0 src", "http-request track-sc0 src\n    http-request frobnicate"))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path), "--live"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: haproxy did not start" in err and "frobnicate" in err
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before
