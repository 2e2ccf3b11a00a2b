"""A Redis password never reaches a message, a log or a results file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.campaign.live import RedisOptions, load_campaign
from harness.live.runner import LiveRunner
from harness.processes.ports import free_port
from targets.redact import redact_url, redacted


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("rediss://bob:hunter2@cache.example:6380", "rediss://bob:***@cache.example:6380"),
    ("redis://hunter2@cache.example", "redis://***@cache.example"),
    ("redis://bob:p@ss:w@rd@h:1", "redis://bob:***@h:1"),
    ("redis://h:1/0?password=hunter2&db=1", "redis://h:1/0?password=***&db=1"),
    ("unix:///run/redis.sock?password=hunter2", "unix:///run/redis.sock?password=***"),
    ("redis://bob:hunter2@[::1:6379", "redis://bob:***@[::1:6379"),
])
def test_redact_url_hides_the_password_and_keeps_the_rest(url, shown):
    assert redact_url(url) == shown


def test_a_config_tree_has_every_url_redacted():
    tree = {"redis": {"url": "redis://:hunter2@h"}, "runs": [{"store": {"url": "redis://u:hunter2@h"}}], "n": 1}
    assert "hunter2" not in yaml.safe_dump(redacted(tree))
    assert redacted(tree)["n"] == 1 and tree["redis"]["url"] == "redis://:hunter2@h"  # the input is left alone


@pytest.mark.process
def test_campaign_yaml_has_no_password(tmp_path):
    campaign = load_campaign(Path(__file__).parents[2] / "campaigns" / "smoke.yaml").model_copy(update={"redis": RedisOptions(url="redis://:hunter2@h:1")})
    LiveRunner(campaign, tmp_path / "out").run_all([])
    written = (tmp_path / "out" / "campaign.yaml").read_text()
    assert "hunter2" not in written and "redis://:***@h:1" in written


@pytest.mark.process
def test_the_startup_error_does_not_print_the_password():
    done = subprocess.run([sys.executable, "-m", "targets", "--port", str(free_port()), "--store", "redis",
                           "--redis-url", "redis://bob:hunter2@127.0.0.1:1/0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    assert "hunter2" not in done.stderr and "redis://bob:***@127.0.0.1:1/0" in done.stderr, done.stderr
