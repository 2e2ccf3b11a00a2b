"""Redis servers of our own: one standalone ``redis-server`` or a 3-master cluster, on free
ports, without persistence, each in its own temp dir and process group; used by the tests and
by campaigns that get no REDIS_URL.

``stop()`` kills the whole process group and waits, so no server outlives its owner;
``start()`` after ``stop()`` reuses the same port (a restart, as the fault tests need).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from .groups import stop_group
from .ports import free_port
from .spawn import spawn

BINARY = "redis-server"
CLI = "redis-cli"
START_TIMEOUT_S = 20.0


class RedisServerError(RuntimeError):
    """A server of ours that could not start (binary missing, port taken, cluster not forming)."""


class RedisServer:
    def __init__(self, port: int | None = None, *, cluster: bool = False, binary: str = BINARY,
                 extra_args: tuple[str, ...] = ()) -> None:
        if shutil.which(binary) is None:
            raise RedisServerError(f"{binary!r} not found on PATH")
        self.binary, self.cluster, self.extra_args = binary, cluster, extra_args
        try:
            self.port = port or free_port(cluster_bus=cluster)
        except OSError as exc:
            raise RedisServerError(str(exc)) from None
        self.dir = Path(tempfile.mkdtemp(prefix=f"redis-{self.port}-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if self.process is not None:
            return self
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.dir), "--daemonize", "no", "--logfile", "redis.log"]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"]
        self.process = spawn([*args, *self.extra_args], cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    log = (self.dir / "redis.log").read_text(errors="replace")[-500:] if (self.dir / "redis.log").exists() else ""
                    self.process = None
                    raise RedisServerError(f"redis-server on port {self.port} exited at start: {log}")
                with contextlib.suppress(redis.RedisError):
                    if client.ping():
                        return
                if time.monotonic() > deadline:
                    self.stop()
                    raise RedisServerError(f"redis-server on port {self.port} did not answer within {START_TIMEOUT_S:.0f} s")
                time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        """Kill the server's process group and wait for it (the temp dir stays for a restart)."""
        process, self.process = self.process, None
        if process is not None:
            stop_group(process, graceful=False)  # nothing to flush: no persistence

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisClusterServers:
    """Three cluster-enabled masters joined with ``redis-cli --cluster create`` (no replicas)."""

    def __init__(self, masters: int = 3) -> None:
        if shutil.which(CLI) is None:
            raise RedisServerError(f"{CLI!r} not found on PATH")
        self.nodes = [RedisServer(cluster=True) for _ in range(masters)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisClusterServers:
        try:
            for node in self.nodes:
                node.start()
            addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
            subprocess.run([CLI, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
                           check=True, capture_output=True, timeout=60)
            self._wait_ok()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        clients = [redis.Redis(port=n.port, socket_timeout=1) for n in self.nodes]
        try:
            while not all(c.cluster("info").get("cluster_state") == "ok" for c in clients):
                if time.monotonic() > deadline:
                    raise RedisServerError("cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        finally:
            for c in clients:
                c.close()

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> RedisClusterServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
