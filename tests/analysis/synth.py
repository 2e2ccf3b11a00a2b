"""A small synthetic live-style results folder (decisions + client log + cpu.csv + run.json per
run), until the campaign runner makes real ones: it exercises latency, CPU, goodput, recovery,
Retry-After and retry-storm analysis with known shapes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from contract.schema import CLIENT_FILE, CLIENT_SCHEMA, CPU_FILE, DECISION_SCHEMA, DECISIONS_FILE, RUN_FILE, RUNS_DIR

T0 = 1_700_000_000.0
LIMIT, WINDOW = 20.0, 1.0
POLICY = {"limit": LIMIT, "window_s": WINDOW, "burst": None}
DEGRADED = (T0 + 10.0, T0 + 20.0)


def _fixed_window(t: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Admit the first LIMIT per key per aligned window (enough for a synthetic log)."""
    allowed = np.zeros(len(t), dtype=bool)
    seen: dict[tuple[str, int], int] = {}
    for i in np.argsort(t, kind="stable"):
        slot = (key[i], int(t[i] // WINDOW))
        seen[slot] = seen.get(slot, 0) + 1
        allowed[i] = seen[slot] <= LIMIT
    return allowed


def decisions_table(t, key, allowed, cls, request_id, algorithm, retry_after=None) -> pa.Table:
    n = len(t)
    cols = {
        "t": t, "node": ["node0"] * n, "algorithm": [algorithm] * n, "store": ["memory"] * n,
        "limit_name": np.where(cls == "legit", "per_user", "per_ip").tolist(), "key": key.tolist(),
        "cost": np.ones(n), "allowed": allowed, "remaining": np.zeros(n),
        "retry_after_s": retry_after if retry_after is not None else np.where(allowed, 0.0, 0.5),
        "decision_us": np.full(n, 20.0), "client_class": cls.tolist(), "request_id": request_id,
        "client_id": key.tolist(), "route": ["GET /api/items"] * n, "delay_s": np.zeros(n),
        "ideal_allowed": pa.nulls(n, pa.bool_()),  # as live targets write it
        "source": ["memory"] * n, "adaptive_limit": pa.nulls(n, pa.float64()), "arrived_t": t,
    }
    return pa.Table.from_pydict(cols, schema=DECISION_SCHEMA)


def client_table(request_id, intended, sent, done, status, attempt, limit_fields=None) -> pa.Table:
    """A client log; ``limit_fields`` per row (contract.limit_headers.limit_lines), none by default."""
    n = len(request_id)
    return pa.Table.from_pydict({"request_id": request_id, "intended_t": intended, "sent_t": sent, "done_t": done,
                                 "status": np.asarray(status, dtype=np.int32), "attempt": np.asarray(attempt, dtype=np.int32),
                                 "limit_fields": pa.array(limit_fields if limit_fields is not None else [None] * n, pa.string()),
                                 "client_address": pa.nulls(n, pa.string()), "role": ["plan"] * n},
                                schema=CLIENT_SCHEMA)


def write_run(root: Path, scenario: str, algorithm: str, decisions: pa.Table, client: pa.Table | None,
              extra: dict | None = None, cpu_busy: tuple[float, float] = (40.0, 30.0)) -> Path:
    run = root / RUNS_DIR / f"{scenario}__{algorithm}__memory"
    run.mkdir(parents=True)
    pq.write_table(decisions, run / DECISIONS_FILE)
    if client is not None:
        pq.write_table(client, run / CLIENT_FILE)
    info = {"schema": 1, "status": "ok", "scenario": scenario, "algorithm": algorithm, "store": "memory",
            "policy": POLICY, "params": {}, **(extra or {})}
    (run / RUN_FILE).write_text(json.dumps(info))
    ts = T0 + np.arange(0, 31, 1.0)
    rows = ["t,process,role,cpu_percent,rss_bytes"]
    for process, role, busy in (("target:node0", "target", cpu_busy[0]), ("locust:w0", "generator", cpu_busy[1])):
        rows += [f"{t},{process},{role},{0.0 if i == 0 else busy},50000000" for i, t in enumerate(ts)]
    (run / CPU_FILE).write_text("\n".join(rows) + "\n")
    return run


def _open_model(rng: np.random.Generator, algorithm: str, slow_ms: float) -> tuple[pa.Table, pa.Table]:
    """unhealthy_downstream: 30 req/s for 30 s from 6 legit users and one abuser; the downstream
    is slow (``slow_ms``) during the degraded phase and 10 ms otherwise."""
    t = np.sort(T0 + rng.uniform(0, 30, 900))
    key = rng.choice(np.array([f"user-{i}" for i in range(6)] + ["abuser"] * 3), len(t))
    cls = np.where(key == "abuser", "abusive", "legit")
    allowed = _fixed_window(t, key)
    rid = [f"r{i}" for i in range(len(t))]
    base = np.where((t >= DEGRADED[0]) & (t < DEGRADED[1]), slow_ms, 10.0) / 1000.0
    sent = t + 0.0005
    done = sent + np.where(allowed, base * rng.uniform(0.8, 1.2, len(t)), 0.001)
    status = np.where(allowed, 200, 429)
    return (decisions_table(t, key, allowed, cls, rid, algorithm),
            client_table(rid, t, sent, done, status, np.ones(len(t))))


def _retry_storm(rng: np.random.Generator, algorithm: str, backoff: str) -> tuple[pa.Table, pa.Table]:
    """200 clients hit at once; rejected ones retry (after Retry-After, or at once)."""
    rows_d, rows_c = [], []
    pending = [(f"c{i}", T0 + rng.uniform(0, 0.05), 1) for i in range(200)]
    admitted_per_window: dict[int, int] = {}
    while pending:
        pending.sort(key=lambda p: p[1])
        rid, t, attempt = pending.pop(0)
        slot = int(t // WINDOW)
        ok = admitted_per_window.get(slot, 0) < LIMIT
        admitted_per_window[slot] = admitted_per_window.get(slot, 0) + ok
        retry_after = 0.0 if ok else (slot + 1) * WINDOW - t
        rows_d.append((t, rid, ok, retry_after))
        done = t + 0.002
        rows_c.append((rid, t, t, done, 200 if ok else 429, attempt))
        if not ok and attempt < 6:
            wait = retry_after * (1 + rng.uniform(0, 0.5)) if backoff == "retry_after_jitter" else 0.05
            pending.append((rid, done + wait, attempt + 1))
    t, rid, ok, ra = (np.array(c) for c in zip(*rows_d))
    key = np.array(["shared"] * len(t))
    d = decisions_table(t.astype(float), key, ok.astype(bool), np.array(["legit"] * len(t)), rid.tolist(), algorithm,
                        ra.astype(float))
    cr = list(zip(*rows_c))
    return d, client_table(list(cr[0]), list(cr[1]), list(cr[2]), list(cr[3]), list(cr[4]), list(cr[5]))


RAMP_RATES = (10, 20, 30, 40, 50)
"""Requests in each 1 s bin of a synthetic ramp from T0."""
RAMP_PHASE = {"phases": [{"name": "ramp", "start_t": T0, "end_t": T0 + len(RAMP_RATES)}]}


def ramp_logs(algorithm: str, slow: dict[int, float] | None = None, late: tuple[int, ...] = (),
              status: dict[int, int] | None = None) -> tuple[pa.Table, pa.Table]:
    """A ramp of RAMP_RATES: evenly spaced sends, 10 ms answers, requests 2, 7, 12... of each bin
    a 429 (1 ms); in bin k, the last request takes ``slow[k]`` ms, the first is sent 6 ms late if
    k is in ``late``, and the second gets ``status[k]`` instead of 200 (0: no answer)."""
    slow, status = slow or {}, status or {}
    rows = []
    for k, rate in enumerate(RAMP_RATES):
        for i in range(rate):
            t = T0 + k + (i + 0.5) / rate
            sent = t + (0.006 if i == 0 and k in late else 0.0005)
            code = status.get(k, 200) if i == 1 else 429 if i % 5 == 2 else 200
            ms = slow.get(k, 10.0) if i == rate - 1 else 1.0 if code == 429 else 10.0
            rows.append((t, sent, t + ms / 1000.0 if code else float("nan"), code))
    t, sent, done, code = (np.array(c) for c in zip(*rows))
    rid = [f"q{i}" for i in range(len(t))]
    key = np.array(["ramp"] * len(t))
    return (decisions_table(t, key, code != 429, np.array(["legit"] * len(t)), rid, algorithm),
            client_table(rid, t, sent, done, code, np.ones(len(t))))


def make_live_folder(root: Path, seed: int = 7) -> Path:
    """Every chart has data here: boundary burst, unhealthy downstream, retry storm, ramp."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    machine = {"python": "3.11", "cpu_count": 2, "packages": {"numpy": np.__version__}}
    (root / "campaign.yaml").write_text(yaml.safe_dump({"name": "synthetic-live", "policy": POLICY, "machine": machine}))
    for algorithm, slow in (("fixed_window", 400.0), ("adaptive", 40.0)):
        d, c = _open_model(rng, algorithm, slow)
        write_run(root, "unhealthy_downstream", algorithm, d, c,
                  {"phases": [{"name": "degraded", "start_t": DEGRADED[0], "end_t": DEGRADED[1]}]})
    for algorithm in ("fixed_window", "token_bucket"):
        edge = T0 + 5 * WINDOW
        t = np.sort(np.concatenate([edge - rng.uniform(0, 0.1, 20), edge + rng.uniform(0, 0.1, 20)]))
        key = np.array(["attacker"] * len(t))
        allowed = _fixed_window(t, key) if algorithm == "fixed_window" else np.arange(len(t)) < LIMIT
        rid = [f"b{i}" for i in range(len(t))]
        write_run(root, "boundary_burst", algorithm,
                  decisions_table(t, key, allowed, np.array(["abusive"] * len(t)), rid, algorithm),
                  client_table(rid, t, t, t + 0.005, np.where(allowed, 200, 429), np.ones(len(t))))
    for algorithm, backoff in (("fixed_window", "immediate"), ("token_bucket", "retry_after_jitter")):
        d, c = _retry_storm(rng, algorithm, backoff)
        write_run(root, "retry_storm", algorithm, d, c, {"scenario_params": {"backoff": backoff}})
    for algorithm, slow in (("fixed_window", {3: 300.0, 4: 300.0}), ("token_bucket", {})):
        write_run(root, "ramp", algorithm, *ramp_logs(algorithm, slow), RAMP_PHASE)
    return root
