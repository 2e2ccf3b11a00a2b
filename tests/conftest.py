"""Parallel runs (``make test``: pytest-xdist, ``--dist loadgroup``): each test file is one unit
of work, as ``--dist loadfile`` would make it (module fixtures run once), except the live
campaigns whose assertions compare timings (boundary-burst physics, retry-storm waves): those
files share one group, so no two of them run at once and fight over the cores."""

from __future__ import annotations

import pytest

TIMED_LIVE = {"tests/harness/live/test_live_campaign.py", "tests/scenarios/test_scenario_library_live.py"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group("timed-live" if path in TIMED_LIVE else path))
