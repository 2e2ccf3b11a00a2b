"""The contract's copy of the algorithm names (it may import nothing of targets) stays the registry's."""

from __future__ import annotations

from contract.schema import ALGORITHM_NAMES
from targets.algorithms import ALGORITHMS


def test_the_contracts_algorithm_names_are_the_registrys_in_order():
    assert list(ALGORITHM_NAMES) == list(ALGORITHMS)
