"""What every config file shares (simulation and live campaigns, validate's policy files): YAML
read with one clear error, pydantic models that forbid unknown fields, the common header, and
the check that a results folder will not overwrite anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contract.errors import BadInput

M = TypeVar("M", bound=BaseModel)


class CampaignError(BadInput):
    """A configuration file that cannot be used; the message names the field's path."""


def check_out(out: Path | None) -> None:
    """A results folder must be new or empty: nothing of an earlier run is mixed in or overwritten."""
    if out is not None and out.exists() and any(out.iterdir()):
        raise CampaignError(f"--out {out}: folder exists and is not empty")


class StrictModel(BaseModel):
    """A config file's model: an unknown field is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class PolicyConfig(StrictModel):
    limit: float = Field(gt=0)
    window_s: float = Field(gt=0)
    burst: float | None = Field(default=None, gt=0)


class CampaignHeader(StrictModel):
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


def str_params(params: dict[str, Any]) -> dict[str, str]:
    """A config file's parameter values as the text ``build_model``/``build_params`` parse (as on a command line)."""
    return {k: str(v) for k, v in params.items()}


def read_yaml(path: Path) -> Any:
    """A YAML file's content; a missing or malformed file is a CampaignError naming it."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CampaignError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise CampaignError(f"{path}: not valid YAML ({exc})") from None


def validate_model(model: type[M], raw: Any, source: str) -> M:
    """``model.model_validate(raw)``; the first error becomes one CampaignError with the field's path."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise CampaignError(f"{source}: {where}: {msg}" if where else f"{source}: {msg}") from None
