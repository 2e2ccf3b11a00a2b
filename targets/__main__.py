"""``python -m targets``: serve one target on 127.0.0.1 with uvicorn (uvloop, httptools, no
access log).

Bad configuration or a port in use: one line on stderr naming the problem, exit 2, no port
left open. The sockets are bound here, before uvicorn starts, so "in use" is reported cleanly.
``--admin-port`` opens a second loopback listener, the only one serving ``/_bench/*``.
``--processes N`` serves the node from N processes on the one port (targets/multiprocess.py).
"""

from __future__ import annotations

import argparse
import errno
import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract import decision_file
from contract.errors import BadInput
from contract.stores import REDIS_MODES, STORE_KINDS
from contract.urls import PORTS

from .cli_args import EXIT_BAD_INPUT, HOST, Parser, key_value
from .connection_caps import BACKLOG, MAX_CONNECTIONS, MAX_PER_ADDRESS

if TYPE_CHECKING:
    from .config import TargetConfig
    from .multiprocess import Role

KEEP_ALIVE_S = 300
MAX_HEAD_BYTES = 32 * 1024
"""Request line and headers together (nginx's default buffers allow 4 x 8 KiB); see http_protocol."""
HEAD_TIMEOUT_S = 10.0
"""From a request head's first byte to its last."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m targets", description="Serve one rate-limited target (on 127.0.0.1 unless --host).")
    p.add_argument("--port", type=int, required=True, help="TCP port of the API")
    p.add_argument("--host", default=HOST, help="address the API listens on (default 127.0.0.1; 0.0.0.0 serves load "
                                               "generators on other machines; the admin port stays on 127.0.0.1)")
    p.add_argument("--admin-port", type=int, help="TCP port on 127.0.0.1 for the admin endpoints /_bench/* (default: none)")
    p.add_argument("--config", type=Path, help="target config (YAML or JSON); flags below override it")
    p.add_argument("--algorithm", help="algorithm name (see run_bench.py list); default token_bucket")
    p.add_argument("--limit", type=float, help="L: cost units per window (default 100)")
    p.add_argument("--window", type=float, help="W: window in seconds (default 60)")
    p.add_argument("--burst", type=float, help="explicit burst allowance (default L)")
    p.add_argument("--param", action="append", type=key_value, default=[], metavar="KEY=VALUE", help="algorithm parameter")
    p.add_argument("--cost", action="append", type=key_value, default=[], metavar="ROUTE=COST",
                   help="route cost (items 1, search 2, reports 20, login 1 by default)")
    p.add_argument("--store", choices=list(STORE_KINDS), help="where limiter state lives (default memory)")
    p.add_argument("--redis-url", help="the redis store's URL (default: $REDIS_URL)")
    p.add_argument("--redis-mode", choices=list(REDIS_MODES), help="redis store mode (default shared)")
    p.add_argument("--nodes", type=int, help="target nodes sharing the redis store's limit (default 1)")
    p.add_argument("--max-keys", type=int, help="memory store bound (default 100000)")
    p.add_argument("--trusted-proxies", type=int, help="X-Forwarded-For hops to trust (default 0)")
    p.add_argument("--repeated-key", choices=["refuse", "first"],
                   help="an identity header (X-API-Key, X-User, X-Tenant, X-Tier) sent twice: refuse (default: 400) "
                        "or count its first value")
    p.add_argument("--concurrency", type=int, help="downstream concurrency (default 32)")
    p.add_argument("--service-ms", type=float, help="downstream median service time in ms (default 20; 0: none)")
    p.add_argument("--service-sigma", type=float, help="lognormal sigma of the service time (default 0.5)")
    p.add_argument("--schedule", help='downstream health, e.g. "0:healthy,30:degraded:5,60:recovered"')
    p.add_argument("--start-at", type=float, help="epoch seconds the schedule counts from (default: now)")
    p.add_argument("--decision-log", type=Path, help="write the decision log to this Parquet file")
    p.add_argument("--node", help="node name in logs (default node-1)")
    p.add_argument("--processes", type=int, help="server processes on the one port, SO_REUSEPORT (default 1); "
                                                 "on the memory store each keeps its own counts: up to N x the limit")
    p.add_argument("--max-head-bytes", type=int, default=MAX_HEAD_BYTES,
                   help=f"request line and headers larger than this get 431 and the close (default {MAX_HEAD_BYTES})")
    p.add_argument("--head-timeout", type=float, default=HEAD_TIMEOUT_S, metavar="SECONDS",
                   help=f"a request head not complete this long after its first byte gets 408 and the close (default {HEAD_TIMEOUT_S:g})")
    p.add_argument("--keep-alive", type=float, default=KEEP_ALIVE_S, metavar="SECONDS",
                   help=f"an idle connection (new, or after an answer) is closed after this long (default {KEEP_ALIVE_S})")
    p.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                   help=f"connections one process holds open; past it a new one gets 503 and the close (default {MAX_CONNECTIONS})")
    p.add_argument("--max-conns-per-address", type=int, default=MAX_PER_ADDRESS, metavar="N",
                   help=f"connections one client address holds open per process, as NGINX's limit_conn; past it a "
                        f"new one gets 503 and the close (default {MAX_PER_ADDRESS})")
    p.add_argument("--decide-in", choices=["protocol", "app"], default="protocol",
                   help="where a memory-store request is decided: protocol (default: as its head is parsed, a refusal "
                        "answered before uvicorn's request cycle) or app (the ASGI middleware; what bench targets "
                        "compares)")
    p.add_argument("--server", choices=["tuned", "stock"], default="tuned",
                   help="tuned (default: the bounded httptools protocol deciding as a head is parsed, the draining "
                        "listener, the frozen heap) or stock (uvicorn's own Server and protocol, the ASGI middleware "
                        "deciding every request: the FastAPI app as a user runs it; one process)")
    p.add_argument("--admitted-headers", choices=["full", "draft", "none"],
                   help="quota headers on admitted responses: full (default), draft (RateLimit-Policy and RateLimit only) "
                        "or none; a 429 always carries all")
    return p


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields the command line sets (only flags actually given)."""
    given = {
        "algorithm": args.algorithm, "limit": args.limit, "window_s": args.window, "burst": args.burst,
        "node": args.node, "admitted_headers": args.admitted_headers, "admin_port": args.admin_port,
        "processes": args.processes,
        "store": {"name": args.store, "max_keys": args.max_keys, "url": args.redis_url, "mode": args.redis_mode,
                  "nodes": args.nodes},
        "keys": {"trusted_proxies": args.trusted_proxies, "repeated_key": args.repeated_key},
        "downstream": {"concurrency": args.concurrency, "schedule": args.schedule, "start_at": args.start_at,
                       "service_time": {"median_ms": args.service_ms, "sigma": args.service_sigma}},
        "decision_log": {"path": args.decision_log},
        "params": dict(args.param) or None,
        "routes": {route: {"cost": cost} for route, cost in args.cost} or None,
    }
    return _prune(given)


def _prune(tree: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            value = _prune(value)
        if value not in (None, {}):
            out[key] = value
    return out


def bind(port: int, reuse_port: bool = False, host: str = HOST) -> socket.socket:
    """A socket bound on ``host:port`` and listening (``reuse_port``: one of a node's SO_REUSEPORT
    group). Listening here, not when the server starts: with SO_REUSEADDR a bind succeeds beside
    another process's socket bound but not listening yet, and only listen() says the port is taken
    (then here, as "in use" and exit 2, which the harness answers with another port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} on {host} is already in use") from None
        raise PortInUse(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


class PortInUse(OSError):
    pass


def check_server_args(args: argparse.Namespace) -> None:
    """The server's own flags (the listener, the connection caps, the timeouts) within their bounds."""
    from .config import ConfigError as error
    PORTS.check("--port", args.port, error)
    try:
        socket.inet_aton(args.host)
    except OSError:
        raise error(f"--host: {args.host!r} is not an IPv4 address (e.g. 127.0.0.1 or 0.0.0.0)") from None
    if args.max_head_bytes < 1024:
        raise error(f"--max-head-bytes: must be at least 1024, got {args.max_head_bytes}")
    for flag, count in (("--max-connections", args.max_connections), ("--max-conns-per-address", args.max_conns_per_address)):
        if not 1 <= count <= 1_000_000:
            raise error(f"{flag}: must be 1..1000000, got {count}")
    for flag, seconds in (("--head-timeout", args.head_timeout), ("--keep-alive", args.keep_alive)):
        if not 0 < seconds <= 3600:
            raise error(f"{flag}: must be above 0 and at most 3600 seconds, got {seconds:g}")
    if args.server == "stock" and (args.processes or 1) > 1:
        raise error(f"--server stock: serves one process (uvicorn's own Server), got --processes {args.processes}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .config import ConfigError, load
    from .layer_store import probe
    from .multiprocess import node_roles

    sockets: list[socket.socket] = []
    roles: list[Role] = []
    try:
        check_server_args(args)
        warnings: list[str] = []
        config = load(args.config, overrides(args), warnings)
        if config.admin_port == args.port:
            raise ConfigError(f"--admin-port: must differ from --port ({args.port})")
        probe(config.store)
        if config.processes > 1:
            roles = node_roles(config.processes, args.port, config.admin_port, bind, host=args.host)
        else:
            sockets.append(bind(args.port, host=args.host))
            if config.admin_port is not None:
                sockets.append(bind(config.admin_port))
    except (BadInput, PortInUse) as exc:
        for sock in sockets:
            sock.close()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)

    # the Redis store's outage lines (one when an outage starts, one when it ends) go to stderr
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not roles:
        return serve(config, sockets, args)

    # imported before the fork: every process starts with them loaded
    import uvicorn  # noqa: F401

    from . import app  # noqa: F401
    from .multiprocess import run_node

    def serve_role(role: Role) -> int:
        log = config.decision_log.path
        mine = config if log is None else config.model_copy(update={
            "decision_log": config.decision_log.model_copy(update={"path": decision_file.process_path(log, role.index)})})
        return serve(mine.model_copy(update={"admin_port": role.admin_port}), role.sockets, args, role)

    return run_node(roles, serve_role, config.decision_log.path)


def serve(config: TargetConfig, sockets: list[socket.socket], args: argparse.Namespace, role: Role | None = None) -> int:
    """One uvicorn server on ``sockets`` (the API port, then the admin port if any) until stopped."""
    import uvicorn

    if args.server == "stock":
        return _serve_stock(config, sockets, args)

    from .app import by_listener, create_app
    from .connection_caps import ConnectionCaps, room_for
    from .early_refusal import RefusingHttpToolsProtocol
    from .multiprocess import NodeProcessServer
    from .server import FrozenAfterStartup

    # keep-alive outlasts any idle gap of a run: uvicorn's default 5 s closed the connections a
    # load generator had warmed just before its first burst, which then paid for new ones.
    # proxy_headers off: uvicorn would otherwise rewrite the client address from X-Forwarded-For
    # for any loopback peer; the key policy (--trusted-proxies) is the only reader of that header.
    # ws none: no route speaks WebSocket, so no upgrade is ever offered.
    app = create_app(config) if role is None else create_app(config, role.index, role.siblings)
    served = app if config.admin_port is None else by_listener(app, config.admin_port)
    room_for(args.max_connections)
    caps = ConnectionCaps(args.max_connections, args.max_conns_per_address)
    decider = app.state.target.decider if args.decide_in == "protocol" else None
    protocol = RefusingHttpToolsProtocol.bounded(args.max_head_bytes, args.head_timeout, caps, decider=decider,
                                                 admin_port=config.admin_port)
    uv_config = uvicorn.Config(
        served, loop="uvloop", http=protocol,
        ws="none", proxy_headers=False, access_log=False, log_level="warning", backlog=BACKLOG,
        lifespan="on", timeout_graceful_shutdown=5, timeout_keep_alive=args.keep_alive,
    )
    if role is None:
        server = FrozenAfterStartup(uv_config)
    else:
        server = NodeProcessServer(uv_config)
        server.role = role
    try:
        server.run(sockets=sockets)
    finally:
        for sock in sockets:
            sock.close()
    return 0 if server.started else 1


def _serve_stock(config: TargetConfig, sockets: list[socket.socket], args: argparse.Namespace) -> int:
    """The same app on uvicorn's own Server and httptools protocol, the middleware deciding every
    request (no head bounds, no connection caps, no draining listener, no frozen heap): what the
    tuned server's P99 and CPU are measured against (``bench targets``). What would change the
    measured behaviour rather than the path stays as the tuned server has it: no access log, no
    proxy headers (the key policy alone reads X-Forwarded-For), the same keep-alive."""
    import uvicorn

    from .app import by_listener, create_app

    app = create_app(config)
    served = app if config.admin_port is None else by_listener(app, config.admin_port)
    server = uvicorn.Server(uvicorn.Config(
        served, ws="none", proxy_headers=False, access_log=False, log_level="warning", backlog=BACKLOG,
        lifespan="on", timeout_graceful_shutdown=5, timeout_keep_alive=args.keep_alive))
    try:
        server.run(sockets=sockets)
    finally:
        for sock in sockets:
            sock.close()
    return 0 if server.started else 1


if __name__ == "__main__":
    raise SystemExit(main())
