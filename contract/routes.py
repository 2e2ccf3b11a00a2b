"""The one route catalogue: the routes a target limits, under the two names they go by.

A target's config names a route by its short name (``items``); a traffic model, the plan Locust
replays and the logs name it by method and path (``GET /api/items``). Both maps, and the way from
one to the other, are derived from the one table here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadInput


@dataclass(frozen=True)
class Route:
    name: str
    """The target config's name (``limits[].routes``)."""
    method: str
    path: str
    cost: float = 1.0
    """What one request costs by default (``routes.<name>.cost`` replaces it)."""
    api: bool = True
    """Limited by the default per-client limit (login has a limit of its own, or none)."""
    body: bytes = b"{}"
    """What the target answers when it serves the request."""

    @property
    def model_name(self) -> str:
        """The traffic model's name: ``METHOD /path``."""
        return f"{self.method} {self.path}"


class UnknownRoute(BadInput):
    """A route that is not in the catalogue: an error, never a fallback to another route."""


ITEMS = Route("items", "GET", "/api/items", body=b'{"items":[1,2,3]}')
SEARCH = Route("search", "GET", "/api/search", cost=2.0, body=b'{"results":[]}')
REPORTS = Route("reports", "POST", "/api/reports", cost=20.0, body=b'{"report":"queued"}')
LOGIN = Route("login", "POST", "/login", api=False, body=b'{"ok":true}')
CATALOGUE = (ITEMS, SEARCH, REPORTS, LOGIN)
"""The limited routes (``GET /healthz`` and the admin endpoints are never limited)."""

ROUTE_PATHS: dict[str, tuple[str, str]] = {r.name: (r.method, r.path) for r in CATALOGUE}
"""Target config name -> (method, path)."""
MODEL_ROUTES: dict[str, tuple[str, str]] = {r.model_name: (r.method, r.path) for r in CATALOGUE}
"""Model route name -> (method, path) of the target."""
TARGET_ROUTES: dict[str, str] = {r.model_name: r.name for r in CATALOGUE}
"""Model route name -> target config name."""
BY_MODEL_NAME: dict[str, Route] = {r.model_name: r for r in CATALOGUE}


def model_route(name: str) -> Route:
    """The route a traffic model, a trace or a plan names (``GET /api/items``); UnknownRoute
    naming the choices otherwise."""
    route = BY_MODEL_NAME.get(name)
    if route is None:
        raise UnknownRoute(f"unknown route {name!r}; choose from: {', '.join(BY_MODEL_NAME)}")
    return route
