"""Simulation campaigns (``run_bench.py simulate --campaign``): which scenarios through which
algorithms under which policy, with per-algorithm parameter overrides."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from .config_file import CampaignHeader, StrictModel, read_yaml, validate_model


class ScenarioConfig(StrictModel):
    name: str
    params: dict[str, str | int | float] = Field(default_factory=dict)


class SimCampaign(CampaignHeader):
    scenarios: list[ScenarioConfig] = Field(min_length=1)
    params: dict[str, dict[str, str | int | float]] = Field(default_factory=dict)
    """Per-algorithm parameter overrides, e.g. ``{sliding_window_ring: {buckets: 20}}``."""


def load_sim_campaign(path: Path) -> SimCampaign:
    return validate_model(SimCampaign, read_yaml(path), str(path))
