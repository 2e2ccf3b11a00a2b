"""What every test shares: Hypothesis judged on properties, never on this machine's speed; the
two lanes (tests/lanes.py: a test that starts a process is marked ``process``, and fails if not).

The machine is shared (its speed moves 2-3x, and the suite runs three files at a time beside
live processes), so Hypothesis's timing checks (a per-example deadline; "input generation is
slow") would fail a test for a busy moment, not for a broken property. They are off for every
test; every other health check stays on.
"""

import os

from hypothesis import HealthCheck, settings

from harness.processes.ports import SHARD_ENV
from tests.lanes import (  # noqa: F401  # the lanes' hooks and guard, registered as this conftest's
    no_unmarked_process,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_protocol,
)

# each pytest-xdist worker (and every process its tests start) listens on ports of its own share:
# two workers choosing at once never draw the same port (harness/processes/ports.py)
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ[SHARD_ENV] = f"{int(os.environ['PYTEST_XDIST_WORKER'].removeprefix('gw'))}/{os.environ['PYTEST_XDIST_WORKER_COUNT']}"

settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")
