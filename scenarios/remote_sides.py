"""The two halves of the remote-worker protocol (``scenarios.remote``) on Locust's runners: the
master's, which answers and collects, and the remote worker's, which asks and sends."""

from __future__ import annotations

import io
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gevent
import pyarrow as pa
import pyarrow.parquet as pq
from gevent.queue import Empty, Queue
from locust.rpc import Message

from contract.atomic import write_bytes, write_text
from contract.schema import LATE_SUFFIX, client_part, clock_file, joined_marker, ready_marker

from .live_plan import LivePlan
from .remote import (
    CAMPAIGN_OVER_EXIT,
    CHUNK_BYTES,
    END,
    JOINED_FILE,
    LOG,
    LOG_WAIT_S,
    PING,
    PINGS,
    PLAN,
    PLAN_REQUEST,
    PLAN_WAIT_S,
    PONG,
    QUIT_GRACE_S,
    READY,
    STOP,
    Clock,
    best_clock,
)

logger = logging.getLogger(__name__)


class MasterSide:
    """The master's half: answers plan requests and pings, writes what workers send into
    ``remote_dir`` (the run's handshake folder), and collects the logs before Locust quits."""

    def __init__(self, environment: Any, remote_dir: Path, plan_path: Path, campaign_over: bool) -> None:
        self.environment, self.runner = environment, environment.runner
        self.dir, self.plan_path, self.campaign_over = remote_dir, plan_path, campaign_over
        self.dir.mkdir(parents=True, exist_ok=True)
        self.chunks: dict[tuple[int, int], list[bytes]] = {}
        self.logged: set[int] = set()
        self.joined: set[int] = set()
        for kind, listener, concurrent in ((PLAN_REQUEST, self._plan, True), (PING, self._ping, False),
                                           (READY, self._ready, False), (LOG, self._log, False)):
            self.runner.register_message(kind, listener, concurrent=concurrent)
        environment.events.worker_connect.add_listener(self._joined)
        environment.events.quitting.add_listener(self._collect)

    def _index(self, msg: Any) -> int:
        return self.runner.get_worker_index(msg.node_id)

    def _joined(self, client_id: str, **_kwargs: Any) -> None:
        index = self.runner.get_worker_index(client_id)
        if index >= self.environment.parsed_options.expect_workers:  # the plan is dealt to N workers only
            logger.warning("refused worker %s: this run expects %d", client_id, self.environment.parsed_options.expect_workers)
            self.runner.server.send_to_client(Message("quit", None, client_id))  # as Locust answers unknown workers
            return
        self.joined.add(index)
        write_text(self.dir / joined_marker(index), client_id)

    def _plan(self, environment: Any, msg: Any, **_kwargs: Any) -> None:
        deadline = time.time() + PLAN_WAIT_S
        while not self.plan_path.exists() and time.time() < deadline:
            gevent.sleep(0.02)
        text = self.plan_path.read_text(encoding="utf-8")
        self.runner.send_message(PLAN, {"plan": text, "index": self._index(msg)}, client_id=msg.node_id)

    def _ping(self, environment: Any, msg: Any, **_kwargs: Any) -> None:
        self.runner.send_message(PONG, {**msg.data, "master_t": time.time()}, client_id=msg.node_id)

    def _ready(self, environment: Any, msg: Any, **_kwargs: Any) -> None:
        index = self._index(msg)
        write_text(self.dir / clock_file(index), json.dumps({"client_id": msg.node_id, **msg.data["clock"]}))
        write_text(self.dir / ready_marker(index), f"{msg.data['ready_t']:.6f}")

    def _log(self, environment: Any, msg: Any, **_kwargs: Any) -> None:
        index, data = self._index(msg), msg.data
        parts = self.chunks.setdefault((index, data["pid"]), [])
        parts.append(data["data"])
        if data["last"]:
            path = self.dir / client_part(index, data["pid"])
            write_bytes(path, b"".join(self.chunks.pop((index, data["pid"]))))
            write_text(path.with_suffix(LATE_SUFFIX), str(data["late"]))
            self.logged.add(index)

    def _collect(self, environment: Any, **_kwargs: Any) -> None:
        """Before Locust's quit: stop the workers (each sends its log as it stops), wait for the
        logs, then tell each worker whether the campaign is over."""
        self.runner.send_message(STOP)
        deadline = time.time() + LOG_WAIT_S
        while self.logged < self.joined and time.time() < deadline:
            gevent.sleep(0.05)
        self.runner.send_message(END, {"campaign_over": self.campaign_over})


class WorkerSide:
    """The remote worker's half: fetches the plan, measures the clock, sends the ready marker
    and the client log."""

    def __init__(self, environment: Any) -> None:
        self.environment, self.runner = environment, environment.runner
        self.inbox: dict[str, Queue] = {PLAN: Queue(), PONG: Queue()}
        self.runner.register_message(PLAN, lambda msg, **_: self.inbox[PLAN].put(msg.data))
        self.runner.register_message(PONG, lambda msg, **_: self.inbox[PONG].put((msg.data, time.time())))
        self.runner.register_message(STOP, lambda **_: self.runner.stop())  # test_stop sends the log
        self.runner.register_message(END, self._end)
        self.clock = Clock(0.0, 0.0, 0)

    def plan(self) -> tuple[LivePlan, int]:
        """The run's plan and this worker's index, from the master (which has the file)."""
        self.runner.send_message(PLAN_REQUEST, None)
        try:
            data = self.inbox[PLAN].get(timeout=PLAN_WAIT_S)
        except Empty:
            raise TimeoutError(f"the master sent no plan within {PLAN_WAIT_S:.0f} s") from None
        Path(JOINED_FILE).write_text(str(data["index"]))  # for `run_bench.py worker`: a master was found
        return LivePlan(**json.loads(data["plan"])), data["index"]

    def measure_clock(self, pings: int = PINGS) -> Clock:
        samples = []
        for seq in range(pings):
            self.runner.send_message(PING, {"seq": seq, "worker_t": time.time()})
            try:
                data, received = self.inbox[PONG].get(timeout=5.0)
            except Empty:
                continue
            samples.append((data["worker_t"], data["master_t"], received))
        if not samples:
            raise TimeoutError("the master answered no clock ping within 5 s")
        self.clock = best_clock(samples)
        return self.clock

    def ready(self) -> None:
        self.runner.send_message(READY, {"ready_t": time.time() - self.clock.offset_s, "clock": asdict(self.clock)})

    def send_log(self, table: pa.Table, pid: int, late: int) -> None:
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        data = buffer.getvalue()
        chunks = [data[at:at + CHUNK_BYTES] for at in range(0, len(data), CHUNK_BYTES)] or [b""]
        for i, chunk in enumerate(chunks):
            self.runner.send_message(LOG, {"pid": pid, "data": chunk, "last": i == len(chunks) - 1, "late": late})

    def _end(self, msg: Any, **_kwargs: Any) -> None:
        if msg.data.get("campaign_over"):
            self.environment.process_exit_code = CAMPAIGN_OVER_EXIT
        gevent.spawn_later(QUIT_GRACE_S, self.runner.quit)
