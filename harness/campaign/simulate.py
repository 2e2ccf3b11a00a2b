"""Simulation campaigns (``run_bench.py simulate --campaign``): which scenario entries through which
algorithms under which policy, with per-algorithm parameter overrides (the entries and the header
are the live campaign's too: config_file.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from .config_file import CampaignHeader, ScenarioEntry, read_yaml, validate_model
from .live import DownstreamSettings
from .system import SystemSettings

LIVE_ONLY = ("stores", "target")
"""Entry fields of a live campaign (harness.campaign.live.LiveScenario) that a simulation has no use for."""


class SimCampaign(CampaignHeader):
    scenarios: list[ScenarioEntry] = Field(min_length=1)
    downstream: DownstreamSettings = DownstreamSettings()
    """The service behind the limiter, as a live campaign's (a model's health schedule on top)."""
    system: SystemSettings = SystemSettings()
    """The target's processes, CPU per request, network delay and store (harness/sim/system.py)."""

    @model_validator(mode="before")
    @classmethod
    def _no_live_only_fields(cls, raw: object) -> object:
        items = raw.get("scenarios") if isinstance(raw, dict) else None
        for item in items if isinstance(items, list) else []:
            live = [k for k in LIVE_ONLY if isinstance(item, dict) and k in item]
            if live:
                name = ScenarioEntry.model_construct(name=str(item.get("name")), label=item.get("label")).where
                raise ValueError(f"{name}.{live[0]}: only live campaigns (run_bench.py run) have {live[0]}; "
                                 "a simulation runs every algorithm in one process on the memory store")
        return raw


def load_sim_campaign(path: Path) -> SimCampaign:
    return validate_model(SimCampaign, read_yaml(path), str(path))
