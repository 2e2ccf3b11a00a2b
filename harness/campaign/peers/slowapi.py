"""The slowapi peers: a FastAPI app limited by slowapi with each strategy of the ``limits``
library, on limits' memory storage or on Redis, and the suite's algorithm that models each.

What limits really does (limits 5.x, ``limits/strategies.py`` and ``limits/storage/``):

- **fixed window**: ``incr`` then ``count <= L`` (refused hits count); the counter's expiry
  (W whole seconds) is set by the hit that creates it, on memory and on Redis (``INCRBY`` +
  ``EXPIRE``): the window is anchored to a key's *first hit*, not to the clock. Our
  ``fixed_window`` is aligned to the clock, so the model is limits' own, ``limits_fixed_window``
  (targets/algorithms/, a peer model; docs/peers.md measures it).
- **moving window**: a list of hit times per key; refused when the L-th newest is no older than
  W: a sliding log, our ``sliding_log`` under the same L per W.
- **sliding window counter**: ``floor(prev * (W - elapsed) / W + curr) + cost > L`` refuses, so
  limits admits while the weighted estimate is *below* L; ours admits while estimate + cost <= L.
  With whole-µs time (our algorithm's) the two agree when our limit is L + 1 - 0.5 µs/W (the
  estimate times W is an integer: ``< L*W`` is ``<= (L+1)*W - 1 - 0.5``). On memory the two
  windows are aligned to the clock (keys ``<key>/<int(now / W)>``), as ours; on Redis the pair of
  counters is anchored to a key's first hit (the current counter is created with a TTL of 2W and
  shifted when its TTL drops below W): the model there is limits' own script,
  ``limits_sliding_window_counter_redis`` (targets/algorithms/, a peer model).

limits takes a whole number of requests per a whole number of seconds and has no burst.
"""

from __future__ import annotations

from targets.algorithms import Policy

from .base import Peer, PeerError

STRATEGIES = {"fixed-window": "limits_fixed_window", "moving-window": "sliding_log",
              "sliding-window-counter": "sliding_window_counter"}
"""limits' strategy -> the suite's algorithm that models it."""
REDIS_MODELS = {"sliding-window-counter": "limits_sliding_window_counter_redis"}
"""Where limits' Redis storage does otherwise than its memory storage: the model on Redis."""
STORES = ("memory", "redis")
SYSTEM = "slowapi"


def limit_string(policy: Policy) -> str:
    """The policy as a limits rate string (``10 per 1 second``); a PeerError when limits cannot
    express it: a whole amount per whole seconds, no burst beyond the limit."""
    if policy.limit != int(policy.limit) or policy.window_s != int(policy.window_s):
        raise PeerError(f"peer {SYSTEM}: limit {policy.limit:g} per {policy.window_s:g} s; limits takes a whole number "
                        "of requests per a whole number of seconds")
    if policy.effective_burst != policy.limit:
        raise PeerError(f"peer {SYSTEM}: burst {policy.effective_burst:g}; limits has no burst (it must equal the limit)")
    return f"{int(policy.limit)} per {int(policy.window_s)} second"


class Slowapi(Peer):
    system = SYSTEM
    start_s = 4.0  # importing fastapi, slowapi, limits and uvicorn: 1.2 s of CPU, 5 s on 2 busy cores

    def __init__(self, strategy: str, store: str) -> None:
        self.strategy, self.store = strategy, store
        self.uses_redis = store == "redis"
        self.name = f"slowapi-{strategy}" + ("-redis" if store == "redis" else "")
        self.algorithm = REDIS_MODELS.get(strategy, STRATEGIES[strategy]) if self.uses_redis else STRATEGIES[strategy]
        alias = "" if self.uses_redis else f"; simulate --algorithm {self.name.replace('-', '_')}"
        self.summary = (f"slowapi with limits' {strategy} strategy on {store} storage, keyed by the API-key header "
                        f"else the client address; modelled by {self.algorithm}{alias}")

    def model(self, policy: Policy) -> tuple[str, Policy]:
        limit_string(policy)
        algorithm = self.algorithm
        if algorithm == "sliding_window_counter":  # limits admits while the estimate is below L
            return algorithm, Policy(policy.limit + 1 - 0.5e-6 / policy.window_s, policy.window_s)
        return algorithm, Policy(policy.limit, policy.window_s)


SLOWAPI_PEERS = tuple(Slowapi(strategy, store) for store in STORES for strategy in STRATEGIES)
