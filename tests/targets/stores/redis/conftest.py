"""Redis servers of our own for the tests (free ports, no persistence, killed at the end).

Without ``redis-server``/``redis-cli`` on PATH the Redis tests are skipped with one reason,
except in CI (CI=true), where they run and fail: a missing Redis must not pass silently there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from harness.processes.redis_server import RedisClusterServers, RedisServer

HAVE_REDIS = bool(shutil.which("redis-server") and shutil.which("redis-cli"))
IN_CI = os.environ.get("CI", "").lower() == "true"
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAVE_REDIS or IN_CI:
        return
    skip = pytest.mark.skip(reason="redis-server/redis-cli not on PATH: install Redis 7 to run tests/redis (CI never skips them)")
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServers]:
    with RedisClusterServers() as cluster:
        yield cluster


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_server.url)
    yield c
    c.close()


@pytest.fixture
def namespace() -> str:
    return f"t{uuid.uuid4().hex[:10]}"
