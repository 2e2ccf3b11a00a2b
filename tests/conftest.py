"""What every test shares: Hypothesis judged on properties, never on this machine's speed.

The machine is shared (its speed moves 2-3x, and the suite runs three files at a time beside
live processes), so Hypothesis's timing checks (a per-example deadline; "input generation is
slow") would fail a test for a busy moment, not for a broken property. They are off for every
test; every other health check stays on.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")
