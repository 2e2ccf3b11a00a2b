"""What the judging sessions in virtual time share: the policy they stand behind, the hunt's
roles and time, and the most a limiter's own log shows one key admitted in a window
(``test_judge_virtual.py``, ``test_judge_virtual_hunts.py``, ``test_judge_no_model.py``,
``test_judge_stateful.py``)."""

from __future__ import annotations

from collections import Counter

from harness.judge import check
from harness.judge.virtual import VirtualEndpoint
from targets.algorithms import Policy

POLICY = Policy(10, 1.0, 10)
HUNT_ROLES = {"learn", "probe", "check-fields", "hunt-first-edge", "hunt-clock-edge"}
"""The learning and the edge hunts: what a session sent before it predicts, then checks."""
PHASE_KEYS = Counter({"explore-gaps": 1, "explore-ramp": 1, "check-steady": len(check.STEADY),
                      "check-gaps": len(check.HELD_GAPS) + 1, "check-after-refusals": 1, "hunt-gaps": 1})
"""The keys of the phase after the edge hunts, by role (``harness/judge/check.py``)."""


def hunt_s(endpoint: VirtualEndpoint) -> float:
    """How long the learning and the edge hunts took, from the session's start."""
    return max(s.answer.done for s in endpoint.log if s.role in HUNT_ROLES) - endpoint.start


def most_in_window(decided: dict[int, list[float]], window_s: float) -> int:
    """The most one key was admitted in any ``window_s`` on the limiter's own times (brute force)."""
    return max((sum(0 <= u - t < window_s for u in times) for times in decided.values() for t in times), default=0)
