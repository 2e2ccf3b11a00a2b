"""validate of a peer's own config file (an NGINX file's limit_req lines) and of a URL: the file
read into policies naming every bad line, judged by the mapped model, and --live against a real
nginx running the file's own limiting lines."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import psutil
import pytest

from harness.campaign.peers import PEERS, ConfigFinding, ConfigLimit, PeerConfig, PeerError
from harness.cli.main import main
from harness.live.peers import live_peer
from harness.processes.ports import free_ports
from harness.validate.inputs import config_lints
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

needs_nginx = pytest.mark.skipif(shutil.which("nginx") is None and os.environ.get("CI", "").lower() != "true",
                                 reason="nginx not on PATH: install Debian's nginx package (CI never skips this)")

API_KEYED = """
http {
    include mime.types;
    map $http_x_api_key $k { "" $binary_remote_addr; default $http_x_api_key; }
    limit_req_zone $k zone=api:10m rate=10r/s;
    server {
        listen 80;
        location /api/ {
            limit_req zone=api burst=4 nodelay;
            limit_req_status 429;
            error_page 429 = @rl;
            proxy_pass http://app;
        }
        location @rl { add_header Retry-After 1 always; default_type application/problem+json; return 429 '{"a": 1}'; }
    }
}
"""
T0 = 1_760_000_040.0
PLAIN = """limit_req_zone $binary_remote_addr zone=one:1m rate=100r/m;
server { location / { limit_req zone=one burst=9 nodelay; } }
"""


@pytest.mark.parametrize(("text", "limits", "status", "retry_after", "proxies"), [
    (API_KEYED, [("api", Policy(10, 1.0, 5), "api_key", 9)], 429, True, None),
    (PLAIN, [("one", Policy(100, 60.0, 10), "ip", 2)], 503, False, None),
    ("limit_req_zone $binary_remote_addr zone=a:1m rate=2r/s;\nlimit_req_zone $http_x_user zone=b:1m rate=30r/m;\n"
     "server { set_real_ip_from 10.0.0.0/8; location / { limit_req zone=a; limit_req zone=b burst=3 delay=1;\n"
     "add_header Retry-After 1; } }", [("a", Policy(2, 1.0, 1), "ip", 3), ("b", Policy(30, 60.0, 4), "api_key", 3)],
     503, False, 1),
    # limit_req and its error page at server level: the named location of that server answers
    ("limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;\nlimit_req_status 429;\nserver { limit_req zone=z burst=1;\n"
     "error_page 429 @x; location @x { add_header Retry-After 2 always; return 429; } }",
     [("z", Policy(5, 1.0, 2), "ip", 3)], 429, True, None),
])
def test_an_nginx_file_becomes_the_policies_its_limit_req_lines_enforce(text, limits, status, retry_after, proxies):
    config = PEERS["nginx"].read_config(text)
    assert [(lim.name, lim.policy, lim.key, lim.line) for lim in config.limits] == limits
    # Retry-After without "always" is not sent on a 429: NGINX adds it to 2xx and 3xx only
    assert (config.reject_status, config.retry_after, config.trusted_proxies) == (status, retry_after, proxies)
    assert PEERS["nginx"].policy_from_config(text) == limits[0][1]


@pytest.mark.parametrize(("text", "message"), [
    ("server { location / { limit_req zone=z burst=3 nodelay } }", 'line 1: directive "limit_req" is not terminated by ";"'),
    ("server { limit_req_zone $a zone=z:1m rate=1r/s; }", 'line 1: "limit_req_zone" directive is not allowed here'),
    ("limit_req_zone $uri zone=z:1m rate=5r/m;\nserver { location / { limit_req zone=z; } }", "line 1: key $uri: validate models keys"),
    ("limit_req_zone $binary_remote_addr zone=z:1m rate=5r/h;\nserver { location / { limit_req zone=z; } }",
     "line 1: limit_req_zone z: rate='5r/h'; NGINX takes a whole number of requests per second or per minute"),
    ("limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;\nserver { location / {\nlimit_req zone=y; } }",
     "line 3: limit_req zone=y: no limit_req_zone defines it"),
    ("limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;\nlimit_conn_zone $binary_remote_addr zone=c:1m;\n"
     "server { location / { limit_req zone=z; } }", "line 2: limit_conn_zone limits concurrent connections"),
    ("server { listen 80; }", "no limit_req line: nothing in the file limits requests"),
])
def test_a_bad_or_unsupported_nginx_line_is_named_and_exits_2_starting_nothing(tmp_path, capsys, text, message):
    with pytest.raises(PeerError, match="^" + message.replace("$", r"\$").replace("(", r"\(")[:30]):
        PEERS["nginx"].read_config(text)
    path = tmp_path / "site.conf"
    path.write_text(text)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path), "--peer", "nginx", "--live"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: {message}" in err
    assert len(err.splitlines()) == 1
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_an_nginx_file_is_judged_by_its_mapped_model(tmp_path, capsys):
    path = tmp_path / "site.conf"
    path.write_text(PLAIN)
    assert main(["validate", "--config", str(path), "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in doc["checks"]}
    assert doc["file"] == str(path) and doc["policy"] == "site"
    assert checks["lint: reject_status_429"]["passed"] is False  # no limit_req_status: NGINX sends 503
    assert "limit_req_status 429" in checks["lint: reject_status_429"]["suggestion"]
    assert checks["lint: retry_after_missing"]["passed"] is False and checks["lint: cacheable_429"]["passed"] is False
    # 100r/m burst=9: a token bucket of 10 refilled at NGINX's 1.666/s; a page of 8 fits
    assert checks["one: page_load_429_rate"]["passed"] is True


def test_on_three_replicas_the_fleet_admits_three_times_what_the_file_states(tmp_path, capsys):
    """100r/m burst=9 on 3 replicas, each counting its own: the note says up to 300 per 60 s, and the
    local-limit lint fails (each replica enforces the whole limit, NGINX's 99.96 per 60 s in
    whole milliseconds; the simulation measures it)."""
    path = tmp_path / "site.conf"
    path.write_text(PLAIN)
    assert main(["validate", "--config", str(path), "--replicas", "3", "--json", "-"]) == 1
    captured = capsys.readouterr()
    checks = {c["name"]: c for c in json.loads(captured.out)["checks"]}
    assert checks["lint: local_limit_not_divided"]["passed"] is False
    assert "each of 3 nodes enforces the full 99.96 per 60 s" in checks["lint: local_limit_not_divided"]["message"]
    assert "one: 3 replicas each count their own (client): the fleet enforces up to 300 per 60 s where the file states 100" \
        in " ".join(captured.err.split())
    assert main(["validate", "--config", str(path), "--json", "-"]) == 1  # one replica: nothing to divide
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["lint: local_limit_not_divided"]["passed"] is True


def test_whom_the_nginx_file_would_have_refused_on_an_access_log(tmp_path, capsys):
    """100r/m burst=9 is a bucket of 10 refilled every 0.6 s: 14 requests of one address in 0.13 s
    (no refill) admit 10 and refuse 4; another address's 3 pass."""
    rows = [LoggedRequest(T0 + 0.01 * i, "1.1.1.1") for i in range(14)]
    rows += [LoggedRequest(T0 + 0.01 * i, "2.2.2.2") for i in range(3)]
    log = tmp_path / "access.log"
    log.write_text(render(rows, "custom"))  # times to the millisecond ($msec)
    path = tmp_path / "site.conf"
    path.write_text(PLAIN)
    assert main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"]) == 0
    [outcome] = json.loads(capsys.readouterr().out)["policies"]
    assert outcome["policy"] == "site" and (outcome["requests"], outcome["refused"]) == (17, 4)


def test_a_products_findings_are_lint_rows_naming_where_to_fix_them():
    """Every lint the reader ran is a row; its findings fail it with the place and the product's fix."""
    config = PeerConfig([ConfigLimit("api", Policy(10, 1.0, 1), "ip")], reject_status=429, lints=("a_pitfall", "b_pitfall"),
                        findings=[ConfigFinding("b_pitfall", "envoy.yaml: x.y[0].z", "filter_enforced unset", "set it to 100%"),
                                  ConfigFinding("b_pitfall", "envoy.yaml:12", "second", "")])
    rows = {r.name: r for r in config_lints(PEERS["nginx"], config)}
    assert list(rows) == ["lint: reject_status_429", "lint: a_pitfall", "lint: b_pitfall"]
    assert rows["lint: a_pitfall"].passed and not rows["lint: b_pitfall"].passed
    assert rows["lint: b_pitfall"].message == "envoy.yaml: x.y[0].z: filter_enforced unset; envoy.yaml:12: second"
    assert rows["lint: b_pitfall"].suggestion == "set it to 100%" and rows["lint: b_pitfall"].value == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--config", "{conf}", "--peer", "no-such-peer"], "unknown peer 'no-such-peer'; choose from: nginx"),
    (["{yaml}", "--replicas", "3"], "--replicas: only with --config FILE"),
    (["--config", "{conf}", "--replicas", "0"], "'0': replicas are a whole number from 1 to 1000"),
    (["--config", "{conf}", "--traffic", "{conf}", "--live"], "--traffic: judges policy or config files on a log"),
    (["--config", "{yaml}"], "not a config file of a known peer; name its peer with --peer"),
    (["--peer", "nginx", "{yaml}"], "--peer: only with --config FILE"),
    (["{yaml}", "--url", "http://127.0.0.1:{port}", "--live"], "http://127.0.0.1:{port}: ConnectError"),
    (["{yaml}", "--url", "http://127.0.0.1:{port}"], "--url: with --live and the policy file it claims to enforce"),
    (["{yaml}", "--key", "ip"], "--key: only with --url URL"),
    (["{yaml}", "--url", "http://127.0.0.1:{port}", "--live", "--key", "cookie:x"],
     "--key 'cookie:x': expected ip or header:NAME[=PREFIX]"),
])
def test_bad_inputs_is_one_line_exit_2(tmp_path, capsys, args, message):
    conf, yaml_file = tmp_path / "site.conf", tmp_path / "policy.yaml"
    conf.write_text(PLAIN)
    yaml_file.write_text("name: p\nroutes: [{name: GET /api/items}]\nlimits: [{name: api, key: ip, algorithm: gcra, "
                         "limit: 10, window_s: 1}]\n")
    port = str(free_ports(1)[0])
    fill = {"conf": str(conf), "yaml": str(yaml_file), "port": port}
    assert main(["validate", *(a.format(**fill) for a in args)]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(**fill) in err and len(err.splitlines()) == 1


def test_a_missing_nginx_binary_exits_2_before_anything_starts(tmp_path, capsys, monkeypatch):
    path = tmp_path / "site.conf"
    path.write_text(PLAIN)
    monkeypatch.setenv("PATH", "")
    assert main(["validate", "--config", str(path), "--live"]) == 2
    assert "peer nginx: the nginx binary was not found on PATH" in capsys.readouterr().err


def _live(tmp_path: Path, capsys, text: str) -> dict[str, dict]:
    tmp_path.mkdir()
    path = tmp_path / "site.conf"
    path.write_text(text)
    (tmp_path / "mime.types").write_text("types { text/html html; }\n")  # API_KEYED includes it, as nginx.conf does
    main(["validate", "--config", str(path), "--live", "--json", "-"])
    return {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}


def _model_agrees(row: dict, at_least: int) -> bool:
    """The row passed, nginx admitting what the model admits on the same times, at least ``at_least``."""
    return row["passed"] and row["threshold"] == f"model: {row['display']}" and int(row["display"]) >= at_least


@needs_nginx
@pytest.mark.process
def test_live_the_file_runs_in_a_real_nginx_and_its_refusal_is_read_as_a_client_reads_it(tmp_path, capsys):
    live = _live(tmp_path / "a", capsys, API_KEYED)
    # burst=4: 5 at once (capacity 5), more where a busy moment spaced the probe's requests and a
    # token (one each 0.1 s) came back meanwhile: what nginx admitted is the model's count on the
    # times the probe's requests were decided, whatever they were
    row = live.pop("live: api: admitted before refusing")
    assert _model_agrees(row, at_least=5), row
    # its own error page: problem+json and a Retry-After of 1 s (at 10r/s one request is back in 0.1 s)
    assert {k: (v["display"], v["passed"]) for k, v in live.items()} == {
        "live: refusal status": ("429", True), "live: refusal body": ("application/problem+json", True),
        "live: retry after": ("1", True), "live: no store": ("none", False), "live: retry after truthful": ("200", True),
        "live: limit fields": ("0 malformed", True),
    }
    plain = _live(tmp_path / "b", capsys, PLAIN)
    row = plain.pop("live: one: admitted before refusing")
    assert _model_agrees(row, at_least=10), row
    assert {k: (v["display"], v["passed"]) for k, v in plain.items()} == {
        "live: refusal status": ("503", False), "live: refusal body": ("text/html", False),
        "live: retry after": ("none", False), "live: no store": ("none", False), "live: limit fields": ("0 malformed", True),
    }
    fix = plain["live: refusal body"]["suggestion"]
    assert fix.startswith("limit_req_status 429;\nerror_page 429 = @rb_429;")
    # the offered lines, put in the file, make every check of the refusal pass on the real nginx
    lines = [line.split("#")[0] for line in fix.splitlines()]
    fixed = PLAIN.replace("nodelay; }", "nodelay; " + " ".join(lines[:2]) + " }\n" + "\n".join(lines[2:]))
    assert all(v["passed"] for v in _live(tmp_path / "c", capsys, fixed).values())


@needs_nginx
@pytest.mark.process
def test_live_nginx_without_nodelay_is_said_to_hold_not_refuse_and_where_refusing_would_start(tmp_path, capsys):
    """limit_req without nodelay: the sequential probe is paced, never refused; the rows say it was
    held (by how long, on the times the probe measured) and what a refusing limiter would do: burst=4
    is a bucket of 5, so back to back the model admits 5 and refuses the rest (5 on this machine's
    round trips of a few ms; "back to back" is one fastest round trip apart, so a machine so busy
    that its fastest answer took 100 ms refills a token or two meanwhile)."""
    live = _live(tmp_path / "a", capsys, PLAIN.replace("rate=100r/m", "rate=5r/s").replace("burst=9 nodelay", "burst=4"))
    assert live["live: refusal"]["passed"] is False
    assert "it held them instead" in live["live: refusal"]["message"]
    held = live["live: one: held, not refused"]
    assert held["passed"] is False and held["value"] >= 100  # each request past the burst waits its 200 ms turn
    said = re.fullmatch(r"(\d+) requests at one key, .* the model \(token_bucket\) admits (\d+) and refuses the rest "
                        r"\(what a limiter that refuses past its burst, NGINX with nodelay, answers\)", held["message"])
    assert said and 5 <= int(said[2]) < int(said[1])
    assert "nodelay" in held["suggestion"]


@needs_nginx
@pytest.mark.process
def test_live_a_url_is_judged_by_the_policy_it_claims(tmp_path, capsys):
    from harness.live.peers.standalone import peer_before_none

    # 4 a second: a round trip would have to stretch by half a second for the 2 tokens the claim
    # lacks to refill inside it (the claim is replayed anywhere in each round trip; at 10 a second a
    # busy CI moment's 0.2 s had explained a burst of 5 as 3 and the claim passed)
    claim = tmp_path / "claim.yaml"
    claim.write_text("name: claim\nroutes: [{name: GET /api/items}]\nlimits: [{name: api, key: api_key, "
                     "algorithm: token_bucket, limit: 4, window_s: 1, burst: 3}]\n")
    with peer_before_none("nginx-problem", Policy(4, 1, 5), tmp_path / "peer") as (url, _):
        assert main(["validate", str(claim), "--url", f"{url}/api/items", "--live", "--json", "-"]) == 1
    live = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}
    assert all(live[f"live: {n}"]["passed"] for n in ("refusal status", "refusal body", "retry after", "no store",
                                                      "retry after truthful"))
    # it claims a burst of 3; the endpoint admits 5 at once: measured, and the claim fails on it
    burst = live["live: api: burst"]
    assert (burst["display"], burst["passed"], burst["threshold"]) == ("5", False, "3 ±5%")
    assert live["live: api: rate"]["passed"] and not live["live: api: model"]["passed"], live["live: api: rate"]


def test_every_live_peer_of_nginx_reads_a_user_file():
    assert isinstance(live_peer("nginx").from_config(PLAIN).config(Policy(1, 1), port=1, downstream_port=2,
                                                                   run_dir=Path("/x")), str)


def _conf_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / next(iter(files))


def test_limits_in_included_files_are_found_relative_to_the_main_files_directory(tmp_path, capsys):
    main_conf = _conf_dir(tmp_path, {
        "nginx.conf": "http {\n    include conf.d/*.conf;\n    include none.d/*.conf;\n"
                      "    server { location / { include snippets/limit.conf; } }\n}\n",
        "conf.d/zones.conf": "include snippets/zone.conf;\n",  # nested: relative to nginx.conf's directory, as NGINX
        "snippets/zone.conf": "limit_req_zone $binary_remote_addr zone=one:1m rate=100r/m;\n",
        "snippets/limit.conf": "limit_req zone=one burst=9 nodelay;\n",
    })
    assert main(["validate", "--config", str(main_conf), "--json", "-"]) == 1  # judged (503, no Retry-After)
    doc = json.loads(capsys.readouterr().out)
    assert doc["file"] == str(main_conf) and "one: legit_rejection_rate" in {c["name"] for c in doc["checks"]}


@pytest.mark.parametrize(("files", "message"), [
    ({"nginx.conf": "http { include missing.conf; }\n"}, "line 1: [Errno 2] No such file or directory"),
    ({"nginx.conf": "http { include nginx.conf; limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s; }\n"},
     "include cycle: {d}/nginx.conf -> {d}/nginx.conf"),
    ({"nginx.conf": "http { include a.conf; }\n", "a.conf": "include b.conf;\n", "b.conf": "include a.conf;\n"},
     "include cycle: {d}/a.conf -> {d}/b.conf -> {d}/a.conf"),
])
def test_a_missing_include_or_a_cycle_is_refused_in_one_line(tmp_path, capsys, files, message):
    path = _conf_dir(tmp_path, files)
    assert main(["validate", "--config", str(path), "--peer", "nginx", "--json", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(d=tmp_path.resolve()) in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out.json").exists()
