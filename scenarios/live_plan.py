"""The bridge from a traffic model to live HTTP: the plan a Locust worker replays.

Pure and Locust-free, so it is tested exactly. A plan file (JSON, written by the harness) names
the model, its seed and parameters, the policy, the target and the wall-clock instant the model's
t = 0 maps to (a multiple of W, so the model's window edges are the target's). Every worker
rebuilds the same arrivals and takes every n-th request, so each burst is split across workers
and fired by all of them at the same deadline. Requests within ``burst_gap_s`` of each other
form one group: one deadline, one release.

Closed-loop models (``reactive``) need the ``ReactiveUser`` instead: it fires the same share of
planned arrivals, then turns each HTTP answer into a decision (``outcome``) and sends the
model's follow-ups, each attempt in the client log with its attempt number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from contract.atomic import write_text
from contract.routes import model_route

from . import build_model
from .addresses import addresses, on_loopback
from .base import Arrivals, Request, TrafficModel
from .fleet import Fleet, assign_nodes


@dataclass(frozen=True)
class LivePlan:
    scenario: str
    limit: float
    window_s: float
    seed: int
    start_at: float
    """Epoch seconds that the model's t = 0 maps to."""
    hosts: list[str]
    client_dir: str
    """Each worker writes its raw client log here (one Parquet file per worker process)."""
    workers: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    burst_gap_s: float = 0.002
    routing: str = "round_robin"
    """How requests are dealt over ``hosts``: round_robin or sticky (hash of the client id)."""
    joins_s: list[float] = field(default_factory=list)
    """Per host: the model time from which it takes traffic (autoscale); empty: all from t = 0."""
    address_block: int = 0
    """Which block of client addresses the clients send from (``scenarios.addresses``), and the
    prefix of their API keys (``key_prefix``): a fresh one per run against a side that outlives its
    runs (a url endpoint keeps its limiter's state)."""

    def host_urls(self) -> list[str]:
        """The host every planned request goes to, by arrival index (``scenarios.fleet``)."""
        if len(self.hosts) == 1:
            return [self.hosts[0]] * len(self.arrivals())
        arrivals = self.arrivals()
        fleet = Fleet(tuple(self.joins_s or [0.0] * len(self.hosts)), self.routing)
        return [self.hosts[i] for i in assign_nodes(arrivals.t, arrivals.client_id, fleet)]

    def addresses(self) -> list[str | None]:
        """The source address every planned request leaves from, by arrival index: its client's
        own, or the model's shared one (``scenarios.addresses``); None, the machine's own, when a
        host is not on loopback."""
        model = self.model()
        arrivals = model.arrivals()
        if not self.loopback:
            return [None] * len(arrivals)
        return list(addresses(arrivals.key if model.one_client_per_key else arrivals.client_id, model.shared_address,
                              self.address_block))

    @property
    def key_prefix(self) -> str:
        """What each API key the clients send starts with: nothing against the suite's own sides,
        ``b<block>-`` in a fresh address block (``address_block``), so a url endpoint's limiter,
        which keeps its state between runs, meets each run's keys as new."""
        return f"b{self.address_block}-" if self.address_block else ""

    @property
    def loopback(self) -> bool:
        """Every host is on 127.0.0.0/8: requests can leave from addresses of their own."""
        return all(on_loopback(host) for host in self.hosts)

    def own_address(self, address: str) -> str | None:
        """One of the suite's own addresses (``scenarios.addresses``), or None off loopback."""
        return address if self.loopback else None

    def address_of(self) -> dict[str, str | None]:
        """Each client's source address (a closed-loop replay's follow-ups leave from their client's)."""
        return dict(zip(self.arrivals().client_id, self.addresses()))

    def save(self, path: Path) -> None:
        """Atomically: a remote run's master sends the file as soon as it appears."""
        write_text(path, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> LivePlan:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def model(self) -> TrafficModel:
        """The plan's model, built once per plan (or the one handed over: ``with_model``)."""
        if "_model" not in self.__dict__:
            self.with_model(build_model(self.scenario, self.limit, self.window_s, self.seed, self.params))
        return self.__dict__["_model"]

    def with_model(self, model: TrafficModel) -> LivePlan:
        """This plan replaying ``model``, the run's own (the same scenario, policy, seed and params):
        the harness does not build it, nor generate its arrivals, again. Not part of the plan file."""
        if (model.name, model.limit, model.window_s, model.seed) != (self.scenario, self.limit, self.window_s, self.seed):
            raise ValueError(f"the plan replays {self.scenario} at {self.limit:g}/{self.window_s:g} s, seed {self.seed}; "
                             f"not {model.name} at {model.limit:g}/{model.window_s:g} s, seed {model.seed}")
        object.__setattr__(self, "_model", model)  # frozen: the plan's fields never change, this is a cache
        return self

    def arrivals(self) -> Arrivals:
        return self.model().arrivals()

    @property
    def user_class(self) -> str:
        """The Locust user class (scenarios/locustfile.py) that replays this plan."""
        return user_class(self.model())


def user_class(model: TrafficModel) -> str:
    """The Locust user class that replays ``model``: closed-loop models react to answers."""
    return "ReactiveUser" if model.reactive else "PlanUser"


@dataclass(frozen=True)
class Shot:
    """One request of a worker's share."""

    index: int
    t: float
    method: str
    path: str
    headers: dict[str, str]


def follow_up_id(cause_id: str, n: int) -> str:
    """A closed-loop follow-up's request id (not a retry: a retry keeps its cause's id): its
    chain's planned id, then the worker's count (``r12.3``), so whoever joins the client log with
    the plan by id (a url peer's decisions: ``origin_of``) finds the origin's key, class and client
    for a request the plan never had. (The request itself carries its origin's key and class
    headers: the model's follow-up is its cause with a new time.)"""
    return f"{origin_of(cause_id)}.{n}"


def origin_of(request_id: str) -> str:
    """The planned id (``r<index>``) a request descends from: itself, or a follow-up's origin."""
    return request_id.partition(".")[0]


def request_headers(request: Request, request_id: str, key_prefix: str = "") -> dict[str, str]:
    """What the target keys on and logs: the model's explicit headers, else ``x-api-key`` from
    its key, the API key after ``key_prefix`` (``LivePlan.key_prefix``); the benchmark tags; an
    Idempotency-Key on POSTs (the same on every retry)."""
    headers: dict[str, str] = dict(request.headers) if request.headers is not None else {"x-api-key": request.key}
    if key_prefix and "x-api-key" in headers:
        headers["x-api-key"] = key_prefix + headers["x-api-key"]
    headers.update({"x-client-id": request.client_id, "x-client-class": request.client_class, "x-request-id": request_id})
    if model_route(request.route).method == "POST":
        headers["idempotency-key"] = request_id
    return headers


def worker_share(arrivals: Arrivals, worker: int, workers: int, key_prefix: str = "") -> list[Shot]:
    """Every ``workers``-th request, starting at ``worker``, with the headers the target keys on.
    Only the share's own rows are read: a worker's share of a large plan costs its size, not the plan's."""
    attempt, headers = arrivals.attempt, arrivals.headers
    shots = []
    for i in range(worker, len(arrivals), workers):
        request = Request(arrivals.t[i], arrivals.client_id[i], arrivals.client_class[i], arrivals.key[i],
                          arrivals.route[i], arrivals.cost[i], attempt[i] if attempt else 1,
                          headers[i] if headers else None)
        route = model_route(request.route)
        shots.append(Shot(i, request.t, route.method, route.path, request_headers(request, f"r{i}", key_prefix)))
    return shots


@dataclass(frozen=True)
class Outcome:
    """An HTTP answer as the decision a model reacts to."""

    allowed: bool
    retry_after_s: float


def outcome(status: int, headers: Mapping[str, str]) -> Outcome | None:
    """2xx/3xx: admitted; 429 and 5xx: refused, to be retried (Retry-After, else the RateLimit
    field's ``t``, else no hint: infinity); anything else (4xx, no answer): None, not retried."""
    if 200 <= status < 400:
        return Outcome(True, 0.0)
    if status != 429 and not 500 <= status < 600:
        return None
    return Outcome(False, retry_hint(headers))


def retry_hint(headers: Mapping[str, str]) -> float:
    """Seconds the answer asks the client to wait: Retry-After (delta-seconds), else the smallest
    ``t=`` of the RateLimit field; infinity when neither is usable."""
    try:
        return max(0.0, float(headers.get("retry-after", "")))
    except ValueError:
        pass
    waits = []
    for member in headers.get("ratelimit", "").split(","):
        for param in member.split(";")[1:]:
            name, _, value = param.strip().partition("=")
            if name == "t" and value.isdigit():
                waits.append(float(value))
    return min(waits) if waits else math.inf


def groups(shots: list[Shot], gap_s: float) -> list[list[Shot]]:
    """Consecutive shots no more than ``gap_s`` after the group's first one fire together."""
    return [shots[r.start:r.stop] for r in group_ranges([s.t for s in shots], gap_s)]


def group_ranges(t: list[float], gap_s: float) -> list[range]:
    """The groups ``groups`` makes of requests planned at times ``t`` (sorted), as index ranges:
    the rule on the times alone, without a shot per request (a plan of millions, read by the harness)."""
    out: list[range] = []
    start = 0
    for i in range(1, len(t)):
        if t[i] - t[start] > gap_s:
            out.append(range(start, i))
            start = i
    if t:
        out.append(range(start, len(t)))
    return out


BURST = 10
"""This many requests planned at one instant are a burst: the replay keeps its deadline by
polling the last millisecond. As many requests that ``groups`` joined from distinct times
(steady traffic from ~5,000/s) are not: polling before each of those took the generator from
21% to 50% of a core at 6,000/s."""
INSTANT_S = 1e-6


class Release(NamedTuple):
    """One group of a worker's share: its requests (indexes into the share) leave back to back
    at ``deadline`` (epoch seconds)."""

    deadline: float
    requests: range
    burst: bool


def releases(shots: list[Shot], start_at: float, gap_s: float) -> list[Release]:
    out, at = [], 0
    for group in groups(shots, gap_s):
        burst = len(group) >= BURST and group[BURST - 1].t - group[0].t < INSTANT_S
        out.append(Release(start_at + group[0].t, range(at, at + len(group)), burst))
        at += len(group)
    return out


def aligned_start(now: float, lead_s: float, window_s: float) -> float:
    """The first multiple of W at least ``lead_s`` from now: windows on the target's clock are
    aligned to multiples of W, so the model's edges land on real edges."""
    return math.ceil((now + lead_s) / window_s) * window_s
