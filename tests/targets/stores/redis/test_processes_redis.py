"""A node of two processes on the shared Redis store, over real HTTP: one limit across both
(exactly L admitted whichever process answers), and Ctrl-C (SIGINT to the group) stops both
with their logs joined."""

from __future__ import annotations

import os
import signal

import pandas as pd
import yaml

from tests.targets.test_processes import LIMIT, by_process, family, fill_both, gone, node_args


def test_redis_node_of_two_processes_admits_the_limit_once(start, tmp_path, redis_server, namespace):
    log = tmp_path / "decisions.parquet"
    config = tmp_path / "target.yaml"
    config.write_text(yaml.safe_dump({"store": {"name": "redis", "url": redis_server.url, "namespace": namespace}}))
    target = start(*node_args(log, "--config", str(config)))
    procs = family(target)
    statuses = fill_both(target, LIMIT)
    assert statuses.count(200) == LIMIT  # one shared count: the node admits L, not 2 x L

    os.killpg(target.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole group
    assert target.process.wait(15) == 0
    assert gone(procs)
    got = by_process(log)
    assert sorted(got) == ["node-1.p0", "node-1.p1"]
    assert sum(sum(allowed) for allowed in got.values()) == LIMIT
    assert set(pd.read_parquet(log)["source"]) == {"redis"}
