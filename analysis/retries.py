"""How much a retry storm amplifies the load: one row of measures from attempts.

Input: one row per attempt with ``request_id`` (the logical request, the same across its
retries), ``attempt`` (from 1), ``sent_t``, ``done_t`` (may be NaN: cut off) and ``status``
(the client log's columns; the simulator builds the same frame from its replay).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HERD_WINDOW_S = 0.010
"""Retries sent within this long of each other arrive as one herd (a limiter cannot tell)."""
FIELDS = ("calls", "unique_requests", "amplification", "completed_requests", "time_to_done_s", "peak_concurrent_retries")
EMPTY = dict.fromkeys(FIELDS)


def retry_measures(attempts: pd.DataFrame) -> dict[str, float | int | None]:
    """calls; unique requests; amplification = calls / unique requests; requests that got a 2xx;
    time from the first send until the last attempt completed; the largest number of retries
    (attempt >= 2) sent within any HERD_WINDOW_S."""
    if attempts.empty:
        return dict(EMPTY)
    sent = attempts["sent_t"].to_numpy(dtype=np.float64)
    done = attempts["done_t"].to_numpy(dtype=np.float64)
    status = attempts["status"].to_numpy()
    unique = int(attempts["request_id"].nunique())
    retries = np.sort(sent[attempts["attempt"].to_numpy() >= 2])
    herd = np.searchsorted(retries, retries + HERD_WINDOW_S, side="left") - np.arange(len(retries))
    end = np.nanmax(np.where(np.isfinite(done), done, sent))
    return {
        "calls": len(attempts),
        "unique_requests": unique,
        "amplification": round(len(attempts) / unique, 4),
        "completed_requests": int(attempts.loc[(status >= 200) & (status < 300), "request_id"].nunique()),
        "time_to_done_s": round(float(end - np.nanmin(sent)), 4),
        "peak_concurrent_retries": int(herd.max()) if len(herd) else 0,
    }
