"""`validate --traffic LOG`: hand-computed refusals from logs in every format (with and without
X-Forwarded-For, IPv6 by prefix, route costs), both bounds of a whole-second log, an
out-of-order log judged like the sorted one, decisions equal to the CSV trace's, and bad input."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.campaign.log_traffic import LogOptions, load_traffic
from harness.campaign.policy_file import parse_policy
from harness.campaign.request_records import spread
from harness.cli.main import main
from harness.validate import traffic as traffic_module
from harness.validate.sim import deployment, run
from harness.validate.traffic import judge, refusals
from scenarios.access_log.render import CUSTOM, JSON_FIELDS, PIPED, LoggedRequest, render
from scenarios.trace_file import TraceFile

T0 = 1_760_000_040.0  # a whole minute: one 60 s fixed window holds every request below
POLICY = {
    "name": "per-ip", "keys": {"behind_proxies": True, "trusted_proxies": 1, "ipv6_prefix": 64},
    "routes": [{"name": "GET /api/items"}, {"name": "POST /api/reports", "cost": 2}],
    "limits": [{"name": "api", "key": "ip", "algorithm": "fixed_window", "limit": 2, "window_s": 60}],
}


def requests() -> list[LoggedRequest]:
    """Refused by 2 per 60 s per client address, by hand:
    1.1.1.1 three times: 1 refused; two clients behind the proxy 10.0.0.1 twice each (the one
    trusted hop names them; a spoofed left entry is ignored): 0 refused, but 2 where the format
    does not log X-Forwarded-For (4 on the proxy's address); three addresses of one IPv6 /64:
    1 refused; 2.2.2.2 posts a report (cost 2) twice: 1 refused. Total 3 with XFF, 5 without."""
    out = [LoggedRequest(T0 + 0.1 * i, "1.1.1.1") for i in range(3)]
    out += [LoggedRequest(T0 + 1 + 0.1 * i, "10.0.0.1", xff=xff)
            for i, xff in enumerate(["9.9.9.9", "6.6.6.6, 9.9.9.9", "8.8.8.8", "8.8.8.8"])]
    out += [LoggedRequest(T0 + 2 + 0.1 * i, f"2001:db8::{i + 1}") for i in range(3)]
    out += [LoggedRequest(T0 + 3 + 0.1 * i, "2.2.2.2", "POST", "/api/reports") for i in range(2)]
    return out


OPTIONS = {"combined": LogOptions(), "common": LogOptions(), "main": LogOptions(), "custom": LogOptions(log_format=CUSTOM),
           "piped": LogOptions(log_format=PIPED), "json": LogOptions(fields=(JSON_FIELDS,)), "alb": LogOptions(),
           "cloudfront": LogOptions()}
WITHOUT_XFF = ("combined", "common", "alb")


def write(tmp_path: Path, fmt: str, rows: list[LoggedRequest], gz: bool = False) -> Path:
    text = render(rows, fmt).encode()
    path = tmp_path / f"{fmt}.log{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", list(OPTIONS))
def test_refusals_are_the_hand_computed_ones_in_every_format(fmt: str, gz: bool, tmp_path: Path) -> None:
    traffic = load_traffic(write(tmp_path, fmt, requests(), gz), OPTIONS[fmt])
    [*outcomes] = judge(traffic, [parse_policy(POLICY, "policy")])
    expected = 5 if fmt in WITHOUT_XFF else 3
    assert {o.timing: o.refused for o in outcomes} == (
        {"exact": expected} if fmt in ("custom", "piped", "json", "alb") else {"spread": expected, "packed": expected})
    o = outcomes[0]
    keys = {k.key: k.refused for k in o.top_keys}
    assert keys["ip:2001:db8::/64"] == 1 and keys["ip:1.1.1.1"] == 1 and keys["ip:2.2.2.2"] == 1
    assert keys.get("ip:10.0.0.1", 0) == (2 if fmt in WITHOUT_XFF else 0)
    bursts = {k.key: (k.worst, k.span_s, k.allowance, k.limit) for k in o.top_keys}
    assert bursts["ip:1.1.1.1"] == (3, 60, 2, "api") and bursts["ip:2.2.2.2"] == (4, 60, 2, "api")  # cost 2 each
    assert {r.route: r.refused for r in o.by_route} == {"GET /api/items": expected - 1, "POST /api/reports": 1}


def test_the_api_key_outranks_the_user_and_the_address(tmp_path: Path) -> None:
    """Keyed by api_key: k1 from two addresses is one key (3 requests: 1 refused); a user
    without a key is keyed by user (ann, 2: none refused); neither: by address (3: 1 refused)."""
    rows = [LoggedRequest(T0 + i, f"1.1.1.{i}", api_key="k1") for i in range(3)]
    rows += [LoggedRequest(T0 + 5 + i, f"3.3.3.{i}", user="ann") for i in range(2)]
    rows += [LoggedRequest(T0 + 10 + i, "4.4.4.4") for i in range(3)]
    policy = parse_policy({**POLICY, "limits": [{**POLICY["limits"][0], "key": "api_key"}]}, "policy")
    [o] = judge(load_traffic(write(tmp_path, "custom", rows), OPTIONS["custom"]), [policy])
    assert o.refused == 2
    assert {k.key: k.refused for k in o.top_keys} == {"api_key:k1": 1, "ip:4.4.4.4": 1}


def test_a_whole_second_log_gives_both_bounds(tmp_path: Path) -> None:
    """2 per second, burst 1 (token bucket): two requests in one second are both admitted when
    spread over it (the second comes 0.5 s later, a whole token refilled) and one is refused
    when both land at its start."""
    policy = parse_policy({**POLICY, "limits": [{"name": "api", "key": "ip", "algorithm": "token_bucket",
                                                 "limit": 2, "window_s": 1, "burst": 1}]}, "policy")
    rows = [LoggedRequest(T0, "1.1.1.1"), LoggedRequest(T0 + 0.7, "1.1.1.1")]
    traffic = load_traffic(write(tmp_path, "combined", rows))
    assert traffic.whole_second
    assert {o.timing: o.refused for o in judge(traffic, [policy])} == {"spread": 0, "packed": 1}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=60))
def test_spread_times_divide_each_second_evenly_in_log_order(seconds: list[int]) -> None:
    """The k-th of a second's n requests is spread to k/n past the second's start."""
    t = np.array(sorted(T0 + s for s in seconds), dtype=np.float64)
    counts = Counter(t.tolist())
    expected = [s + k / counts[s] for s in sorted(counts) for k in range(counts[s])]
    assert spread(t).tolist() == pytest.approx(expected, abs=1e-9)


def test_an_out_of_order_log_is_judged_as_the_sorted_one(tmp_path: Path) -> None:
    rng = random.Random(7)
    rows = [LoggedRequest(T0 + rng.uniform(0, 300), f"5.5.5.{rng.randrange(4)}") for _ in range(300)]
    rows.sort(key=lambda r: r.t)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    policy = parse_policy({**POLICY, "limits": [{**POLICY["limits"][0], "algorithm": "sliding_log", "limit": 20}]}, "p")
    sorted_log = load_traffic(write(tmp_path, "piped", rows), OPTIONS["piped"])
    (tmp_path / "piped.log").rename(tmp_path / "sorted.log")
    mixed = load_traffic(write(tmp_path, "piped", shuffled), OPTIONS["piped"])
    assert mixed.out_of_order > 0 and sorted_log.out_of_order == 0
    [a], [b] = judge(sorted_log, [policy]), judge(mixed, [policy])
    assert a.refused > 0 and (a.refused, a.top_keys, a.refused_per_bin) == (b.refused, b.top_keys, b.refused_per_bin)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 120_000), st.integers(0, 5)), min_size=1, max_size=120),
       st.sampled_from(["fixed_window", "sliding_log", "token_bucket", "gcra", "sliding_window_counter"]))
def test_decisions_on_a_log_equal_those_on_the_equivalent_csv_trace(tmp_path: Path, rows: list[tuple[int, int]],
                                                                     algorithm: str) -> None:
    """Request by request: the log's refusals equal the simulator's decisions on a CSV trace
    with the same times and ``ip:<address>`` keys."""
    rows = sorted(rows)
    logged = [LoggedRequest(T0 + ms / 1000, f"7.7.7.{a}") for ms, a in rows]
    traffic = load_traffic(write(tmp_path, "piped", logged), OPTIONS["piped"])
    csv = tmp_path / "trace.csv"
    pd.DataFrame({"t": [f"{r.t:.3f}" for r in logged], "key": [f"ip:{r.addr}" for r in logged]}).to_csv(csv, index=False)
    policy = parse_policy({**POLICY, "limits": [{"name": "api", "key": "ip", "algorithm": algorithm,
                                                 "limit": 5, "window_s": 10}]}, "p")
    refused = refusals(traffic, policy) >= 0
    decided = run(deployment(policy, policy.limits[0]), TraceFile(csv).arrivals())
    assert refused.tolist() == (~decided["allowed"].to_numpy()).tolist()


def test_key_classes_give_the_share_refused_and_gate_ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Crawlers (by user agent) send 4 of which 2 are refused; customers (by key) 2, none."""
    rows = [LoggedRequest(T0 + i, "1.1.1.1", agent="Googlebot/2.1") for i in range(4)]
    rows += [LoggedRequest(T0 + i, "2.2.2.2", api_key="c1") for i in range(2)]
    log = write(tmp_path, "custom", rows)
    policy = tmp_path / "p.yaml"
    policy.write_text(json.dumps({**POLICY, "limits": [{**POLICY["limits"][0], "key": "api_key"}]}))
    classes = tmp_path / "classes.yaml"
    classes.write_text("classes:\n  - {name: customer, key: '^api_key:', max_refused: 0}\n"
                       "  - {name: crawler, agent: '(?i)bot', max_refused: 0.25}\n")
    junit = tmp_path / "junit.xml"
    code = main(["validate", str(policy), "--traffic", str(log), "--log-format", CUSTOM, "--classes", str(classes),
                 "--json", "-", "--junit", str(junit), "--html", str(tmp_path / "report.html")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    [o] = doc["policies"]
    assert [(c["name"], c["requests"], c["refused"]) for c in o["classes"]] == [("customer", 2, 0), ("crawler", 4, 2)]
    assert 'name="class.crawler.exact"' in junit.read_text() and junit.read_text().count("<failure") == 1
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_a_few_unreadable_lines_are_named_and_the_run_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """4 of 404 lines unreadable (under 1%): the verdict is given, the note counts them and
    names the first three by line number, and the JSON keeps them."""
    lines = render([LoggedRequest(T0 + i, "1.1.1.1") for i in range(400)], "combined").splitlines()
    for n in (7, 70, 200, 333):
        lines.insert(n - 1, f"garbage {n}")
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n")
    policy = tmp_path / "p.yaml"
    policy.write_text(json.dumps(POLICY))
    code = main(["validate", str(policy), "--traffic", str(log), "--json", "-"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 0 and doc["traffic"]["unreadable"] == 4 and doc["traffic"]["requests"] == 400
    assert [u["line"] for u in doc["traffic"]["unreadable_first"]] == [7, 70, 200]
    assert "4 unreadable lines skipped (first: line 7: 'garbage 7'; line 70: 'garbage 70'; line 200:" in captured.err


@pytest.mark.parametrize(("make", "args", "message"), [
    (lambda p: p.write_text(""), [], "empty file"),
    (lambda p: p.write_text(render(requests(), "combined")), ["--log-format", "$remote_addr $msec $upstream_weird"],
     "log_format variable $upstream_weird is not known"),
    (lambda p: p.write_text(render(requests(), "json")), ["--field", "t=start_time,addr=client_ip"],
     "--field addr=client_ip: no such field"),
    (lambda p: p.write_text(render(requests(), "combined") + "junk\n" * 3), [],
     "3 of 15 lines (20.0%) cannot be used as combined"),
    (lambda p: p.mkdir(), [], "access.log: is a folder, not a file"),
    (lambda p: p.write_text(render(requests(), "combined")), ["--html", "{tmp}/access.log/report.html"],
     "--html"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(make, args: list[str], message: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "access.log"
    make(log)
    policy = tmp_path / "p.yaml"
    policy.write_text(json.dumps(POLICY))
    out, junit = tmp_path / "verdict.json", tmp_path / "verdict.xml"
    code = main(["validate", str(policy), "--traffic", str(log), "--json", str(out), "--junit", str(junit),
                 *[a.format(tmp=tmp_path) for a in args]])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not junit.exists() and not list(tmp_path.glob("*.html"))


def test_simulate_reads_an_access_log_as_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The default key config trusts no proxy: the two clients behind 10.0.0.1 are one key (4
    requests: 2 refused), 1.1.1.1 and the /64 1 each, 2.2.2.2's two posts cost 1 each: none."""
    monkeypatch.chdir(tmp_path)  # a trace run's results folder is made under ./results
    log = write(tmp_path, "main", requests(), gz=True)
    code = main(["simulate", "--trace", str(log), "--algorithm", "fixed_window", "--limit", "2", "--window", "60",
                 "--json", "-"])
    [row] = json.loads(capsys.readouterr().out)["runs"]
    assert code == 0 and (row["scenario"], row["requests"], row["rejected"]) == ("main", 12, 4)


@pytest.mark.parametrize("fmt", ["json", "piped"])
def test_simulate_reads_a_log_with_validates_options(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`simulate --trace` takes validate's --field (JSON lines) and --log-format: the same
    requests, the same 4 refused as above (IPv6 by /64, no trusted proxy)."""
    monkeypatch.chdir(tmp_path)  # a trace's results folder is kept by default: under ./results/
    log = write(tmp_path, fmt, requests())
    how = ["--field", JSON_FIELDS] if fmt == "json" else ["--log-format", PIPED]
    code = main(["simulate", "--trace", str(log), *how, "--algorithm", "fixed_window", "--limit", "2", "--window", "60",
                 "--json", "-"])
    [row] = json.loads(capsys.readouterr().out)["runs"]
    assert code == 0 and (row["scenario"], row["requests"], row["rejected"]) == (fmt, 12, 4)  # named after the file


@pytest.mark.parametrize(("args", "message"), [
    (["--scenario", "steady", "--field", "t=ts,addr=ip"], "--format/--log-format/--field: only with --trace LOG"),
    (["--trace", "{log}", "--field", "t=start_time,addr=client_ip"], "--field addr=client_ip: no such field"),
    (["--trace", "{log}", "--field", "t=start_time,when=x"], "'when' is not one of"),
])
def test_simulate_refuses_bad_log_options_in_one_line(args: list[str], message: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    log = write(tmp_path, "json", requests())
    out, summary = tmp_path / "results", tmp_path / "summary.json"
    code = main(["simulate", *[a.format(log=log) for a in args], "--out", str(out), "--json", str(summary)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not summary.exists()


def test_worker_processes_judge_as_one_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big log's replays run one per core in forked workers: the same answers."""
    rng = random.Random(3)
    rows = sorted((LoggedRequest(T0 + rng.uniform(0, 120), f"5.5.5.{rng.randrange(5)}") for _ in range(400)),
                  key=lambda r: r.t)
    traffic = load_traffic(write(tmp_path, "combined", rows))
    policies = [parse_policy({**POLICY, "name": f"p{n}", "limits": [{**POLICY["limits"][0], "limit": n}]}, "p")
                for n in (10, 30)]
    serial = judge(traffic, policies)
    monkeypatch.setattr(traffic_module, "PARALLEL_FROM", 0)
    monkeypatch.setattr(traffic_module.os, "cpu_count", lambda: 2)
    assert judge(traffic, policies) == serial and serial[0].refused > 0
