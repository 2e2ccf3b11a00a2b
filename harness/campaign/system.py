"""What a simulation puts around the limiter (harness/sim/system.py): the target's processes and
their CPU per request, the network delay, the store's round trip (``system:`` of a simulation
campaign, ``simulate --system KEY=VALUE``), and the downstream (``downstream:``, the live
campaign's own settings). Checked before anything runs: a value the model cannot honour is one
line naming the field."""

from __future__ import annotations

from pydantic import Field

from contract.stores import StoreKind

from .config_file import CampaignError, StrictModel, validate_model
from .live import DownstreamSettings

MAX_VIRTUAL_REQUESTS = 10_000_000
"""Requests one simulated run may hold: a run keeps its arrivals, its decisions as columns and
the system model's columns in memory, and builds and writes its logs in parts (harness/sim):
~330 bytes a request at its peak (a 10-million-request run of campaigns/throughput-1m.yaml:
3.4 GB resident), so 10 million stay under 4 GiB."""
REQUEST_BYTES = 400
"""A simulated request's bytes at a run's peak, rounded up from the ~330 measured: with
``contract.memory`` a machine with less than 8 GiB gets a smaller bound than 10 million."""


MAX_US = 60_000_000.0
"""A time per request (CPU, network, store) of a minute at most: beyond, no simulated run of the
suite's lengths completes a request, and the figures it prints are meaningless."""


class SystemSettings(StrictModel):
    processes: int = Field(default=1, ge=1, le=1024)
    """Target processes of the node, each a FIFO server."""
    cpu_us: float | None = Field(default=None, ge=0, le=MAX_US, allow_inf_nan=False)
    """Target CPU per request, admitted or refused; default: `bench targets`' figure for the algorithm."""
    one_way_us: float | None = Field(default=None, ge=0, le=MAX_US, allow_inf_nan=False)
    """Client <-> target network delay, each way; default: the loopback figure."""
    store: StoreKind = "memory"
    """``redis`` adds its round trip to every decision (`bench redis`' figure for the algorithm)."""
    store_rtt_us: float | None = Field(default=None, ge=0, le=MAX_US, allow_inf_nan=False)
    slot_overhead_us: float | None = Field(default=None, ge=0, le=MAX_US, allow_inf_nan=False)
    """What each downstream call holds its slot beyond its service time; default: the live
    stack's, as `run_bench.py bench slot-overhead` measures it (0: the downstream as a pure queue)."""


DOWNSTREAM_KEYS = tuple(DownstreamSettings.model_fields)


def settings_from_pairs(pairs: list[tuple[str, str]]) -> tuple[SystemSettings, DownstreamSettings]:
    """``--system KEY=VALUE`` pairs: the downstream's keys (concurrency, median_ms, sigma) and the
    system's; an unknown key or a bad value raises CampaignError naming it."""
    system: dict[str, str] = {}
    downstream: dict[str, str] = {}
    valid = (*SystemSettings.model_fields, *DOWNSTREAM_KEYS)
    for key, value in pairs:
        if key not in valid:
            raise CampaignError(f"--system {key}: unknown key; valid: {', '.join(valid)}")
        (downstream if key in DOWNSTREAM_KEYS else system)[key] = value
    return (validate_model(SystemSettings, system, "--system"),
            validate_model(DownstreamSettings, downstream, "--system"))
