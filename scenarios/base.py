"""What a traffic model is: seeded, deterministic arrivals, plus optional reactions.

A model yields requests ``(t, client_id, client_class, key, route, cost)``. Open-loop models are
fully described by their arrivals (columnar, sorted by ``t``) so that a million requests replay
fast. Closed-loop models (``reactive = True``) also answer each decision with follow-up requests
(e.g. a client that retries when Retry-After says so). Models import nothing of the project: a
decision is anything with ``allowed`` and ``retry_after_s``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, Protocol

import numpy as np

from contract.errors import BadInput
from contract.params import Bounds, check_bounds, parse_fields

from .fleet import Fleet

LEGIT, ABUSIVE = "legit", "abusive"


class ScenarioError(BadInput):
    """A scenario parameter out of range or a trace that cannot be read; names the parameter."""


class Request(NamedTuple):
    t: float
    client_id: str
    client_class: str
    key: str
    route: str
    cost: float
    attempt: int = 1
    """1 for a first try; a retry of the same logical request (same ``client_id``) counts up."""
    headers: Mapping[str, str] | None = None
    """Explicit headers (X-Forwarded-For, an API key...) sent live instead of ``x-api-key: key``.
    Such a request is counted by the key the target derives from them under the model's
    ``target_config()["keys"]``, from the peer 127.0.0.1: live by the target itself, in virtual
    time by the harness with the target's code (so a model that sends them sends from that one
    address, its ``shared_address``: behind one proxy). Its ``key`` is then ignored (models leave it "")."""


class DecisionLike(Protocol):
    allowed: bool
    retry_after_s: float


@dataclass
class Arrivals:
    """Columnar requests sorted by time (plain lists: the fastest thing for a Python loop)."""

    t: list[float]
    client_id: list[str]
    client_class: list[str]
    key: list[str]
    route: list[str]
    cost: list[float]
    attempt: list[int] | None = None
    """None: every request is a first try."""
    headers: list[Mapping[str, str] | None] | None = None
    """None: no request carries explicit headers."""

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def from_requests(cls, requests: Iterable[Request]) -> Arrivals:
        rows = sorted(requests, key=lambda r: r.t)
        if not rows:
            return cls([], [], [], [], [], [])
        cols = [list(c) for c in zip(*rows)]
        attempt, headers = cols[6], cols[7]
        return cls(*cols[:6], attempt if any(a != 1 for a in attempt) else None,
                   headers if any(h is not None for h in headers) else None)

    def requests(self) -> Iterator[Request]:
        """Row by row (the closed-loop replay's input)."""
        n = len(self)
        attempt = self.attempt or [1] * n
        headers = self.headers or [None] * n
        return map(Request, self.t, self.client_id, self.client_class, self.key, self.route, self.cost, attempt, headers)

    @classmethod
    def from_columns(
        cls,
        t: np.ndarray,
        client_id: Sequence[str] | np.ndarray,
        client_class: Sequence[str] | np.ndarray,
        route: Sequence[str] | np.ndarray,
        cost: Sequence[float] | np.ndarray,
        key: Sequence[str] | np.ndarray | None = None,
    ) -> Arrivals:
        """Sort numpy columns by time (stable, so equal times keep their generation order)."""
        order = np.argsort(np.asarray(t, dtype=np.float64), kind="stable")

        ids = _shared(client_id, order)
        return cls(
            np.asarray(t, dtype=np.float64)[order].tolist(), ids, _shared(client_class, order),
            ids if key is None else _shared(key, order), _shared(route, order), _shared(cost, order)
        )


def _shared(col: Any, order: np.ndarray) -> list:
    """A column in ``order`` as a list whose equal values are one object each: a million
    requests of a thousand clients hold a thousand strings, not a million (numpy's ``tolist``,
    and ``np.full`` of a string, make one object per element: ~60 bytes a request a column).
    pandas is imported here, not with the module: every Locust process imports the scenarios for
    their plan types and never builds a column (0.4 s of CPU each, a live run starts several)."""
    import pandas as pd

    if isinstance(col, pd.Categorical):  # coded by its generator: nothing to factorize
        codes, uniques = col.codes[order], col.categories
    else:
        codes, uniques = pd.factorize(np.asarray(col)[order], sort=False)
    return np.asarray(uniques, dtype=object)[codes].tolist()


class TrafficModel:
    """Base class: subclasses set ``name``/``summary`` and implement ``generate``."""

    name: str = ""
    summary: str = ""
    reactive: bool = False
    shared_address: str | None = None
    """Live, each client sends from its own loopback address (``scenarios.addresses``); a model
    whose clients share one on purpose (behind one proxy or NAT) names it here."""
    one_client_per_key: bool = False
    """True when the model's client ids split one client's traffic (the drip's burst and drip are
    one attacker): its address follows its key, not its client id."""
    _arrivals: Arrivals | None = None

    def __init__(self, limit: float, window_s: float, seed: int, params: Any) -> None:
        """``params``: the model's own parameter dataclass, kept as ``p``."""
        self.limit, self.window_s, self.seed, self.p = limit, window_s, seed, params

    def generate(self) -> Arrivals:
        """The planned (open-loop) arrivals, sorted by time; deterministic for a seed."""
        raise NotImplementedError

    def expected_requests(self) -> float:
        """About how many requests the model sends (closed-loop follow-ups at their most), known
        before any is generated: a simulation refuses one whose size would exhaust memory."""
        raise NotImplementedError

    def arrivals(self) -> Arrivals:
        """``generate()`` once; every algorithm of a campaign replays the same arrivals."""
        if self._arrivals is None:
            self._arrivals = self.generate()
        return self._arrivals

    def react(self, request: Request, decision: DecisionLike) -> Iterable[Request]:
        """Follow-up requests caused by a decision (closed-loop models only)."""
        return ()

    def reset(self) -> None:
        """Forget what an earlier replay's reactions taught the model: a plan replays one model
        for every algorithm, and each replay must meet the same clients (called where a replay
        begins). Stateless models have nothing to forget."""

    def horizon_s(self) -> float:
        """The model time by which a closed-loop model's follow-ups have all been sent (a live
        run lasts until then); 0 for open-loop models, whose last arrival says it."""
        return 0.0

    def target_config(self) -> dict[str, Any]:
        """Target config keys (targets.config.TargetConfig) a live run of this model needs, e.g.
        the key policy it is run against, the cost of the route it calls, or a downstream health
        schedule (merged into the runner's downstream). The simulator reads the same config: the
        key policy keys requests that carry headers, and while an ``outage`` phase lasts a
        closed-loop model is told that an admitted request failed (a 503)."""
        return {}

    def outage(self) -> tuple[float, float] | None:
        """(stop, restart) of the shared store in model time, for a model that fails it (a live run
        stops and starts the runner's own Redis then); None: the store stays up."""
        return None

    def ramp(self) -> tuple[float, float] | None:
        """Model seconds a rising offered rate spans (a live run's ``ramp`` phase); None: no ramp."""
        return None

    def fleet(self) -> Fleet | None:
        """The fleet the model runs on (when each node joins, the routing); None: the campaign's nodes."""
        return None

    def overload_window(self) -> tuple[float, float] | None:
        """Model seconds the offered rate is over the downstream's capacity while its health stays
        fine (a live run's ``overload`` phase, which the health schedule cannot say); None: never."""
        return None

    @property
    def max_cost(self) -> float:
        """The largest request cost this model sends (checked against the limiter)."""
        return 1.0


@dataclass(frozen=True)
class ModelParams:
    """Base for each model's parameters: validated, overridable from ``KEY=VALUE`` strings."""

    def check(self) -> None:
        """Subclasses raise ScenarioError naming the fields whose values do not fit together (each
        field's own range is its type's bounds)."""

    @classmethod
    def build(cls, overrides: dict[str, Any]) -> Any:
        """The params from values as text (a command line, plan.json) or typed (a campaign's
        YAML), by the one parser (``contract.params``): each checked against its hint and bounds."""
        params = cls(**parse_fields(cls, overrides, ScenarioError, "scenario parameter {name}"))
        check_bounds(params, ScenarioError)
        params.check()
        return params


MAX_COUNT = 100_000
"""Clients, users, attackers, nodes: a model's population (each costs memory and a key)."""
MAX_SECONDS = 31 * 86_400.0
"""A model's durations and instants: at most a month of model time."""
MAX_FACTOR = 10_000.0
"""A rate as a multiple (or fraction) of L/W, a cost or a service-time factor."""
MAX_RPS = 10_000_000.0
"""An offered rate in requests per second: campaigns/throughput-1m.yaml ramps to 1.9 million;
what a planned run may hold is bounded apart (harness/campaign/system.py)."""
Count = Annotated[int, Bounds(0, MAX_COUNT)]
Clients = Annotated[int, Bounds(1, MAX_COUNT)]
Seconds = Annotated[float, Bounds(0, MAX_SECONDS)]
Span = Annotated[float, Bounds(0, MAX_SECONDS, above=True)]
"""A duration that must not be 0 (a period, a think time, a run's length)."""
Millis = Annotated[float, Bounds(0, 1_000 * MAX_SECONDS, above=True)]
Factor = Annotated[float, Bounds(0, MAX_FACTOR)]
Multiple = Annotated[float, Bounds(0, MAX_FACTOR, above=True)]
"""A load, a cost or a rate as a multiple that must not be 0."""
Rate = Annotated[float, Bounds(0, MAX_RPS)]
OfferedRate = Annotated[float, Bounds(0, MAX_RPS, above=True)]
"""Bounded field types (``contract.params``): every parameter that sizes a model's work is one,
its range declared here once (checked by ``ModelParams.build``); a model's ``check`` holds only
the rules that tie two fields together."""


def poisson_times(rng: np.random.Generator, rate: float, start: float, end: float) -> np.ndarray:
    """Arrival times of a Poisson process on [start, end): a Poisson count, then uniform times."""
    count = rng.poisson(rate * (end - start))
    return np.sort(rng.uniform(start, end, count))
