"""The log schemas: the one place that writers (simulator, targets, Locust) and readers agree on.

Decision log: one row per limiter decision (server side, or the simulator's virtual one).
Client log: one row per HTTP attempt as the load generator saw it.
"""

from __future__ import annotations

import pyarrow as pa

DECISION_SCHEMA = pa.schema(
    [
        ("t", pa.float64()),  # decision time, seconds (virtual clock or epoch)
        ("node", pa.string()),
        ("algorithm", pa.string()),
        ("store", pa.string()),
        ("limit_name", pa.string()),
        ("key", pa.string()),
        ("cost", pa.float64()),
        ("allowed", pa.bool_()),
        ("remaining", pa.float64()),
        ("retry_after_s", pa.float64()),
        ("decision_us", pa.float64()),
        ("client_class", pa.string()),  # "legit" or "abusive"
        ("request_id", pa.string()),
        # beyond docs/architecture.md's list: needed for fairness, cost analysis and queueing limiters
        ("client_id", pa.string()),
        ("route", pa.string()),
        ("delay_s", pa.float64()),  # admitted but held this long (queueing limiters)
        ("ideal_allowed", pa.bool_()),  # sliding_log's decision on the same arrivals
        ("source", pa.string()),  # who decided: memory, redis, fallback, fail_closed (null: unknown)
        ("adaptive_limit", pa.float64()),  # the adaptive limiter's current limit (null: not adaptive)
        ("arrived_t", pa.float64()),  # when the target read the request (live; = t in virtual time)
    ]
)

CLIENT_SCHEMA = pa.schema(
    [
        ("request_id", pa.string()),
        ("intended_t", pa.float64()),
        ("sent_t", pa.float64()),
        ("done_t", pa.float64()),
        ("status", pa.int32()),
        ("attempt", pa.int32()),
        ("limit_fields", pa.string()),  # the answer's limit header lines as received (contract.limit_headers)
        ("client_address", pa.string()),  # the source address it was sent from (null: virtual time)
        ("role", pa.string()),  # REQUEST_ROLES: the plan's, or the suite's own (null: written before roles)
    ]
)
CLIENT_LIMIT_FIELDS = "limit_fields"
CLIENT_OPTIONAL = (CLIENT_LIMIT_FIELDS, "client_address", "role")
"""Client-log columns an older folder lacks: a reader asks for them only where the file has them
(a reader of a folder without roles takes every row as the plan's, from an address not recorded)."""
CLIENT_REQUIRED = tuple(n for n in CLIENT_SCHEMA.names if n not in CLIENT_OPTIONAL)

ROLE_PLAN, ROLE_WARM_UP, ROLE_PROBE = "plan", "warm-up", "probe"
REQUEST_ROLES = (ROLE_PLAN, ROLE_WARM_UP, ROLE_PROBE)
"""Why a request of the client log was sent: the scenario's plan (and its follow-ups), or the
suite's own: the warm-up that waits for the side and readies its connections, the refusal probe
after the load. The suite's own are sent from addresses and keys of their own, never a tested
client's (scenarios/addresses.py); every measure of the plan reads only ``plan`` rows."""

LEGIT, ABUSIVE = "legit", "abusive"
GATEWAY_LIMIT = "gateway"
"""The ``limit_name`` of a gateway's token bucket in front of an adaptive limiter (a campaign entry's ``gateway``)."""
CLIENT_CLASSES = (LEGIT, ABUSIVE)

DECISIONS_FILE = "decisions.parquet"
CLIENT_FILE = "client.parquet"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
RUNS_DIR = "runs"


def run_dir_name(scenario: str, algorithm: str, store: str) -> str:
    return f"{scenario}__{algorithm}__{store}"


SYSTEM_SUITE = "suite"
"""The summary's ``system`` of the suite's own targets; a peer target's is its name (``nginx``)."""


DECIDED_BY_TARGET, DECIDED_BY_CLIENT, DECIDED_BY_MODEL = "target", "client", "model"
"""run.json's and the summary's ``decided_from``: the limiter's own records (the suite's targets,
NGINX's access log, slowapi's hits), or inferred from the client log (a url peer): then every
metric is client-side, uncertain by the request's round trip (``decision_uncertainty_ms``); a
peer's virtual twin's summary row: the suite's model of it, in virtual time (``model``)."""


def peer_run_dir_name(scenario: str, peer: str) -> str:
    """A peer target's run (NGINX ...): it has no store of the suite's."""
    return f"{scenario}__{peer}"

# --- results folder: the rest of the layout (docs/architecture.md "Logs and results") ---

CAMPAIGN_FILE = "campaign.yaml"
CHARTS_DIR = "charts"
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
KEYS_FILE = "keys.csv"
"""A trace run's keys (``simulate --trace``): run, key, requests, refused, worst_window; the most refused first."""
LOCUST_DIR = "locust"
TWIN_FILE = "twin.parquet"
"""A peer run's virtual twin beside its decisions: the suite's model of that peer (a url peer's:
of the algorithm it claims) replayed on the same scenario in virtual time, DECISION_SCHEMA; the
summary's row for it follows the live row (``twin_of``)."""
PLAN_FILE = "plan.json"
"""The plan Locust replays (scenarios.live_plan.LivePlan), beside run.json."""

# The Locust handshake: a run folder's ``client/`` holds, per worker, a ready marker (its start-up
# time), its client log part and, beside that part, how many burst groups it sent late. The runner
# merges the parts into client.parquet, sums the late counts and removes the folder. Remote workers
# (scenarios/remote.py) send theirs over the Locust connection and the master writes them here,
# with a joined marker on arrival and the worker's clock.
HANDSHAKE_DIR = "client"


def ready_marker(worker: int | str) -> str:
    return f"ready-{worker}"


def sent_marker(worker: int | str) -> str:
    """A local worker has sent the last request of its share (an open-loop plan): the runner stops
    Locust once every worker has, or at the plan's end plus a grace, whichever is later."""
    return f"sent-{worker}"


def client_part(worker: int | str, pid: int) -> str:
    return f"client-{worker}-{pid}.parquet"


def joined_marker(worker: int | str) -> str:
    """A remote worker's arrival at the master (its Locust client id inside)."""
    return f"joined-{worker}"


def clock_file(worker: int | str) -> str:
    """A remote worker's clock against the master's (offset, bound, pings), JSON."""
    return f"clock-{worker}.json"


READY_GLOB = ready_marker("*")
SENT_GLOB = sent_marker("*")
JOINED_GLOB = joined_marker("*")
CLOCK_GLOB = clock_file("*")
CLIENT_PART_GLOB = "client-*.parquet"
LATE_SUFFIX = ".late"
"""``client-<worker>-<pid>.late`` beside each part: that worker's count of late burst groups."""
LIVE_LATE_SUFFIX = "_late_sends.txt"
"""``<Locust's --csv prefix>_late_sends.txt``: the late groups of every worker so far, rewritten by
the Locust master (or a lone local runner) about every second while a run is on (the live view's)."""

ALGORITHM_NAMES = (
    "fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring", "token_bucket",
    "leaky_bucket", "gcra", "concurrency", "adaptive", "none",
)
"""docs/architecture.md's algorithm list, in its order: charts key their fixed palette on it."""

# cpu.csv: psutil samples of every process of a live run, one row per process per sample.
CPU_FILE = "cpu.csv"
CPU_COLUMNS = ("t", "process", "role", "cpu_percent", "rss_bytes")
"""t: epoch seconds of the sample; process: e.g. ``target:<node>``, ``locust:<worker>``;
role: ``target`` or ``generator``; cpu_percent: psutil's Process.cpu_percent() since the previous
sample of that process (100 = one core busy); rss_bytes: resident memory."""
ROLE_TARGET, ROLE_GENERATOR = "target", "generator"

# run.json: one per live run, written by the campaign runner (simulation runs have none).
RUN_FILE = "run.json"
RUN_SCHEMA_VERSION = 1
RUN_OK, RUN_FAILED, RUN_INTERRUPTED, RUN_DEGRADED = "ok", "failed", "interrupted", "degraded"
RUN_STATUSES = (RUN_OK, RUN_FAILED, RUN_INTERRUPTED, RUN_DEGRADED)
RUN_ANALYSED = (RUN_OK, RUN_DEGRADED)
"""A degraded run completed and has its data (it is analysed), but part of it was not what it
measures: decisions from a fallback, requests failed (run.json ``degraded_reasons``); ``run`` exits
1 for it and ``compare`` refuses it."""
RUN_REQUIRED = ("status", "scenario", "algorithm", "store", "policy")
"""Required keys of run.json. Optional: ``schema`` (RUN_SCHEMA_VERSION), ``params`` (the
algorithm's parameters), ``scenario_params`` (e.g. ``backoff`` of a retry storm), ``phases``
(list of ``{"name", "start_t", "end_t"}`` in epoch seconds, on the logs' clock; the phase named
``degraded`` drives recovery time and shading; ``downstream_outage``: a retry storm's 503 window;
``outage``: store_failure's Redis stop; ``ramp``: the span of a ramp's rising offered rate, which
the analysis bins by offered rate; ``downstream_stuck`` / ``downstream_paused``: a downstream hung
at a timeout or in GC-like pauses; ``overload``: downstream_breaks' overloaded traffic), ``generator_bound`` (bool, the runner's own
verdict), ``error`` (why a run failed: the log's tail), ``decided_from`` (``client`` for a url
peer, whose decisions are inferred from the client log; absent: ``target``) with ``round_trip_ms``
(``{"p50", "p99", "max"}`` of the answered requests: the uncertainty of those decisions' times). ``policy`` is ``{"limit",
"window_s", "burst"}`` with ``burst`` null for the default (= limit)."""
KIND_VIRTUAL = "virtual"
"""run.json's and the summary's ``kind`` of a simulated run with the system model (harness/sim/system.py):
its client log and CPU samples are virtual; absent in run.json: a live run."""
DEGRADED_PHASE = "degraded"
DOWNSTREAM_OUTAGE_PHASE = "downstream_outage"
RAMP_PHASE = "ramp"
DOWNSTREAM_STUCK_PHASE = "downstream_stuck"
DOWNSTREAM_PAUSED_PHASE = "downstream_paused"
OVERLOAD_PHASE = "overload"
HEALTH_PHASES = {"degraded": DEGRADED_PHASE, "outage": DOWNSTREAM_OUTAGE_PHASE, "stuck": DOWNSTREAM_STUCK_PHASE,
                 "paused": DOWNSTREAM_PAUSED_PHASE}
"""The run.json phase of each unhealthy health of a downstream schedule (healthy and recovered are
none), live (harness/live/measures.py) and virtual (harness/sim/runner.py) alike."""
STATUS_TOO_MANY = 429
LATE_S = 0.005
"""A send this much after its intended time is late: the generator fell behind (the replay counts
such groups in run.json's ``late_groups``; a ramp's bins count such requests)."""


REPEAT_MARK = "__r"
"""A repeated run's folder: ``<run>__r<k>`` (k = 1..N); the summary groups the repeats of a run."""


def repeat_dir_name(name: str, repeat: int, repeats: int) -> str:
    """The folder of repeat ``repeat`` of ``repeats``: the run's own name when it runs once."""
    return name if repeats == 1 else f"{name}{REPEAT_MARK}{repeat}"


def split_repeat(name: str) -> tuple[str, int | None]:
    """``<run>__r<k>`` -> (``<run>``, k); a name without a repeat -> (name, None)."""
    base, mark, k = name.rpartition(REPEAT_MARK)
    return (base, int(k)) if mark and base and k.isdigit() and int(k) >= 1 else (name, None)


def parse_run_dir_name(name: str) -> tuple[str, str, str] | None:
    """The inverse of run_dir_name (a repeat's suffix dropped); None when the folder name does not have three parts."""
    parts = split_repeat(name)[0].split("__")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]

# judge-client.csv: `run_bench.py judge`'s client log, one row per request it sent: its role (learn,
# probe, hunt-clock-edge, hunt-first-edge), key, source address, times, status and parsed limit fields.
JUDGE_LOG = "judge-client.csv"
JUDGE_LOG_COLUMNS = ("role", "key", "address", "sent", "done", "status", "retry_after_s", "limit", "window_s",
                     "remaining", "reset_s", "form")
