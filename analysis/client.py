"""What clients got: goodput and whether the limiter's Retry-After told the truth.

Client log rows are attempts: ``request_id`` names the logical request (the same across its
retries, and the id the target logs with each decision) and ``attempt`` counts from 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.limit_headers import parse_lines
from contract.schema import CLIENT_LIMIT_FIELDS as LIMIT_FIELDS
from contract.schema import STATUS_TOO_MANY

RETRY_AFTER_SLACK_S = 0.001
"""A retry sent this much before Retry-After elapsed still counts as made at Retry-After
(clock granularity of the client's timer)."""


def goodput(client: pd.DataFrame) -> float | None:
    """Successful (2xx) completions per second over the run, first intended send to last completion."""
    done = client["done_t"].to_numpy(dtype=np.float64)
    status = client["status"].to_numpy()
    ok = (status >= 200) & (status < 300) & np.isfinite(done)
    if not ok.any():
        return None
    span = float(np.nanmax(done) - client["intended_t"].min())
    return round(int(ok.sum()) / span, 3) if span > 0 else None


def _said(client: pd.DataFrame, rows: np.ndarray, done: np.ndarray) -> np.ndarray:
    """The Retry-After the answers at ``rows`` sent, in seconds (NaN: none, or none readable)."""
    if LIMIT_FIELDS not in client.columns:
        return np.full(len(rows), np.nan)
    texts = client[LIMIT_FIELDS].to_numpy()[rows]
    waits = (parse_lines(text, at).retry_after_s if isinstance(text, str) else None for text, at in zip(texts, done))
    return np.array([np.nan if w is None else w for w in waits], dtype=np.float64)


def header_truthfulness(client: pd.DataFrame, rejected: pd.DataFrame) -> tuple[float | None, int]:
    """Share of retries made at Retry-After that were admitted, and how many such retries.

    A retry is attempt k >= 2 whose attempt k-1 got a 429; its Retry-After is the ``retry_after_s``
    of the last rejected decision for that request id at or before attempt k-1 completed, or, where
    the limiter's log does not say what it told (a peer's, a url's decisions inferred from the
    client), what attempt k-1's answer said (its ``limit_fields``, read by ``contract.limit_headers``
    as the header truth reads them: a value that breaks the letter tells no wait); it was made at
    Retry-After when sent no earlier than that many seconds after attempt k-1 completed.
    """
    c = client.sort_values(["request_id", "attempt"], kind="stable").reset_index(drop=True)
    rid, attempt = c["request_id"].to_numpy(), c["attempt"].to_numpy()
    is_retry = np.zeros(len(c), dtype=bool)
    is_retry[1:] = (rid[1:] == rid[:-1]) & (attempt[1:] == attempt[:-1] + 1)
    is_retry[1:] &= c["status"].to_numpy()[:-1] == STATUS_TOO_MANY
    if not is_retry.any() or rejected.empty:
        return None, 0
    prev = np.flatnonzero(is_retry) - 1
    done = c["done_t"].to_numpy(dtype=np.float64)[prev]
    asked = pd.DataFrame({"request_id": rid[prev], "t": done, "sent_t": c["sent_t"].to_numpy()[prev + 1],
                          "status": c["status"].to_numpy()[prev + 1], "said": _said(c, prev, done)})
    asked = asked.dropna(subset=["t"]).sort_values("t", kind="stable")
    told = rejected[["t", "request_id", "retry_after_s"]].dropna(subset=["t"]).sort_values("t", kind="stable")
    told["request_id"] = told["request_id"].astype(asked["request_id"].dtype)
    matched = pd.merge_asof(asked, told, on="t", by="request_id", direction="backward")
    matched["retry_after_s"] = matched["retry_after_s"].fillna(matched["said"])
    matched = matched.dropna(subset=["retry_after_s"])
    waited = matched["sent_t"].to_numpy() - matched["t"].to_numpy()
    honoured = matched.loc[waited >= matched["retry_after_s"].to_numpy() - RETRY_AFTER_SLACK_S]
    if honoured.empty:
        return None, 0
    admitted = int((honoured["status"].to_numpy() != STATUS_TOO_MANY).sum())
    return round(admitted / len(honoured), 6), len(honoured)
