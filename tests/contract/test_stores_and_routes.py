"""The store and route names, typed once: every label parses to the choice that spells it, and an
unknown route or store is an error naming the choices (never a fallback)."""

from __future__ import annotations

from typing import get_args

import pytest

from contract.routes import CATALOGUE, ITEMS, REPORTS, UnknownRoute, model_route
from contract.stores import REDIS_MODES, STORE_CHOICES, STORE_LABELS, StoreChoice, StoreError
from harness.campaign.live import StoreName
from scenarios.base import Arrivals, Request
from scenarios.live_plan import worker_share
from targets.config import API_ROUTES, DEFAULT_COSTS


def test_every_label_is_spelled_by_its_choice_and_parses_back():
    assert STORE_LABELS == ("memory", "redis", "redis-shared", "redis-local", "redis-local-split", "redis-leased",
                            "redis-naive")
    assert all(StoreChoice.parse(c.label) is c for c in STORE_CHOICES)
    assert get_args(StoreName) == STORE_LABELS and {c.mode for c in STORE_CHOICES} - {None} == set(REDIS_MODES)


def test_what_a_choice_means():
    split = StoreChoice.parse("redis-local-split")
    assert (split.kind, split.mode, split.split, split.virtual_store, split.shares_limit) == ("redis", "local", True,
                                                                                              "local_split", False)
    assert StoreChoice.parse("redis-local").virtual_store == "local"
    assert StoreChoice.parse("redis").resolved("leased").label == "redis-leased"
    assert StoreChoice.parse("memory").resolved("leased").label == "memory"
    assert StoreChoice.parse("redis-naive").shares_limit and not StoreChoice.parse("memory").shares_limit
    assert [c.label for c in STORE_CHOICES if c.under("redis-local")] == ["redis-local", "redis-local-split"]
    assert [c.label for c in STORE_CHOICES if c.under("redis")] == list(STORE_LABELS[1:]) and not StoreChoice().under("redis")
    with pytest.raises(StoreError, match="unknown store 'redis-sharded'; choose from: memory, redis, redis-shared"):
        StoreChoice.parse("redis-sharded")


def test_the_target_takes_its_costs_and_default_routes_from_the_catalogue():
    assert DEFAULT_COSTS == {"items": 1.0, "search": 2.0, "reports": 20.0, "login": 1.0}
    assert API_ROUTES == ("items", "search", "reports")
    assert model_route("POST /api/reports") is REPORTS and {r.model_name for r in CATALOGUE} >= {ITEMS.model_name}


def test_an_unknown_route_in_a_plan_is_an_error_not_get_items():
    """It was sent as GET /api/items without a word."""
    arrivals = Arrivals.from_requests([Request(0.0, "c", "legit", "k", "GET /api/itemz", 1.0)])
    with pytest.raises(UnknownRoute, match="unknown route 'GET /api/itemz'; choose from: GET /api/items, GET /api/search"):
        worker_share(arrivals, 0, 1)
