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
        # beyond DESIGN.md's list: needed for fairness, cost analysis and queueing limiters
        ("client_id", pa.string()),
        ("route", pa.string()),
        ("delay_s", pa.float64()),  # admitted but held this long (queueing limiters)
        ("ideal_allowed", pa.bool_()),  # sliding_log's decision on the same arrivals
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
    ]
)

LEGIT, ABUSIVE = "legit", "abusive"
CLIENT_CLASSES = (LEGIT, ABUSIVE)

DECISIONS_FILE = "decisions.parquet"
CLIENT_FILE = "client.parquet"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
RUNS_DIR = "runs"


def run_dir_name(scenario: str, algorithm: str, store: str) -> str:
    return f"{scenario}__{algorithm}__{store}"
