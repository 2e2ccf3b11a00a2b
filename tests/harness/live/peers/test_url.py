"""The url peer: an endpoint the user runs, named in a campaign, started by nobody but them and
judged client-side only. Here it is a real slowapi process the test starts (moving window, 20 per
1 s), so what the client infers can be checked against what the endpoint itself recorded."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
import yaml

from harness.live.peers import live_peer
from harness.live.peers.standalone import peer_before_none
from harness.processes.ports import free_ports
from scenarios.live_plan import LivePlan, worker_share
from targets.algorithms import Policy
from tests.recorded import peer_model_agrees, suite_model_agrees

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[4]
CAMPAIGN = {
    "name": "url", "policy": {"limit": 20, "window_s": 1}, "algorithms": ["sliding_log"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.33}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0}, "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}


def _ours(out: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]


def test_a_campaign_judges_a_running_endpoint_client_side_and_labels_its_rows(tmp_path):
    endpoint = tmp_path / "endpoint"
    path, out = tmp_path / "url.yaml", tmp_path / "res"
    with peer_before_none("slowapi-moving-window", Policy(20, 1), endpoint) as (url, logs):
        peers = [{"name": "gw", "url": url, "claims": {"algorithm": "sliding_log"}}, {"name": "gw-bare", "url": url}]
        path.write_text(yaml.safe_dump({**CAMPAIGN, "peers": peers}))
        proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts"], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert not _ours(out)  # its own runs started nothing that outlived them
    own = live_peer("slowapi-moving-window").decisions(logs, store="memory").to_pandas()

    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    suite, gw, bare = rows["boundary_burst__sliding_log__memory"], rows["boundary_burst__gw"], rows["boundary_burst__gw-bare"]
    assert (suite["system"], suite["decided_from"], suite["decision_uncertainty_ms"]) == ("suite", "target", None)
    for row in (gw, bare):
        assert (row["algorithm"], row["system"], row["store"], row["decided_from"]) == (row["run"].split("__")[1], "url",
                                                                                          "external", "client")
        assert row["decision_uncertainty_ms"] > 0
        assert row["requests"] == 40 == suite["requests"]
    info = json.loads((out / "runs" / "boundary_burst__gw" / "run.json").read_text())
    # in virtual time: 20 at once, 20 more 0.33 s later: a moving window of 20 per 1 s refuses the
    # second burst whole. Live, the endpoint and the suite's sliding log each on their own times.
    assert (info["system"], info["decided_from"], info["virtual_over_admission"]) == ("url", "client", 1.0)
    peer_model_agrees("slowapi-moving-window", Policy(20, 1), own)
    suite_model_agrees(out / "runs" / "boundary_burst__sliding_log__memory")
    assert set(info["round_trip_ms"]) == {"p50", "p99", "max"} and info["round_trip_ms"]["p99"] == gw["decision_uncertainty_ms"]
    assert json.loads((out / "runs" / "boundary_burst__gw-bare" / "run.json").read_text())["virtual_over_admission"] is None
    assert not (out / "runs" / "boundary_burst__gw" / "target.yaml").exists()  # nothing of the suite's in front or behind

    # what the client inferred is what the endpoint decided, request by request, on the run's own
    # API keys: the endpoint kept its state between the two url runs, neither met the other's keys
    inferred = pq.read_table(out / "runs" / "boundary_burst__gw" / "decisions.parquet").to_pandas()
    assert set(inferred["source"]) == {"client"}
    prefix = inferred["key"].iloc[0].split("-")[0]
    # the two url runs' prefixes, beside the suite's own requests (keyed by its address, 127.0.0.2);
    # a run started again (a busy moment: its side or workers late) sent from a fresh block each time
    again = sum("started_again" in json.loads((out / "runs" / r / "run.json").read_text())
                for r in ("boundary_burst__gw", "boundary_burst__gw-bare"))
    assert {k.split("-")[0] for k in own["key"] if re.match(r"b\d+-", k)} == {f"b{i}" for i in range(1, 3 + again)}
    assert set(inferred["key"]) <= set(own["key"])
    assert inferred["key"].str.startswith(f"{prefix}-").all()
    ids, mine = set(inferred["request_id"]), own[own["key"].str.startswith(f"{prefix}-")]
    endpoint_said = dict(zip(mine["request_id"], mine["allowed"]))
    assert dict(zip(inferred["request_id"], inferred["allowed"])) == {r: endpoint_said[r] for r in ids}
    assert gw["rejected"] == int((~inferred["allowed"]).sum())
    assert "client-side ±" in (out / "report.md").read_text()
    _the_claimed_twin_is_a_row_beside_the_live_one(out, proc.stdout)


def _the_claimed_twin_is_a_row_beside_the_live_one(out: Path, stdout: str) -> None:
    """The claimed model's replay of the same traffic: its own row right after the live row in the
    summary, the terminal table and the report; none for a url peer that claims nothing."""
    runs = json.loads((out / "summary.json").read_text())["runs"]
    names = [r["run"] for r in runs]
    twin = runs[names.index("boundary_burst__gw") + 1]
    assert (twin["run"], twin["twin_of"], twin["algorithm"], twin["system"]) == (
        "boundary_burst__gw~twin", "boundary_burst__gw", "gw twin: sliding_log", "twin")
    assert (twin["requests"], twin["rejected"], twin["over_admission"]) == (40, 20, 1.0)  # the second burst refused whole
    assert not any(r["twin_of"] == "boundary_burst__gw-bare" for r in runs)
    assert "gw twin: sliding_log" in stdout and "gw twin: sliding_log" in (out / "report.md").read_text()


def test_an_unreachable_url_exits_2_naming_it_and_starts_nothing(refused_run):
    url = f"http://127.0.0.1:{free_ports(1)[0]}"
    assert f"peer my-gateway: {url} is unreachable" in refused_run(
        {**CAMPAIGN, "peers": ["nginx", {"name": "my-gateway", "url": url}]})


@pytest.mark.parametrize(("peer", "message"), [
    ({"name": "gw", "url": "http://127.0.0.1:1", "claims": {"algorithm": "magic"}}, "unknown algorithm 'magic'"),
    ({"name": "nginx", "url": "http://127.0.0.1:1"}, "peers: 'nginx' is a peer of the suite's"),
    ({"name": "a__b", "url": "http://127.0.0.1:1"}, "name"),
    ({"name": "gw", "url": "ftp://x"}, "url"),
    ({"name": "gw", "url": "http://127.0.0.1:1", "key": "cookie"}, "key"),
])
def test_a_bad_url_peer_exits_2_naming_it(refused_run, peer, message):
    assert message in refused_run({**CAMPAIGN, "peers": [peer]})


def test_a_follow_up_is_decided_under_its_origins_key_class_and_client():
    """Client-side rows of a url peer: a closed-loop follow-up (``r<i>.<n>``) carries the planned
    request's key, class and client, never a key of its own."""
    import pandas as pd
    import pyarrow as pa

    from harness.campaign.peers.url import UrlPeer, UrlPeerEntry
    from harness.live.peers.url import UNPLANNED, client_decisions
    from scenarios import build_model

    arrivals = build_model("adversarial_drip", 10, 1, seed=1).arrivals()
    origin = next(iter(arrivals.requests()))
    client = pa.table({"request_id": ["r0", "r0.1", "x9", "warm-up-0-1"], "sent_t": [1.0, 2.0, 3.0, 0.5],
                       "status": [429, 200, 200, 200], "client_address": ["127.10.0.1"] * 3 + ["127.0.0.2"],
                       "role": ["plan"] * 3 + ["warm-up"]})
    rows = client_decisions(client, arrivals, UrlPeer(UrlPeerEntry(name="gw", url="http://127.0.0.1:1"))).to_pandas()
    first, follow_up, stray = rows.to_dict("records")  # the warm-up is not the plan's: no decision
    assert follow_up["key"] == first["key"] == (origin.key or origin.headers.get("x-api-key"))
    assert (follow_up["client_class"], follow_up["client_id"]) == (origin.client_class, origin.client_id)
    assert stray["key"] == UNPLANNED and pd.isna(stray["client_class"])  # the plan does not know it


@pytest.mark.parametrize(("key", "expected"), [
    ("ip", ["ip:127.10.0.1", "ip:127.10.0.2"]),  # the address each answer was sent from
    ("header:X-Client-Class", None),  # a header's value: the origin's class, as the endpoint read it
    ("header:X-Tenant", ["(none)", "(none)"]),  # a header the plan never sent keys nothing
])
def test_a_url_peer_is_keyed_by_the_key_it_declares(key, expected):
    import pyarrow as pa

    from harness.campaign.peers.url import UrlPeer, UrlPeerEntry
    from harness.live.peers.url import client_decisions
    from scenarios import build_model

    arrivals = build_model("adversarial_drip", 10, 1, seed=1).arrivals()
    client = pa.table({"request_id": ["r0", "r1.1"], "sent_t": [1.0, 2.0], "status": [200, 429],
                       "client_address": ["127.10.0.1", "127.10.0.2"], "role": ["plan", "plan"]})
    peer = UrlPeer(UrlPeerEntry(name="gw", url="http://127.0.0.1:1", key=key))
    keys = client_decisions(client, arrivals, peer).column("key").to_pylist()
    assert keys == (expected or [r.client_class for r in list(arrivals.requests())[:2]])


@pytest.mark.parametrize("key", [None, "header:X-API-Key"])
def test_a_url_peers_api_keys_are_the_runs_own(key):
    """An endpoint keeps its limiter's state between runs: each run in a fresh address block sends
    its API keys after the block's prefix, and its rows are keyed by what the endpoint counted."""
    import pyarrow as pa

    from harness.campaign.peers.url import UrlPeer, UrlPeerEntry
    from harness.live.peers.url import client_decisions
    from scenarios import build_model

    plan = LivePlan("adversarial_drip", 10, 1, 1, 0.0, ["http://127.0.0.1:1"], "", address_block=2)
    arrivals = plan.arrivals()
    assert plan.key_prefix == "b2-" and replace(plan, address_block=0).key_prefix == ""
    client = pa.table({"request_id": ["r0", "r0.1"], "sent_t": [1.0, 2.0], "status": [200, 429],
                       "client_address": ["127.10.0.1"] * 2, "role": ["plan", "plan"]})
    peer = UrlPeer(UrlPeerEntry(name="gw", url="http://127.0.0.1:1", key=key))
    keys = client_decisions(client, arrivals, peer, plan.key_prefix).column("key").to_pylist()
    origin = next(iter(build_model("adversarial_drip", 10, 1, seed=1).arrivals().requests()))
    assert keys == ["b2-" + (origin.key or origin.headers["x-api-key"])] * 2
    assert {s.headers["x-api-key"][:3] for s in worker_share(arrivals, 0, 1, plan.key_prefix)} == {"b2-"}
