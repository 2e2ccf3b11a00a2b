"""The one parameter parser: text (a command line, plan.json) and typed values (YAML) alike, by
the field's hint, with the bound in the message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from contract.errors import BadInput
from contract.params import Bounds, check_bounds, parse_fields


@dataclass(frozen=True)
class P:
    n: Annotated[int, Bounds(1, 10)] = 1
    x: float = 0.5
    on: bool = False
    mode: Literal["a", "b"] = "a"
    cap: Annotated[float, Bounds(0, 2)] | None = None
    name: str = ""
    span: Annotated[float, Bounds(0, 2, above=True)] = 1.0


@pytest.mark.parametrize(("given", "parsed"), [
    ({"n": "3", "x": "1e-3", "on": "1", "mode": "b", "cap": "none"}, {"n": 3, "x": 0.001, "on": True, "mode": "b", "cap": None}),
    ({"n": 3, "x": 2, "on": True, "cap": 1.5, "name": 7}, {"n": 3, "x": 2.0, "on": True, "cap": 1.5, "name": "7"}),
    ({"n": 4.0, "on": "false", "cap": None}, {"n": 4, "on": False, "cap": None}),
    ({"on": 0, "x": " 7 "}, {"on": False, "x": 7.0}),
    ({"n": "1e1"}, {"n": 10}),  # a whole number in exponent form: how large counts are written
    ({"span": "1e-9"}, {"span": 1e-9}),  # above 0, however little
])
def test_text_and_typed_values_parse_alike(given, parsed):
    assert parse_fields(P, given, BadInput, "p {name}") == parsed


@pytest.mark.parametrize(("given", "message"), [
    ({"n": "11"}, "n=11: out of bounds, must be between 1 and 10"),
    ({"n": 0}, "n=0: out of bounds, must be between 1 and 10"),
    ({"n": "2.5"}, "n='2.5': expected an integer"),
    ({"n": "1e12"}, "n=1000000000000: out of bounds, must be between 1 and 10"),
    ({"n": "2.5e0"}, "n='2.5e0': expected an integer"),
    ({"n": "1e999999999"}, "n='1e999999999': expected an integer"),
    ({"n": "1e"}, "n='1e': expected an integer"),
    ({"n": 2.5}, "n=2.5: expected an integer"),
    ({"n": True}, "n=True: expected an integer"),
    ({"x": "nan"}, "x='nan': expected a finite number"),
    ({"x": "lots"}, "x='lots': expected a number"),
    ({"on": "2"}, "on='2': expected true or false"),
    ({"on": 2}, "on=2: expected true or false"),
    ({"mode": "c"}, "mode='c': choose from: a, b"),
    ({"cap": "3"}, "cap=3.0: out of bounds, must be between 0 and 2"),
    ({"span": "0"}, "span=0.0: out of bounds, must be > 0 and <= 2"),
    ({"span": -1}, "span=-1.0: out of bounds, must be > 0 and <= 2"),
    ({"zz": "1"}, "unknown p 'zz'; valid: n, x, on, mode, cap, name, span"),
])
def test_bad_values_name_the_field_the_value_and_the_bound(given, message):
    with pytest.raises(BadInput) as err:
        parse_fields(P, given, BadInput, "p {name}")
    assert str(err.value) == message


def test_defaults_and_derived_values_are_bounded_too():
    check_bounds(P(), BadInput)
    with pytest.raises(BadInput, match=r"n=99: out of bounds, must be between 1 and 10"):
        check_bounds(P(n=99), BadInput)


@pytest.mark.parametrize(("bounds", "text"), [
    (Bounds(1, 10), "between 1 and 10"), (Bounds(0, 2, above=True), "> 0 and <= 2"),
    (Bounds(0, above=True), "> 0"), (Bounds(0), ">= 0"), (Bounds(high=5), "<= 5"),
])
def test_each_bound_is_written_as_it_reads(bounds, text):
    assert bounds.text() == text
