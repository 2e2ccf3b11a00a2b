"""Simulation campaigns (YAML, validated with pydantic): which scenarios through which
algorithms under which policy. The live campaign format comes with the campaign runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the field's path."""


def check_out(out: Path | None) -> None:
    """A results folder must be new or empty: nothing of an earlier run is mixed in or overwritten."""
    if out is not None and out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: folder exists and is not empty")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PolicyConfig(_Strict):
    limit: float = Field(gt=0)
    window_s: float = Field(gt=0)
    burst: float | None = Field(default=None, gt=0)


class ScenarioConfig(_Strict):
    name: str
    params: dict[str, str | int | float] = {}


class CampaignHeader(_Strict):
    """What every campaign file starts with (simulation and live); ``scenarios`` may list bare
    names."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    seed: int = 1
    policy: PolicyConfig
    algorithms: list[str] = Field(min_length=1)
    """Algorithm names, or ``all``."""

    @field_validator("scenarios", mode="before", check_fields=False)
    @classmethod
    def _names_alone(cls, value: object) -> object:
        """Allow a bare scenario name in the list."""
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value


class SimCampaign(CampaignHeader):
    scenarios: list[ScenarioConfig] = Field(min_length=1)
    params: dict[str, dict[str, str | int | float]] = {}
    """Per-algorithm parameter overrides, e.g. ``{sliding_window_ring: {buckets: 20}}``."""


def read_yaml(path: Path) -> Any:
    """A YAML file's content; a missing or malformed file is a ConfigError naming it."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None


def validate_model(model: type[M], raw: Any, source: str) -> M:
    """``model.model_validate(raw)``; the first error becomes one ConfigError with the field's path."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {where}: {msg}" if where else f"{source}: {msg}") from None


def load_sim_campaign(path: Path) -> SimCampaign:
    return validate_model(SimCampaign, read_yaml(path), str(path))
