"""The raw replay engine (in this process) against a real target process and a plain-socket
server that misbehaves on purpose (huge requests, a close before the answer), and ``PlanUser``
through the campaign runner: the client log holds exactly the plan's requests and Locust's stats
count the same requests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import gevent
import pandas as pd
import pytest

from harness.campaign.live import Campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.processes.target import running_target
from scenarios import raw_replay
from scenarios.live_plan import LivePlan, groups, worker_share
from scenarios.raw_replay import RawReplay, wires

pytestmark = pytest.mark.process  # every test here starts processes


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    with running_target(["--algorithm", "fixed_window", "--limit", "30", "--window", "60", "--service-ms", "0"],
                        log_dir=tmp_path_factory.mktemp("target")) as running:
        yield running


def _replay(url: str, n: int, groups_of: int) -> tuple[RawReplay, list[tuple[int, int, int]]]:
    answers: list[tuple[int, int, int]] = []
    reqs = wires([("GET", "/api/items", {"x-api-key": "k", "x-request-id": f"e{i}"}) for i in range(n)], [url] * n)
    engine = RawReplay(reqs, lambda i, status, length: answers.append((i, status, length)))
    assert engine.warm({reqs[0].origin: 4}) == [200] * 4
    for start in range(0, n, groups_of):
        engine.send_group(range(start, min(n, start + groups_of)))
        engine.wait_until(time.time() + 0.001)
    with gevent.Timeout(10):
        engine.drain()
    engine.close()
    return engine, answers


def test_every_request_is_answered_once_and_the_limit_is_the_targets(target):
    engine, answers = _replay(target.url, 50, 5)
    assert sorted(i for i, _, _ in answers) == list(range(50))
    assert sorted(engine.status.tolist()) == [200] * 30 + [429] * 20  # 30 per minute on one key
    assert all(length > 0 for _, _, length in answers)
    assert (engine.done >= engine.sent).all()


def test_past_the_connection_cap_requests_queue_on_open_connections(target, monkeypatch):
    monkeypatch.setattr(raw_replay, "MAX_CONNECTIONS", 4)
    engine, answers = _replay(target.url, 40, 40)  # one group of 40 on 4 connections: pipelined
    assert sorted(i for i, _, _ in answers) == list(range(40))
    assert set(engine.status.tolist()) <= {200, 429} and len(engine.pools) == 1
    assert len(next(iter(engine.pools.values())).all) == 4


def test_plan_user_logs_exactly_the_plan_and_locust_counts_it(tmp_path):
    campaign = Campaign.model_validate({
        "name": "raw", "policy": {"limit": 3, "window_s": 1}, "algorithms": ["none"],
        "scenarios": [{"name": "steady", "params": {"clients": 100, "load": 1.0, "duration_s": 1}}],
        "scale": {"workers": 2, "lead_s": 2.5, "drain_s": 0.5}, "downstream": {"median_ms": 0},
    })
    run = plan_runs(campaign)[0]
    runner = LiveRunner(campaign, tmp_path)
    try:
        info = runner.execute(run)
    finally:
        runner.close()
    assert info["status"] == "ok", info.get("error")
    run_dir = tmp_path / "runs" / run.name
    plan = LivePlan.load(run_dir / "plan.json")
    shots = worker_share(plan.arrivals(), 0, 1)
    intended = {s.headers["x-request-id"]: plan.start_at + g[0].t for g in groups(shots, plan.burst_gap_s) for s in g}
    logged = pd.read_parquet(run_dir / "client.parquet")
    warm_up, client = logged[logged["role"] == "warm-up"], logged[logged["role"] == "plan"]
    assert len(warm_up) + len(client) == len(logged)
    # each worker asked once whether the target was up, from the warm-up's own address
    assert len(warm_up) == 2 and set(warm_up["status"]) == {200} and set(warm_up["client_address"]) == {"127.0.0.2"}
    assert sorted(client["request_id"]) == sorted(intended) and len(client) == len(intended) > 200
    # every request left from its own client's address: a client, an address, none the warm-up's
    planned = plan.arrivals().client_id
    own = dict(zip(planned, plan.addresses()))
    assert [own[planned[int(r[1:])]] for r in client["request_id"]] == client["client_address"].tolist()
    assert client["client_address"].nunique() == len(own) == len(set(own.values())) > 90  # of 100: some sent none
    # each worker groups its own share: a request's intended time is its group's deadline, at or before its own
    for row in client.itertuples():
        assert intended[row.request_id] - 0.0021 <= row.intended_t <= plan.start_at + shots[int(row.request_id[1:])].t
    assert set(client["status"]) == {200} and (client["attempt"] == 1).all()
    stats = pd.read_csv(run_dir / "locust" / "stats_stats.csv")
    counted = stats[~stats["Name"].isin(["warm-up", "Aggregated"])]
    assert counted["Request Count"].sum() == len(client) and counted["Failure Count"].sum() == 0


TOY_SERVER = r'''
import socket, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
print(srv.getsockname()[1], flush=True)

def serve(conn):
    buf = b""
    while True:
        data = conn.recv(1 << 20)
        if not data:
            return
        buf += data
        while b"\r\n\r\n" in buf:
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            if lines[0].startswith(b"GET /close"):
                conn.close()
                return
            fields = dict(line.split(b": ", 1) for line in lines[1:])
            whole = fields.get(b"x-fill", b"") == b"a" * int(fields.get(b"x-fill-length", b"0"))
            reply = b"HTTP/1.1 %d X\r\ncontent-length: 2\r\n\r\nok" % (200 if whole else 400)
            conn.sendall(reply * (2 if lines[0].startswith(b"GET /twice") else 1))

while True:
    threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
'''


@pytest.fixture()
def toy():
    """A plain-socket HTTP server in its own process: 200 when a request's x-fill header holds
    x-fill-length bytes, a close without an answer for /close, two answers for /twice."""
    proc = subprocess.Popen([sys.executable, "-c", TOY_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{proc.stdout.readline().strip()}"
    finally:
        proc.kill()
        proc.wait()


def _run(engine: RawReplay, indexes: range) -> None:
    engine.send_group(indexes)
    with gevent.Timeout(10):
        engine.drain()


def test_a_request_larger_than_the_socket_buffer_is_written_whole(toy):
    fill = 8 * 1024 * 1024  # far beyond a loopback socket's send buffer: written as room appears
    reqs = wires([("GET", "/big", {"x-fill-length": str(fill), "x-fill": "a" * fill}),
                  ("GET", "/small", {"x-fill-length": "1", "x-fill": "a"})], [toy] * 2)
    engine = RawReplay(reqs, lambda *_: None)
    engine.warm({reqs[0].origin: 1})  # both requests on one connection: the second waits behind the first's bytes
    _run(engine, range(2))
    assert engine.status.tolist() == [200, 200]
    engine.close()


def test_a_connection_closed_before_its_reply_answers_no_status_and_is_replaced(toy):
    answers: list[tuple[int, int, int]] = []
    reqs = wires([("GET", "/close", {}), ("GET", "/after", {})], [toy] * 2)
    engine = RawReplay(reqs, lambda i, status, length: answers.append((i, status, length)))
    engine.warm({reqs[0].origin: 1})
    _run(engine, range(1))
    assert answers == [(0, 0, 0)] and engine.outstanding == 0 and engine.done[0] >= engine.sent[0]
    pool = next(iter(engine.pools.values()))
    assert pool.all == [] and pool.idle == []
    _run(engine, range(1, 2))  # no idle connection left: a new one is opened for it
    assert answers[1] == (1, 200, len(b"HTTP/1.1 200 X\r\ncontent-length: 2\r\n\r\nok")) and len(pool.all) == 1
    engine.close()


def test_warming_a_host_nothing_listens_on_raises():
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reqs = wires([("GET", "/", {})], [f"http://127.0.0.1:{port}"])
    engine = RawReplay(reqs, lambda *_: None)
    with pytest.raises(OSError):
        engine.warm({reqs[0].origin: 2})
    assert next(iter(engine.pools.values())).all == []
    engine.close()


def test_an_answer_nobody_asked_for_is_dropped(toy):
    answers: list[tuple[int, int, int]] = []
    reqs = wires([("GET", "/twice", {})], [toy])
    engine = RawReplay(reqs, lambda i, status, length: answers.append((i, status, length)))
    engine.warm({reqs[0].origin: 1})
    _run(engine, range(1))
    engine.wait_until(time.time() + 0.2)  # the second answer has arrived by now, and is nobody's
    assert [(i, status) for i, status, _ in answers] == [(0, 200)] and engine.outstanding == 0
    engine.close()


def test_a_replay_behind_its_plan_still_lets_other_greenlets_run(target, monkeypatch):
    """Every deadline already past (a worker that cannot keep up): the loop sends group after
    group, and still lets gevent run (Locust's heartbeats) at each group, YIELD_S being 0 here so
    that how fast the machine sends decides nothing: the old loop never yielded there at all."""
    monkeypatch.setattr(raw_replay, "YIELD_S", 0.0)
    ticks = []
    ticker = gevent.spawn(lambda: [ticks.append(1) or gevent.sleep(0) for _ in iter(int, 1)])
    n = 200
    reqs = wires([("GET", "/healthz", {"x-request-id": f"b{i}"}) for i in range(n)], [target.url] * n)
    engine = RawReplay(reqs, lambda *_: None)
    assert engine.warm({reqs[0].origin: 4}) == [200] * 4
    ticks.clear()
    for i in range(n):
        engine.wait_until(0.0)  # 1970: long past
        engine.send_group([i])
    sent_with_ticks = len(ticks)
    with gevent.Timeout(10):
        engine.drain()
    ticker.kill()
    engine.close()
    assert sent_with_ticks >= n - 1  # a turn of the ticker between every two groups
    assert sorted(engine.status.tolist()) == [200] * n
