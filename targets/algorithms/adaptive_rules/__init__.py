"""The adaptive rules people deploy, each a pure port of its original's behaviour (the module
docstrings cite the source file and list where the port differs)."""

from __future__ import annotations

from .base import Reading, Rule
from .envoy import ENVOY
from .gozero import GOZERO
from .netflix import AIMD, GRADIENT2, VEGAS
from .sentinel import SENTINEL_BBR, SENTINEL_CPU
from .windowed import windowed

RULES: dict[str, Rule] = {r.name: r for r in (GRADIENT2, AIMD, VEGAS, ENVOY, SENTINEL_BBR, SENTINEL_CPU, GOZERO)}

WINDOWABLE = ("gradient2", "aimd", "vegas")
"""The rules ``WindowedLimit`` wraps in its source (Netflix's ``Limit``s)."""

__all__ = ["RULES", "WINDOWABLE", "Reading", "Rule", "windowed"]
