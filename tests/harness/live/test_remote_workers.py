"""Remote Locust workers: each ``run_bench.py worker`` is its own process tree, in its own working
directory, joining the master over TCP on 127.0.0.1 exactly as from another machine; the plan,
the clock and the client log travel over the Locust connection only."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from rich.console import Console

from harness.cli.main import main
from harness.cli.progress import RunProgress
from harness.live.remote import remote_clocks
from harness.live.supervise import RunFailed
from harness.processes.ports import free_ports
from scenarios.live_plan import LivePlan, worker_share
from scenarios.remote import CLOCK_BOUND_S, best_clock
from tests.poll import until

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[3]
RUN_BENCH = str(ROOT / "run_bench.py")
CAMPAIGN = {
    "name": "remote", "policy": {"limit": 3, "window_s": 1}, "algorithms": ["none", "fixed_window"],
    "stores": ["memory"], "scenarios": [{"name": "steady", "params": {"clients": 50, "load": 1.0, "duration_s": 1}}],
    "scale": {"lead_s": 2.0, "drain_s": 0.5}, "downstream": {"median_ms": 0},
}


def test_the_clock_is_the_shortest_round_trips_midpoint():
    # (sent on the worker, stamped by the master, received on the worker): the worker is 2 ms ahead
    samples = [(10.000, 9.9990, 10.006), (20.000, 19.9985, 20.001), (30.000, 29.9990, 30.004)]
    clock = best_clock(samples)
    assert clock.offset_s == pytest.approx(20.0005 - 19.9985) and clock.bound_s == pytest.approx(0.0005)
    assert clock.pings == 3 and clock.bounded
    assert not best_clock([(0.0, 0.001, 0.002 + 2 * CLOCK_BOUND_S)]).bounded


def _campaign(tmp_path: Path, **change) -> Path:
    path = tmp_path / "remote.yaml"
    path.write_text(yaml.safe_dump({**CAMPAIGN, **change}))
    return path


def _worker(port: int, workdir: Path, give_up_s: float = 60) -> subprocess.Popen:
    """A remote worker as a machine of its own would run it: its own session and directory."""
    workdir.mkdir(parents=True)
    return subprocess.Popen([sys.executable, RUN_BENCH, "worker", "--master", f"127.0.0.1:{port}", "--give-up",
                             str(give_up_s), "--dir", str(workdir)], cwd=workdir, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _master(campaign: Path, out: Path, port: int, workers: int, timeout_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, RUN_BENCH, "run", str(campaign), "--out", str(out), "--no-charts", "--remote-workers",
                             str(workers), "--master-bind", f"127.0.0.1:{port}", "--remote-timeout", str(timeout_s)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:  # it exited meanwhile
        return []


def _alive(seen: dict[int, psutil.Process]) -> list[str]:
    # is_running() also compares the start time, so a PID reused by another process is not ours
    return [f"{p.pid} {p.cmdline()}" for p in seen.values() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _watch(proc: subprocess.Popen, timeout_s: float) -> tuple[str, dict[int, psutil.Process]]:
    """Wait for ``proc``, remembering every descendant it had on the way."""
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        seen.update((p.pid, p) for p in _descendants(proc.pid))
        time.sleep(0.1)
    out, _ = proc.communicate(timeout=10)
    return out, seen


FOLLOWED = {  # an open-loop run (PlanUser) and a closed-loop one (ReactiveUser: follow-ups by Retry-After)
    "algorithms": ["none"],
    "scenarios": [*CAMPAIGN["scenarios"], {"name": "adversarial_drip", "policy": {"limit": 10, "window_s": 1},
                                           "params": {"duration_s": 2}, "algorithms": ["sliding_window_counter"]}],
}


def test_two_remote_workers_follow_a_campaign_and_their_logs_reach_the_results(tmp_path):
    (port,) = free_ports(1)
    workers = [_worker(port, tmp_path / f"machine-{i}") for i in range(2)]
    out = tmp_path / "res"
    try:
        stdout, seen = _watch(_master(_campaign(tmp_path, **FOLLOWED), out, port, 2, 60), 240)
        said = [w.communicate(timeout=30)[0] for w in workers]
    finally:
        for w in workers:
            w.kill()
    assert "2 failed" not in stdout and "1 failed" not in stdout, stdout[-3000:]
    runs = ("steady__none__memory", "adversarial_drip__sliding_window_counter__memory")
    infos = {run: json.loads((out / "runs" / run / "run.json").read_text()) for run in runs}
    # a run started again (its side was late on a busy machine) is one more run each worker joined
    attempts = len(runs) + sum("started_again" in info for info in infos.values())
    for w, text in zip(workers, said):
        assert w.returncode == 0 and f"the campaign is over after {attempts} run(s)" in text, text
        # nothing of the run was written on the worker's side: it all went over the connection
        assert {p.name for p in (tmp_path / f"machine-{workers.index(w)}").iterdir()} == {"joined", "worker.log"}
    assert _alive(seen) == []
    for run, info in infos.items():
        run_dir = out / "runs" / run
        assert info["status"] == "ok", info.get("error")
        assert [w["index"] for w in info["remote_workers"]] == [0, 1] and info["workers"] == 2
        assert len({w["client_id"] for w in info["remote_workers"]}) == 2
        for clock in info["remote_workers"]:
            assert clock["pings"] == 16 and clock["bounded"] == (clock["bound_ms"] < 1.0)
        assert info["clock_unbounded"] == [w["index"] for w in info["remote_workers"] if not w["bounded"]]
        plan = LivePlan.load(run_dir / "plan.json")
        planned = sorted(s.headers["x-request-id"] for s in worker_share(plan.arrivals(), 0, 1))
        client = pd.read_parquet(run_dir / "client.parquet", filters=[("role", "==", "plan")])
        if run.startswith("steady"):
            assert sorted(client["request_id"]) == planned and len(planned) > 100
        else:  # the planned requests, and any follow-up the answers asked for
            assert set(planned) <= set(client["request_id"]) and len(planned) > 5
        assert (client["status"] > 0).all() and (client["intended_t"] >= plan.start_at).all()
        stats = pd.read_csv(run_dir / "locust" / "stats_stats.csv")
        counted = stats[~stats["Name"].isin(["warm-up", "Aggregated"])]
        assert counted["Request Count"].sum() == len(client)
        assert not (run_dir / "client").exists()  # the handshake folder, consumed


def test_a_worker_that_never_comes_fails_the_run_in_time_and_leaves_nothing(tmp_path):
    (port,) = free_ports(1)
    out = tmp_path / "res"
    campaign = _campaign(tmp_path, algorithms=["none"])
    stdout, seen = _watch(_master(campaign, out, port, 1, 2), 120)
    info = json.loads((out / "runs" / "steady__none__memory" / "run.json").read_text())
    assert info["status"] == "failed"
    assert info["error"].startswith(f"0 of 1 remote workers joined the master on 127.0.0.1:{port} within 2 s")
    assert "0 of 1 remote workers joined" in " ".join(stdout.split())
    assert seen and _alive(seen) == []


def test_ctrl_c_inside_a_remote_run_leaves_no_process_on_the_masters_side(tmp_path):
    # (the master waiting for workers is stopped the same way: the never-coming worker's test)
    (port,) = free_ports(1)
    worker = _worker(port, tmp_path / "machine")
    # a run of 30 s, so a busy machine's late signal still finds it running
    steady = {"name": "steady", "params": {"clients": 50, "load": 1.0, "duration_s": 30}}
    proc = _master(_campaign(tmp_path, scenarios=[steady]), tmp_path / "res", port, 1, 120)
    wanted = "targets"  # the worker has joined and the run's target is up
    seen: dict[int, psutil.Process] = {}
    try:
        def spawned() -> bool:
            seen.update((p.pid, p) for p in _descendants(proc.pid))
            return any(wanted in _cmdline(p) for p in seen.values())

        until(spawned, 90)
        time.sleep(1.0)
        seen.update((p.pid, p) for p in _descendants(proc.pid))
        assert any(wanted in _cmdline(p) for p in seen.values())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        assert _alive(seen) == []
        status = json.loads((tmp_path / "res" / "runs" / "steady__none__memory" / "run.json").read_text())["status"]
        assert status == "interrupted"
    finally:
        worker.terminate()  # the other machine's: SIGTERM stops its Locust worker too
        assert worker.wait(30) == 130


def test_a_worker_with_no_master_gives_up_and_leaves_nothing(tmp_path):
    (port,) = free_ports(1)
    worker = _worker(port, tmp_path / "machine", give_up_s=2)
    said, seen = _watch(worker, 60)
    assert worker.returncode == 1 and f"no master at 127.0.0.1:{port} gave a plan within 2 s" in said
    assert seen and _alive(seen) == []


@pytest.mark.parametrize(("args", "message"), [
    (["--remote-workers", "0"], "--remote-workers: 0: out of bounds, must be between 1 and 1,000"),
    (["--remote-workers", "1", "--master-bind", "here"], "--master-bind must be HOST:PORT with a port in 1-65535, got 'here'"),
    (["--remote-workers", "1", "--workers", "2"], "--workers and --remote-workers exclude each other"),
])
def test_bad_remote_options_exit_2_in_one_line_and_start_nothing(refused_run, args, message):
    assert message in refused_run(CAMPAIGN, *args)


def test_a_bad_master_address_exits_2(capsys):
    assert main(["worker", "--master", "127.0.0.1:99999"]) == 2
    assert "--master must be HOST:PORT" in capsys.readouterr().err


def test_the_harness_never_imports_locust():
    # Locust monkey-patches the process with gevent on import: the runner's process pool would hang
    code = "import sys, harness.cli.main, harness.live.worker, harness.live.remote; print('locust' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True).stdout.strip() == "False"


def _handshake(tmp_path: Path, bounds_s: list[float], logged: list[int]) -> Path:
    folder = tmp_path / "client"
    folder.mkdir()
    for i, bound in enumerate(bounds_s):
        (folder / f"joined-{i}").write_text(f"machine-{i}_id")
        (folder / f"clock-{i}.json").write_text(json.dumps({"client_id": f"machine-{i}_id", "offset_s": -0.0021,
                                                            "bound_s": bound, "pings": 16}))
    for i in logged:
        (folder / f"client-{i}-4242.parquet").write_bytes(b"")
    return folder


def test_run_json_records_each_clock_and_flags_the_unbounded_one(tmp_path):
    info = remote_clocks(_handshake(tmp_path, [0.0002, 0.0015], [0, 1]), 2)
    assert info["remote_workers"] == [
        {"index": 0, "client_id": "machine-0_id", "offset_ms": -2.1, "bound_ms": 0.2, "pings": 16, "bounded": True},
        {"index": 1, "client_id": "machine-1_id", "offset_ms": -2.1, "bound_ms": 1.5, "pings": 16, "bounded": False},
    ]
    assert info["clock_unbounded"] == [1]
    out = io.StringIO()
    with RunProgress(Console(file=out, width=200)) as progress:
        progress.start(1, 1, "steady__none__memory")
        progress.done({"status": "ok", "sent": 10, **info})
    assert out.getvalue().strip().endswith("clock offset of remote worker 1 not bounded below 1 ms")


def test_a_worker_that_sent_no_log_fails_the_run_by_its_index(tmp_path):
    with pytest.raises(RunFailed, match=r"remote worker\(s\) 1 of 2 sent no client log"):
        remote_clocks(_handshake(tmp_path, [0.0002, 0.0002], [0]), 2)
