"""A campaign's ``{name: traefik, config: FILE}`` and ``{name: envoy, config: FILE}`` peers: the
user's own Traefik middleware and Istio EnvoyFilter (their limits as written, their upstream the
suite's downstream) run by the real products beside a suite target on the same traffic, each
replayed at its file's limit and judged with the same metrics as every run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from harness.cli.main import main
from harness.live.peers.standalone import mapped_decisions
from targets.algorithms import Policy
from tests.harness.live.peers.test_envoy import needs_envoy
from tests.harness.live.peers.test_traefik import needs_traefik
from tests.recorded import in_time_order, peer_model_agrees

CONFIGS = Path(__file__).resolve().parents[4] / "campaigns" / "configs"
POLICY = Policy(10, 1.0, 6)
TRAEFIK = """http:
  middlewares:
    api-limit:
      rateLimit:
        average: 10
        period: 1s
        burst: 6
"""
"""Traefik's documented middleware at 10 per 1 s, burst 6."""


def istio(max_tokens: int, per_fill: int) -> str:
    """Istio's documented EnvoyFilter (its Deployment left out: one replica) with its bucket changed."""
    text = (CONFIGS / "istio-local-ratelimit.yaml").read_text().split("\n---")[0]
    return (text.replace("max_tokens: 4", f"max_tokens: {max_tokens}")
            .replace("tokens_per_fill: 4", f"tokens_per_fill: {per_fill}").replace("fill_interval: 60s", "fill_interval: 1s"))


def campaign(tmp_path: Path, envoy: str) -> Path:
    (tmp_path / "traefik.yaml").write_text(TRAEFIK)
    (tmp_path / "envoy.yaml").write_text(envoy)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({
        "name": "product-files", "policy": {"limit": 10, "window_s": 1, "burst": 6}, "algorithms": ["token_bucket"],
        "peers": [{"name": "traefik", "config": "traefik.yaml"}, {"name": "envoy", "config": "envoy.yaml"}],
        "scenarios": [{"name": "boundary_burst", "params": {"instant": True, "boundaries": 1, "delta_s": 0.33}}],
        "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 0.5}, "downstream": {"concurrency": 8, "median_ms": 5}}))
    return path


def test_two_product_files_with_different_limits_are_refused_before_anything_starts(tmp_path, capsys):
    path = campaign(tmp_path, istio(5, 5))
    assert main(["run", str(path), "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "enforces 5 per 1 s, burst 5" in err and "set the campaign policy to the file's" in err
    assert not (tmp_path / "res").exists()


@needs_traefik
@needs_envoy
@pytest.mark.process
def test_traefik_and_envoy_files_run_live_beside_the_suite_judged_by_their_own_models(tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["run", str(campaign(tmp_path, istio(6, 10))), "--out", str(out), "--no-charts"]) == 0, capsys.readouterr()
    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    assert rows["boundary_burst__token_bucket__memory"]["system"] == "suite"  # beside them, on the same traffic
    found = {}
    for peer, line in (("traefik", 4), ("envoy", 30)):
        run = out / "runs" / f"boundary_burst__{peer}"
        info = json.loads((run / "run.json").read_text())
        assert (info["status"], info["system"], info["store"]) == ("ok", peer, "zone")
        assert info["policy"] == {"limit": 10, "window_s": 1.0, "burst": 6}  # the file's
        assert (info["peer_config"]["line"], info["peer_config"]["limit"], info["peer_config"]["burst"]) == (line, 10, 6)
        decisions = pq.read_table(run / "decisions.parquet").to_pandas()
        assert len(decisions) == info["planned_requests"] == 20
        assert rows[f"boundary_burst__{peer}"]["requests"] - rows[f"boundary_burst__{peer}"]["rejected"] == int(
            decisions["allowed"].sum())
        found[peer] = decisions
    # Envoy's one bucket for every client: exactly its model on its own decision times
    peer_model_agrees("envoy", POLICY, found["envoy"])
    # Traefik: 10 at once on 10 connections, 10 more 0.33 s later. Its model admits the burst of 6,
    # then the 3 tokens refilled. Traefik may admit more: its Allow() looks a new source's bucket up
    # and sets it in two steps (in_memory_limiter.go), so requests that arrive between the two each
    # make a full bucket of their own, and the bucket stored last keeps what the first burst left of
    # it for the second. It is never stricter than its model; the second burst gets at most what a
    # bucket created full would give it; and it gets more than the model only after a first burst
    # that raced (a stored bucket with tokens left means every later request of the first burst
    # was admitted, or a lost bucket admitted its 6 beside it).
    traefik = in_time_order(found["traefik"])
    said = [bool(m) for m in mapped_decisions("traefik", POLICY, traefik["t"], traefik["key"])]
    # the bursts told apart where Traefik's recorded times leave their longest pause (a busy moment
    # may spread a burst or delay the first: a fixed cut at half the 0.33 s would misplace requests)
    cut = int(traefik["t"].diff().to_numpy()[1:].argmax()) + 1
    first = traefik.index.to_numpy() < cut
    admitted = traefik["allowed"].to_numpy()
    model_first, model_second = sum(s for s, f in zip(said, first) if f), sum(s for s, f in zip(said, first) if not f)
    assert model_first == 6 and model_second >= 3  # the burst; then 3.3 tokens back 0.33 s later, more if late
    got_first, got_second = int(admitted[first].sum()), int(admitted[~first].sum())
    assert got_first >= model_first and got_second >= model_second
    second = traefik[~first]
    assert got_second <= sum(bool(m) for m in mapped_decisions("traefik", POLICY, second["t"], second["key"]))
    assert got_second == model_second or got_first > model_first
