"""One target node on several cores: N server processes on the node's one port.

Why SO_REUSEPORT rather than uvicorn's own ``--workers`` (``uvicorn/supervisors/multiprocess.py``:
one listening socket, inherited by every worker, each worker's loop accepting from it): with a
shared socket every process's event loop is woken by each new connection and the first to
accept drains the backlog (uvloop accepts until EAGAIN), so a load generator that warms its
connections in one burst finds most of them on one process, and the node's spread depends on
which loop happened to be idle. Here each process has its own listening socket on the port with
SO_REUSEPORT: the kernel hashes each connection (its 4-tuple) to one socket, an even and
load-independent spread, one accept queue per process, no wake-up of the others. Every socket
is bound and listening in the supervisor before any process forks, so "port in use" is still
reported before anything starts, and a connection that reaches a process still starting waits
in that process's queue rather than being refused.

The supervisor (the process started as ``python -m targets``) forks the N processes after the
imports (so each starts in a fraction of a second), then only waits: SIGTERM or SIGINT is
passed on to every process as SIGTERM (a graceful stop: each flushes its own decision log; a
second SIGINT would make uvicorn skip its shutdown), a process that ends on its own stops the
others (the node fails as one), and once all have exited their logs are joined into the node's
one file (``contract.decision_file.join_processes``). Each process dies with the supervisor
(``PR_SET_PDEATHSIG``), so even a SIGKILL of the supervisor alone orphans none.

Process 0 serves the node's admin port; every other process a private admin port of its own
(bound here too), which process 0 reaches to sum the node's counters and to pass a health
override to all (``targets.siblings``). Process 0 opens its listeners only once every other
process has started, so the node's admin port answering means the whole node is up.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from contract import decision_file
from contract.lifetime import die_with_parent

from .cli_args import HOST
from .server import FrozenAfterStartup

SIBLINGS_READY_S = 60.0
"""How long process 0 waits for the others to start before the node gives up."""
CLEAN_EXITS = (0, -signal.SIGTERM, -signal.SIGINT)


@dataclass
class Role:
    """One process's part in the node."""

    index: int
    count: int
    sockets: list[socket.socket]
    """Its API socket, then its admin socket (if the node has an admin port)."""
    admin_port: int | None
    """The admin port this process serves (the node's for process 0, a private one otherwise)."""
    siblings: list[str] = field(default_factory=list)
    """Process 0 only: the other processes' admin URLs."""
    ready_r: int = -1
    ready_w: int = -1
    """A pipe: each other process writes one byte once started; process 0 reads them."""


def node_roles(count: int, port: int, admin_port: int | None, bind: Callable[..., socket.socket],
               host: str = HOST) -> list[Role]:
    """Every process's sockets, all bound (and the API ones listening) before any fork.

    ``bind(port, reuse_port=False)`` is ``python -m targets``'s (one clear "in use" error): a
    plain bind of the port first reports a port held by anyone, SO_REUSEPORT or not (a reuseport
    socket would silently join another group of the same user), then the N reuseport sockets
    take its place. The API listens on ``host``; the admin sockets stay on loopback."""
    bind(port, host=host).close()
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            opened.append(bind(port, reuse_port=True, host=host))
        if admin_port is not None:
            opened.append(bind(admin_port))
            for _ in range(count - 1):
                opened.append(bind(0))
    except BaseException:
        for sock in opened:
            sock.close()
        raise
    api, admins = opened[:count], opened[count:] or [None] * count
    roles = []
    for i, (sock, admin) in enumerate(zip(api, admins)):
        roles.append(Role(i, count, [sock] if admin is None else [sock, admin],
                          None if admin is None else admin.getsockname()[1]))
    roles[0].siblings = [f"http://{HOST}:{r.admin_port}" for r in roles[1:] if r.admin_port is not None]
    return roles


class NodeProcessServer(FrozenAfterStartup):
    """uvicorn's server for one process of a node: process 0 starts listening only after the
    others have (the node's admin port answering means every process is serving)."""

    role: Role

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        role = self.role
        if role.index == 0 and not self._siblings_started():
            self.should_exit = True
            return
        await super().startup(sockets)
        if role.index > 0 and self.started:
            os.write(role.ready_w, b".")

    def _siblings_started(self) -> bool:
        """Blocks the loop on purpose: nothing is served before this returns."""
        role, seen = self.role, 0
        deadline = time.monotonic() + SIBLINGS_READY_S
        while seen < role.count - 1:
            if self.should_exit or time.monotonic() > deadline:
                return False
            if select.select([role.ready_r], [], [], 0.1)[0]:
                seen += len(os.read(role.ready_r, role.count))
        return True


def run_node(roles: list[Role], serve: Callable[[Role], int], log: Path | None) -> int:
    """Fork one process per role running ``serve(role)``; wait for all; join their decision
    logs into ``log``. The exit code: 0 when every process ended cleanly after a stop signal."""
    if log is not None:
        decision_file.remove(log)
        decision_file.remove_processes(log)
    ready_r, ready_w = os.pipe()
    parent = os.getpid()
    children: dict[int, int] = {}
    for role in roles:
        role.ready_r, role.ready_w = ready_r, ready_w
        pid = os.fork()
        if pid == 0:
            _child(role, roles, serve, parent)
        children[pid] = role.index
    for role in roles:
        for sock in role.sockets:
            sock.close()
    os.close(ready_r)
    os.close(ready_w)

    stopping = False

    def stop_all(signum: int | None = None, frame: object = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    failed = False
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        index = children.pop(pid, None)
        code = os.waitstatus_to_exitcode(status)
        # uvicorn re-raises the stop signal once shut down (the process ends by SIGTERM): clean
        if code not in CLEAN_EXITS or not stopping:  # a process that ends on its own takes the node down
            failed = True
            if not stopping:
                print(f"error: target process {index} exited with {code}; stopping the node", file=sys.stderr)
                stop_all()
    if log is not None:
        decision_file.join_processes(log)
    return 1 if failed else 0


def _child(role: Role, roles: list[Role], serve: Callable[[Role], int], parent: int) -> None:
    """A forked process: never returns (``os._exit``), so the supervisor's code never runs twice."""
    code = 1
    try:
        die_with_parent(parent)
        for other in roles:
            if other is not role:
                for sock in other.sockets:
                    sock.close()
        if role.index == 0:
            os.close(role.ready_w)
        else:
            os.close(role.ready_r)
        code = serve(role)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
