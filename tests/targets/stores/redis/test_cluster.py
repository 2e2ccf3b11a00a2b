"""The same scripts on a real 3-master Redis Cluster started from the redis-server binary."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio.cluster
import redis.cluster
from hypothesis import HealthCheck, given, settings
from redis_conformance import PARAMS, replay, steps

from harness.processes.redis_server import RedisClusterServers
from targets.algorithms import ALGORITHMS
from targets.stores.redis import AsyncRedisStore, RedisConfigError, RedisStore
from targets.stores.redis.connect import check


@pytest.fixture(scope="module")
def cluster_client(redis_cluster: RedisClusterServers) -> Iterator[redis.cluster.RedisCluster]:
    c = redis.cluster.RedisCluster.from_url(redis_cluster.url)
    yield c
    c.close()


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_cluster_matches_memory(name: str, cluster_client, namespace: str) -> None:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(params=PARAMS[name], trace=steps)
    def check_trace(params, trace) -> None:
        replay(cluster_client, name, params, trace, namespace)

    check_trace()


def test_keys_spread_over_the_masters(cluster_client, namespace: str) -> None:
    algorithm = ALGORITHMS["sliding_log"]
    store = RedisStore(cluster_client, algorithm, algorithm.params_type(2.0, 10.0), namespace=namespace)
    nodes = set()
    for i in range(30):
        assert store.decide(f"client-{i}").allowed  # two keys per call, never CROSSSLOT
        nodes.add(cluster_client.get_node_from_key(store.codec.keys(f"client-{i}")[0]).name)
    assert len(nodes) == 3


def test_async_cluster_client(redis_cluster: RedisClusterServers, namespace: str) -> None:
    async def run() -> list[bool]:
        client = redis.asyncio.cluster.RedisCluster.from_url(redis_cluster.url)
        try:
            algorithm = ALGORITHMS["token_bucket"]
            store = AsyncRedisStore(client, algorithm, algorithm.params_type(3.0, 0.001), namespace=namespace)
            return [(await store.decide(f"k{i % 4}")).allowed for i in range(16)]
        finally:
            await client.aclose()

    assert asyncio.run(run()) == [True] * 12 + [False] * 4


def test_cluster_check(redis_cluster: RedisClusterServers) -> None:
    check(redis_cluster.url, cluster=True)
    with pytest.raises(RedisConfigError, match="is a cluster node"):
        check(redis_cluster.url)
