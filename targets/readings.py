"""The live side of the CPU/load seam: sample this target process's CPU (psutil) and the
host's load average off the hot path, and push each reading into every layer whose algorithm
reads them (its ``Algorithm.reads`` hook: adaptive's ``sentinel_bbr``, ``sentinel_cpu``,
``gozero``). The simulator calls the same ``observe_reading`` with its model's CPU
(``harness/sim/simulator.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator

import psutil

from .algorithms.adaptive_rules import Reading
from .layers import Layer, moving_limit

EVERY_S = 0.25
"""go-zero samples its CPU every 250 ms (Sentinel every second): the finer of the two."""


def reading_layers(layers: list[Layer]) -> list[Layer]:
    """The layers whose algorithm reads CPU or load (its ``Algorithm.reads`` hook; on the memory
    store: a latency-driven algorithm never runs on Redis)."""
    return [la for la in layers if la.observes and not la.remote
            and any(la.algorithm.needs_readings(v.store.params) for v in la.variants.values())]


def push(layers: list[Layer], now: float, reading: Reading) -> None:
    """One reading for every reading layer's store (each key folds it in at its next decision),
    and each layer's shown limit refreshed once."""
    for layer in layers:
        for variant in layer.variants.values():
            state = variant.store.observe_reading(now, reading)
            if state is not None:
                layer.current_limit = moving_limit(layer.algorithm, state, variant.store.params)


async def sample_forever(layers: list[Layer]) -> None:
    """Every ``EVERY_S``: this process's CPU since the last sample (a fraction of one core) and
    the 1-minute load average."""
    process = psutil.Process()
    process.cpu_percent(None)  # the first call only starts the interval
    while True:
        await asyncio.sleep(EVERY_S)
        push(layers, time.time(), Reading(cpu=process.cpu_percent(None) / 100.0, load=os.getloadavg()[0]))


@contextlib.asynccontextmanager
async def sampling(layers: list[Layer]) -> AsyncIterator[None]:
    """Run the sampler for as long as the target serves, only if some layer reads."""
    chosen = reading_layers(layers)
    task = asyncio.get_running_loop().create_task(sample_forever(chosen)) if chosen else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
