"""One policy vocabulary for every algorithm, so that comparisons are fair.

A policy is a long-run rate of ``limit`` cost units per ``window_s`` seconds and an explicit
``burst`` (cost units admissible at once; defaults to ``limit``). Each algorithm maps it so that
its long-run rate is the same L/W:

| algorithm              | mapping                                                        |
|------------------------|----------------------------------------------------------------|
| fixed_window           | limit L per aligned window W (burst is inherent: 2L at an edge)|
| sliding_log            | limit L in any (t - W, t]                                      |
| sliding_window_counter | limit L, two aligned windows of W, previous one weighted       |
| sliding_window_ring    | limit L over the last ``buckets`` sub-windows of W / buckets   |
| token_bucket           | capacity = burst, refill rate = L / W per second               |
| leaky_bucket           | capacity = burst, leak rate = L / W per second                 |
| gcra                   | emission interval = W / L, burst tolerance = burst             |
| concurrency            | max_in_flight = burst (held until the request completes)       |
| none                   | admits everything (the overhead baseline)                      |

Any parameter can be overridden with ``--param KEY=VALUE``; the valid keys are the fields of the
algorithm's ``Params`` dataclass.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from contract.errors import BadInput
from contract.params import Bounds, check_bounds, parse_fields

from .base import derive, micros


class PolicyError(BadInput):
    """A policy or parameter that cannot be used; the message names the field."""


MAX_AMOUNT = 1e9
"""The largest limit or burst (cost units): beyond it counters lose their precision and a
sliding log's memory per key has no useful bound."""
MIN_WINDOW_S, MAX_WINDOW_S = 1e-9, 1e12
"""A window from a nanosecond to 10^12 s: past that, time stamps in float seconds lose the window (the
algorithms' properties are checked on windows of years)."""
Amount = Annotated[float, Bounds(0, MAX_AMOUNT)]
Window = Annotated[float, Bounds(MIN_WINDOW_S, MAX_WINDOW_S)]


@dataclass(frozen=True)
class Policy:
    limit: Amount
    window_s: Window
    burst: Amount | None = None

    def __post_init__(self) -> None:
        for name in ("limit", "window_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise PolicyError(f"{name} must be a positive number, got {value!r}")
        if self.burst is not None and not (math.isfinite(self.burst) and self.burst > 0):
            raise PolicyError(f"burst must be a positive number, got {self.burst!r}")
        check_bounds(self, PolicyError)

    @property
    def rate(self) -> float:
        """Long-run rate in cost units per second."""
        return self.limit / self.window_s

    @property
    def effective_burst(self) -> float:
        return self.limit if self.burst is None else self.burst


def apply_overrides(params: Any, overrides: Mapping[str, Any], algorithm: str) -> Any:
    """Replace fields of ``algorithm``'s params dataclass from values as text (``--param``) or
    typed (a campaign's YAML), by the one parser (``contract.params``), then re-validate."""
    changes = parse_fields(type(params), overrides, PolicyError, f"--param {{name}} for {algorithm}")
    params = dataclasses.replace(params, **changes) if changes else params
    check_bounds(params, PolicyError)
    return params


def require_positive(obj: Any, *names: str) -> None:
    """Shared validation for params dataclasses: each named field must be a positive number."""
    for name in names:
        value = getattr(obj, name)
        if not (math.isfinite(value) and value > 0):
            raise PolicyError(f"{name} must be a positive number, got {value!r}")


def parse_param(text: str) -> tuple[str, str]:
    """Split one ``KEY=VALUE`` argument."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise PolicyError(f"malformed --param {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


@dataclass(frozen=True)
class WindowParams:
    """L per window W, nothing else: the parameters of fixed_window, sliding_log and sliding_window_counter."""

    limit: float
    window_s: float
    window_us: ClassVar[float]

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")
        derive(self, window_us=micros(self.window_s))


def window_params(policy: Policy) -> WindowParams:
    return WindowParams(policy.limit, policy.window_s)
