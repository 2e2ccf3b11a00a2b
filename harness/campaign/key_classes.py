"""The key classes file of `validate --traffic --classes FILE`: which requests are whose.

Each class is a regex on the key (``api_key:...``, ``user:...``, ``ip:...``) or on the user agent;
the first class that matches a request names it (``other`` when none does). ``max_refused`` makes
a class a gate: the share of its requests the policy would refuse must stay at or under it.

    classes:
      - {name: internal, key: '^ip:10\\.'}
      - {name: crawler, agent: '(?i)bot|crawler|spider'}
      - {name: customer, key: '^api_key:', max_refused: 0.001}
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, model_validator

from .config_file import CampaignError, StrictModel, read_yaml, validate_model

OTHER = "other"


class KeyClass(StrictModel):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    key: str | None = None
    """A regex searched in the key."""
    agent: str | None = None
    """A regex searched in the user agent."""
    max_refused: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _one_pattern(self) -> KeyClass:
        if (self.key is None) == (self.agent is None):
            raise ValueError("give one of key: REGEX or agent: REGEX")
        return self


class KeyClasses(StrictModel):
    classes: list[KeyClass] = Field(min_length=1)


def load_classes(path: Path) -> list[tuple[KeyClass, re.Pattern[str]]]:
    """Each class with its compiled regex; a bad regex names its class."""
    model = validate_model(KeyClasses, read_yaml(path), str(path))
    out = []
    for c in model.classes:
        if c.name == OTHER:
            raise CampaignError(f"{path}: classes[{c.name}]: {OTHER!r} is the name of the unmatched requests")
        try:
            out.append((c, re.compile(c.key if c.key is not None else c.agent or "")))
        except re.error as exc:
            raise CampaignError(f"{path}: classes[{c.name}]: not a regex ({exc})") from None
    return out
