"""The one route catalogue: the routes a target limits, under the two names they go by.

A target's config names a route by its short name (``items``); a traffic model, the plan Locust
replays and the logs name it by method and path (``GET /api/items``). Both maps, and the way from
one to the other, are derived from the one table here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    name: str
    """The target config's name (``limits[].routes``)."""
    method: str
    path: str

    @property
    def model_name(self) -> str:
        """The traffic model's name: ``METHOD /path``."""
        return f"{self.method} {self.path}"


CATALOGUE = (
    Route("items", "GET", "/api/items"),
    Route("search", "GET", "/api/search"),
    Route("reports", "POST", "/api/reports"),
    Route("login", "POST", "/login"),
)
"""The limited routes (``GET /healthz`` and the admin endpoints are never limited)."""

ROUTE_PATHS: dict[str, tuple[str, str]] = {r.name: (r.method, r.path) for r in CATALOGUE}
"""Target config name -> (method, path)."""
MODEL_ROUTES: dict[str, tuple[str, str]] = {r.model_name: (r.method, r.path) for r in CATALOGUE}
"""Model route name -> (method, path) of the target."""
TARGET_ROUTES: dict[str, str] = {r.model_name: r.name for r in CATALOGUE}
"""Model route name -> target config name."""
