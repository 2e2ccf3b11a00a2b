"""Legitimate users loading pages (8 parallel requests, then a few follow-ups) with think time,
beside one abusive client hammering the same route.

A page load is the normal burst a limiter must not punish. Users think at least ``min_think_s``
between pages (mean ``think_s``), so their long-run rate stays well below typical limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS

from .base import (
    ABUSIVE,
    LEGIT,
    Arrivals,
    Clients,
    Count,
    ModelParams,
    Multiple,
    Seconds,
    Span,
    TrafficModel,
    poisson_times,
)

ROUTE = ITEMS.model_name


@dataclass(frozen=True)
class Params(ModelParams):
    users: Clients = 20
    page_size: Annotated[int, Bounds(1, 1_000)] = 8
    """Requests fired in parallel when a page loads."""
    parallel_spread_s: Seconds = 0.005
    followups: Annotated[int, Bounds(0, 1_000)] = 3
    followup_gap_s: Span = 1.0
    think_s: Span = 10.0
    """Mean time between the end of one page and the next."""
    min_think_s: Seconds = 5.0
    abusers: Count = 1
    abuse_factor: Multiple = 5.0
    """Each abusive client's rate as a multiple of the policy rate L/W."""
    duration_s: Span | None = None
    """Defaults to 5 windows."""



class PageLoadBurst(TrafficModel):
    name = "page_load_burst"
    summary = "legit users: pages of 8 parallel calls + follow-ups, think time; plus an abusive client"

    p: Params

    def expected_requests(self) -> float:
        """Each user's pages back to back at the shortest think time, and the abusers' rate."""
        p = self.p
        duration = p.duration_s or 5 * self.window_s
        pages = duration / max(p.followups * p.followup_gap_s + p.min_think_s, 1e-9) + 1
        return p.users * pages * (p.page_size + p.followups) + p.abusers * p.abuse_factor * self.limit / self.window_s * duration

    def generate(self) -> Arrivals:
        import pandas as pd  # the columns go over coded (scenarios.base._shared), as pandas is imported there

        p = self.p
        rng = np.random.default_rng(self.seed)
        duration = p.duration_s or 5 * self.window_s
        times: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        page_span = p.followups * p.followup_gap_s
        for user in range(p.users):
            start = rng.uniform(0.0, p.think_s)  # users do not arrive in lockstep
            user_times = []
            while start < duration:
                user_times.append(start + rng.uniform(0.0, p.parallel_spread_s, p.page_size))
                user_times.append(start + p.followup_gap_s * np.arange(1, p.followups + 1))
                think = p.min_think_s + rng.exponential(max(p.think_s - p.min_think_s, 1e-9))
                start += page_span + think
            t = np.concatenate(user_times) if user_times else np.empty(0)
            t = t[t < duration]
            times.append(t)
            ids.append(np.full(len(t), user, dtype=np.int32))
        abuse_rate = p.abuse_factor * self.limit / self.window_s
        for abuser in range(p.abusers):
            t = poisson_times(rng, abuse_rate, 0.0, duration)
            times.append(t)
            ids.append(np.full(len(t), p.users + abuser, dtype=np.int32))
        all_t, codes = np.concatenate(times), np.concatenate(ids)
        names = [f"user-{u}" for u in range(p.users)] + [f"abuser-{a}" for a in range(p.abusers)]
        return Arrivals.from_columns(
            all_t, pd.Categorical.from_codes(codes, names),
            pd.Categorical.from_codes((codes >= p.users).astype(np.int8), [LEGIT, ABUSIVE]),
            pd.Categorical.from_codes(np.zeros(len(all_t), dtype=np.int8), [ROUTE]), np.ones(len(all_t)),
        )
