"""The one parameter parser: a dataclass's fields read from their type hints, whoever passes them.

Algorithm params (``--param``, a campaign's ``params:``), scenario params (``--scenario-param``,
an entry's ``params:``) and the plan Locust replays all go through ``parse_fields``: a value is
either typed already (YAML's ints, floats, bools) or text (a command line, plan.json), and
either way it is checked against its hint: ``int``, ``float`` (finite), ``bool``, ``str``, a
``Literal`` (its choices in the message), ``X | None``, and ``Annotated[X, Bounds(lo, hi)]``:
the bound that keeps a parameter from sizing unbounded work or memory, declared next to the
field and named in the message. The ground floor, so that algorithms and traffic models (which
import nothing else of the project) can declare their fields with it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Union

from .errors import BadInput

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Bounds:
    """An inclusive range for a number (``None``: unbounded on that side)."""

    low: float | None = None
    high: float | None = None
    above: bool = False
    """The low end excluded (``> low``): a duration or a rate that must not be 0."""

    def check(self, name: str, value: float, error: type[BadInput] = BadInput) -> None:
        below = self.low is not None and (value <= self.low if self.above else value < self.low)
        if below or (self.high is not None and value > self.high):
            raise error(f"{name}={value!r}: out of bounds, must be {self.text()}")

    def text(self) -> str:
        low = None if self.low is None else f"{'>' if self.above else '>='} {_number_text(self.low)}"
        high = None if self.high is None else f"<= {_number_text(self.high)}"
        if low and high and not self.above:
            return f"between {_number_text(self.low)} and {_number_text(self.high)}"
        return " and ".join(part for part in (low, high) if part)


def _number_text(x: float | None) -> str:
    """A bound as a reader writes it: ``2,678,400``, ``0.001``, ``1e-06``."""
    if isinstance(x, int) or (x is not None and float(x).is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:g}"


def parse_fields(cls: type, values: dict[str, Any], error: type[BadInput], what: str) -> dict[str, Any]:
    """``values`` (text or typed) converted to the dataclass ``cls``'s field types and checked
    against their bounds; an unknown name lists the valid ones (``what``: how the message calls
    it, ``{name}`` replaced by the unknown name's repr)."""
    hints = field_hints(cls)
    out: dict[str, Any] = {}
    for name, raw in values.items():
        if name not in hints:
            raise error(f"unknown {what.format(name=repr(name))}; valid: {', '.join(hints) or 'none'}")
        out[name] = parse_value(name, hints[name], raw, error)
    return out


def check_bounds(obj: Any, error: type[BadInput]) -> None:
    """Every bounded field of the dataclass instance ``obj`` within its bounds (defaults and
    values derived from the policy included, not only those given)."""
    for name, hint in field_hints(type(obj)).items():
        value = getattr(obj, name)
        bounds = _bounds(hint)
        if bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
            bounds.check(name, value, error)


def field_hints(cls: type) -> dict[str, Any]:
    """The init fields of a dataclass with their resolved hints (``Annotated`` kept)."""
    return dict(_field_hints(cls))


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """Resolved once per class: every policy the fingerprint tries checks its bounds (a judge
    session builds tens of thousands), and resolving the hints was a third of its time."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def parse_value(name: str, hint: Any, raw: Any, error: type[BadInput] = BadInput) -> Any:
    """One value for a field of type ``hint`` (see the module's docstring)."""
    bounds = _bounds(hint)
    kind = _strip(hint)
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (Union, types.UnionType):
        if (raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null"))) and type(None) in args:
            return None
        kind = next(a for a in args if a is not type(None))
    value = _convert(name, kind, raw, error)
    if bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
        bounds.check(name, value, error)
    return value


def _convert(name: str, kind: Any, raw: Any, error: type[BadInput]) -> Any:
    if typing.get_origin(kind) is Literal:
        choices = typing.get_args(kind)
        if raw not in choices:
            raise error(f"{name}={raw!r}: choose from: {', '.join(map(str, choices))}")
        return raw
    text = raw.strip() if isinstance(raw, str) else raw
    if kind is bool:
        if isinstance(text, bool) or text in (0, 1):
            return bool(text)
        if isinstance(text, str) and text.lower() in TRUE + FALSE:
            return text.lower() in TRUE
        raise error(f"{name}={raw!r}: expected true or false")
    if kind is int:
        return _number(name, raw, text, int, error)
    if kind is float:
        return _number(name, raw, text, float, error)
    return str(raw)


def _number(name: str, raw: Any, text: Any, kind: type, error: type[BadInput]) -> Any:
    try:
        if isinstance(text, bool):
            raise ValueError
        value = float(text) if kind is float else _integer(text)
    except (TypeError, ValueError, OverflowError):
        expected = "an integer" if kind is int else "a number"
        raise error(f"{name}={raw!r}: expected {expected}") from None
    if not math.isfinite(value):
        raise error(f"{name}={raw!r}: expected a finite number")
    return value


def _integer(text: Any) -> int:
    """An int from text or a number; a float only when it is whole (``3.0`` from YAML), text in
    exponent form too when it is whole (``1e6``: how a large count is written, so that ``1e12``
    meets its bound rather than a complaint about its spelling), up to 30 digits (no bound in use
    is wider, and a huge exponent would cost the conversion its time)."""
    if isinstance(text, float):
        if not text.is_integer():
            raise ValueError
        return int(text)
    if isinstance(text, str) and "e" in text.lower():
        try:
            exact = Decimal(text)
        except InvalidOperation:
            raise ValueError from None
        if not exact.is_finite() or exact.adjusted() > 30 or exact != exact.to_integral_value():
            raise ValueError
        return int(exact)
    return int(text)


def _bounds(hint: Any) -> Bounds | None:
    if typing.get_origin(hint) is typing.Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, Bounds)), None)
    for arg in typing.get_args(hint):  # Annotated inside ``X | None``
        found = _bounds(arg) if typing.get_origin(arg) is typing.Annotated else None
        if found is not None:
            return found
    return None


def _strip(hint: Any) -> Any:
    """``Annotated[X, ...]`` -> ``X`` (also inside ``X | None``)."""
    if typing.get_origin(hint) is typing.Annotated:
        return typing.get_args(hint)[0]
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = tuple(_strip(a) for a in typing.get_args(hint))
        return Union[args]  # noqa: UP007 (rebuilt from a tuple of types)
    return hint
