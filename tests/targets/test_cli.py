"""``python -m targets`` refuses bad input: one message naming the field, exit 2, no port."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from harness.processes.ports import free_port

pytestmark = pytest.mark.process  # every test here starts processes


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "targets", *args], capture_output=True, text=True, timeout=600)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize(("args", "field"), [
    (["--algorithm", "leaky_tap"], "algorithm"),
    (["--cost", "search=-2"], "routes.search.cost"),
    (["--schedule", "0:healthy,soon:degraded"], "downstream.schedule"),
    (["--param", "capacity=-1"], "params"),
    (["--config", "/nonexistent/target.yaml"], "--config"),
    (["--limit", "5", "--cost", "reports=20"], "routes.reports.cost"),  # a cost the user set that is never admitted
    (["--limit", "3", "--window", "1e-20"], "params: window_s=1e-20: out of bounds, must be between 1e-09 and 1,000,000,000,000"),
    (["--max-head-bytes", "100"], "--max-head-bytes"),
    (["--head-timeout", "0"], "--head-timeout"),
    (["--keep-alive", "-1"], "--keep-alive"),
    (["--processes", "0"], "processes"),
    (["--host", "localhost:80"], "--host"),
])
def test_bad_config_exits_2_naming_the_field_without_a_port(args, field):
    port = free_port()
    done = run("--port", str(port), *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {field}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not listening(port)


@pytest.mark.parametrize(("args", "said"), [
    (["--port", "99999"], "--port=99999: out of bounds, must be between 1 and 65,535"),
    (["--port", "0"], "--port=0: out of bounds, must be between 1 and 65,535"),
    (["--port", "-1"], "--port=-1: out of bounds, must be between 1 and 65,535"),
    (["--port", "8000", "--admin-port", "70000"], "admin_port: Input should be less than or equal to 65535"),
])
def test_a_port_out_of_range_is_named_as_such(args, said):
    done = run(*args)
    assert done.returncode == 2 and done.stderr == f"error: {said}\n"


def test_an_unknown_param_names_the_algorithm_and_its_fields():
    """Three window algorithms share one params class: the message names the one asked for."""
    done = run("--port", str(free_port()), "--algorithm", "sliding_log", "--param", "zzz=1")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: params: unknown --param 'zzz' for sliding_log; valid: limit, window_s"


@pytest.mark.parametrize("reuse_port", [False, True], ids=["plain", "reuseport"])
@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_port_in_use_exits_2_with_a_clear_message(processes, reuse_port):
    """Even held by an SO_REUSEPORT socket of the same user (which a node's own would join)."""
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, int(reuse_port))
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run("--port", str(port), "--algorithm", "gcra", "--processes", processes)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: port {port} on 127.0.0.1 is already in use"


def test_an_admin_port_equal_to_the_api_port_or_in_use_exits_2():
    port = free_port()
    done = run("--port", str(port), "--admin-port", str(port))
    assert done.returncode == 2 and done.stderr.startswith("error: --admin-port: must differ"), done.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        admin = busy.getsockname()[1]
        done = run("--port", str(port), "--admin-port", str(admin))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: port {admin} on 127.0.0.1 is already in use"
    assert not listening(port)


def _answers(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, port)) == 0


@pytest.mark.parametrize("processes", ["1", "2"])
def test_host_opens_the_api_to_other_addresses_and_keeps_the_admin_on_loopback(processes, tmp_path):
    """``--host 0.0.0.0`` (load from other machines): the API answers on every address, here
    127.0.0.2; the admin port stays on 127.0.0.1 only. Without it, 127.0.0.2 reaches nothing."""
    from harness.processes.target import start_target

    for host, wide in (("0.0.0.0", True), ("127.0.0.1", False)):
        port, admin = free_port(), free_port()
        target = start_target(["--algorithm", "none", "--host", host, "--processes", processes], log_dir=tmp_path,
                              port=port, admin_port=admin)
        try:
            assert _answers("127.0.0.2", port) is wide
            assert _answers("127.0.0.1", admin) and not _answers("127.0.0.2", admin)
        finally:
            target.stop()
