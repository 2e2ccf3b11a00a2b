"""What every config file shares (simulation and live campaigns, validate's policy files): YAML
read with one clear error naming the field (a list item by its value, an unknown field with the
valid ones), pydantic models that forbid unknown fields, the common header with the scenario
entries both campaigns list, and the check that a results folder will not overwrite anything."""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, Tag, ValidationError, field_validator, model_validator

from contract.errors import BadInput
from contract.paths import check_output, read_input, yaml_problem
from scenarios import SCENARIOS, ScenarioError, TrafficModel, build_model
from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params, get_algorithm

M = TypeVar("M", bound=BaseModel)
LABEL = re.compile(r"[A-Za-z0-9.-]+(_[A-Za-z0-9.-]+)*")
"""A label never holds ``__``, the separator of run folder names."""
ParamValue = bool | int | float | str | None
"""A parameter as YAML types it, passed on as it is (the one parser, ``contract.params``, reads it by the field's hint)."""
GUARDED_LIMIT = "adaptive"
"""The limit name of the adaptive limiter that guards the downstream as a whole (live: its one ``global`` layer)."""
GATEWAY_ALGORITHM = "token_bucket"


class CampaignError(BadInput):
    """A configuration file that cannot be used; the message names the field's path."""


def check_out(out: Path | None) -> None:
    """A results folder must be new or empty (nothing of an earlier run is mixed in or
    overwritten) and creatable here."""
    if out is None:
        return
    check_output(out, "--out", folder=True)
    if out.exists() and any(out.iterdir()):
        raise CampaignError(f"--out {out}: folder exists and is not empty")


class StrictModel(BaseModel):
    """A config file's model: an unknown field is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class PolicyConfig(StrictModel):
    limit: float = Field(gt=0)
    window_s: float = Field(gt=0)
    burst: float | None = Field(default=None, gt=0)


class GatewayConfig(StrictModel):
    """A gateway's token bucket in front of an entry's adaptive limiter (the layering the source
    article recommends): ``rate`` requests a second, ``burst`` at once, for the whole service
    (scope ``global``). Live it is the target's first layer; in virtual time the same check
    (harness/sim/gateway_store.py)."""

    rate: float = Field(gt=0, le=1e9)
    burst: float = Field(gt=0, le=1e9)

    @property
    def policy(self) -> Policy:
        return Policy(self.rate, 1.0, self.burst)

    def spelled(self) -> dict[str, float]:
        """run.json's and the summary's ``gateway``."""
        return {"rate": self.rate, "burst": self.burst}


class ScenarioEntry(StrictModel):
    """One entry of a campaign's ``scenarios``, the same in simulation and live campaigns: a
    scenario with its own parameters (and optionally its own policy and algorithms). Entries of
    one scenario need a distinct ``label`` each; runs are named ``<name>-<label>``."""

    name: str
    label: str | None = None
    """Tells apart entries of one scenario (e.g. one per backoff policy): runs are named
    ``<name>-<label>`` (folders, run.json, summary)."""
    params: dict[str, ParamValue] = {}
    policy: PolicyConfig | None = None
    """Overrides the campaign's policy for this entry (e.g. a strict per-second limit)."""
    algorithms: list[str] | None = None
    """Restricts the campaign's algorithms for this entry."""
    algorithm_params: dict[str, dict[str, ParamValue]] = {}
    """Per-algorithm parameters for this entry, over the campaign's ``params`` (e.g. one entry
    per adaptive rule: ``{adaptive: {rule: vegas}}``)."""
    gateway: GatewayConfig | None = None
    """A token bucket in front of the entry's adaptive limiter (``{rate, burst}``); only in front
    of a limiter that observes latency (``adaptive``): layered rate limits are a live target's ``limits``."""

    @field_validator("label")
    @classmethod
    def _label_fits_a_run_name(cls, value: str | None) -> str | None:
        if value is not None and not LABEL.fullmatch(value):
            raise ValueError(f"{value!r}: use letters, digits, '.', '-' and single '_' (runs are named <scenario>-<label>)")
        return value

    @property
    def run_name(self) -> str:
        return f"{self.name}-{self.label}" if self.label else self.name

    @property
    def where(self) -> str:
        """How messages name this entry: ``scenarios[retry_storm-full_jitter]``."""
        return f"scenarios[{self.run_name}]"


class CampaignHeader(StrictModel):
    """What every campaign file starts with (simulation and live); ``scenarios`` may list bare
    names. Subclasses declare ``scenarios`` (a list of ScenarioEntry or a subclass of it)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    seed: int = Field(default=1, ge=0, le=2**63 - 1)
    repeats: int = Field(default=1, ge=1, le=100)
    """Each run this many times, repeat k with the seed ``seed + k - 1`` (folders ``<run>__r<k>``):
    every figure then carries its spread (docs/analysis.md, "Repeats and spread")."""
    policy: PolicyConfig
    algorithms: list[str] = Field(min_length=1)
    """Algorithm names, or ``all``."""
    params: dict[str, dict[str, ParamValue]] = Field(default_factory=dict)
    """Per-algorithm parameter overrides, e.g. ``{sliding_window_ring: {buckets: 20}}``."""
    _models: dict[tuple[Any, ...], TrafficModel] = PrivateAttr(default_factory=dict)
    """Every entry's model, built once (``model_for``)."""

    @field_validator("scenarios", mode="before", check_fields=False)
    @classmethod
    def _names_alone(cls, value: object) -> object:
        """Allow a bare scenario name in the list."""
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("algorithms")
    @classmethod
    def _known_algorithms(cls, value: list[str]) -> list[str]:
        if value == ["all"]:
            return list(ALGORITHMS)
        check_algorithms(value, all_allowed=True)
        return value

    @field_validator("params")
    @classmethod
    def _known_param_scopes(cls, value: dict[str, dict[str, ParamValue]]) -> dict[str, dict[str, ParamValue]]:
        check_algorithms(list(value), all_allowed=False)
        return value

    @model_validator(mode="after")
    def _entries_are_buildable(self) -> CampaignHeader:
        """Every entry names a scenario and algorithms that exist, its model and each algorithm's
        parameters build, and no two entries share a run name (one would overwrite the other)."""
        seen: set[str] = set()
        for entry in self.entries:
            if entry.name not in SCENARIOS:
                raise ValueError(f"{entry.where}.name: unknown scenario {entry.name!r}; choose from: {', '.join(SCENARIOS)}")
            if entry.run_name in seen:
                what = f"label {entry.label!r} is used twice" if entry.label else "listed more than once"
                raise ValueError(f"{entry.where}.label: {entry.name} {what}: the runs of one entry would take the other's "
                                 "name; give each entry of a scenario its own label")
            seen.add(entry.run_name)
            if entry.algorithms is not None:
                try:
                    check_algorithms(entry.algorithms, all_allowed=False)
                except ValueError as exc:
                    raise ValueError(f"{entry.where}.algorithms: {exc}") from None
            self.model_for(entry)
            _check_gateway(entry, self.algorithms_for(entry))
            policy = self.policy_for(entry)
            for a in self.algorithms_for(entry):
                try:
                    self.params_for(a, policy, entry)
                except PolicyError as exc:
                    why = str(exc).replace("unknown --param", "unknown parameter")
                    raise ValueError(f"params.{a}: {why} (under the policy of {entry.where})") from None
        return self

    @property
    def entries(self) -> list[ScenarioEntry]:
        return list(getattr(self, "scenarios", []))

    def policy_for(self, entry: ScenarioEntry | None = None) -> Policy:
        """The entry's policy, else the campaign's."""
        p = (entry.policy if entry else None) or self.policy
        return Policy(p.limit, p.window_s, p.burst)

    def algorithms_for(self, entry: ScenarioEntry) -> list[str]:
        return entry.algorithms or self.algorithms

    def params_for(self, algorithm: str, policy: Policy, entry: ScenarioEntry | None = None) -> Any:
        """The algorithm's parameters: the campaign's, then the entry's own on top."""
        own = entry.algorithm_params.get(algorithm, {}) if entry else {}
        return build_params(algorithm, policy, {**self.params.get(algorithm, {}), **own})

    def model_for(self, entry: ScenarioEntry, seed_offset: int = 0) -> TrafficModel:
        """The entry's traffic model under its policy (a repeat's: at its seed offset), built once:
        the checks, every run of the entry and its virtual twin share it and its arrivals (a model
        is seeded and deterministic); a bad parameter names the entry."""
        policy, params = self.policy_for(entry), entry.params
        seed = self.seed + seed_offset
        built = (entry.name, policy.limit, policy.window_s, seed, repr(sorted(params.items())))
        if built not in self._models:
            try:
                self._models[built] = build_model(entry.name, policy.limit, policy.window_s, seed, params)
            except ScenarioError as exc:
                raise ValueError(f"{entry.where}.params: {exc}") from None
        return self._models[built]


def _check_gateway(entry: ScenarioEntry, algorithms: list[str]) -> None:
    """A gateway stands only in front of a limiter that observes latency."""
    if entry.gateway is None:
        return
    plain = [a for a in algorithms if get_algorithm(a).observe is None]
    if plain:
        raise ValueError(f"{entry.where}.gateway: a token bucket in front of {plain[0]}: only in front of an adaptive "
                         "limiter (one that observes latency); layer rate limits with a live entry's target limits")


def check_algorithms(names: list[str], *, all_allowed: bool, also: tuple[str, ...] = ()) -> None:
    """Every name one of the suite's algorithms (or of ``also``: the peer models a url claim may name)."""
    known = [*ALGORITHMS, *also]
    unknown = [a for a in names if a not in known]
    if unknown:
        choices = ", ".join((["all"] if all_allowed else []) + known)
        raise ValueError(f"unknown algorithm {unknown[0]!r}; choose from: {choices}")


def check_repeats(repeats: int | None) -> None:
    """``--repeats`` as the campaign's ``repeats`` field bounds it."""
    if repeats is not None and not 1 <= repeats <= 100:
        raise CampaignError(f"--repeats must be between 1 and 100, got {repeats}")


def read_yaml(path: Path) -> Any:
    """A YAML file's content; a missing or malformed file is a CampaignError naming it."""
    text = read_input(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CampaignError(f"{path}: not valid YAML ({yaml_problem(exc)})") from None


def validate_model(model: type[M], raw: Any, source: str, context: dict[str, Any] | None = None) -> M:
    """``model.model_validate(raw)``; the first error becomes one CampaignError with the field's path
    (a scenario entry named by its name and label), and an unknown field, reported before the field
    it was likely meant to be (a typo ``window:`` leaves ``window_s`` missing), names the nearest
    valid one and lists them all. ``context``: what validators read beside the values (``base``:
    the folder a campaign's relative paths start from)."""
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as exc:
        errors = exc.errors()
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = list(err["loc"])
        where = _where(loc, raw)
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            valid = _fields_at(model, loc[:-1])
            msg = unknown_field(str(loc[-1]), valid) if valid else msg
        raise CampaignError(f"{source}: {where}: {msg}" if where else f"{source}: {msg}") from None


def unknown_field(name: str, valid: list[str]) -> str:
    """``unknown field (did you mean 'window_s'?); valid: ...``: the nearest name by difflib."""
    near = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return "unknown field" + (f" (did you mean {near[0]!r}?)" if near else "") + f"; valid: {', '.join(valid)}"


def _where(loc: list[Any], raw: Any) -> str:
    """A pydantic error location as a dotted path, where a list item is named rather than
    numbered: an entry by its name (and label), ``scenarios[retry_storm-full_jitter]``, a plain
    value by itself, ``stores[memroy]``."""
    parts: list[str] = []
    node = raw
    for part in loc:
        item = node[part] if isinstance(node, list) and isinstance(part, int) and part < len(node) else None
        if isinstance(item, str) and parts:
            parts[-1] += f"[{item}]"
        elif isinstance(item, dict) and isinstance(item.get("name"), str) and parts:
            label = item.get("label")
            parts[-1] += f"[{item['name']}-{label}]" if isinstance(label, str) and label else f"[{item['name']}]"
        else:
            parts.append(str(part))
        node = node.get(part) if isinstance(node, dict) else item
    return ".".join(parts)


def _fields_at(model: type[BaseModel], loc: list[Any]) -> list[str]:
    """The field names of the model at ``loc`` inside ``model`` (stepping through optional
    values, list items and dict values); empty when the path leads to no model."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        origin = typing.get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = current.model_fields[part].annotation
        elif (member := _tagged(current, part)) is not None:
            current = member
        elif (origin is list and isinstance(part, int)) or (origin is dict and isinstance(part, str)):
            current = typing.get_args(current)[-1]
        else:
            return []
    current = _unwrap(current)
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _tagged(tp: Any, tag: Any) -> Any:
    """The member of a discriminated union (``Annotated[A | B, Discriminator]``) tagged ``tag``, else None."""
    if typing.get_origin(tp) is not typing.Annotated:
        return None
    for member in typing.get_args(typing.get_args(tp)[0]):
        if typing.get_origin(member) is typing.Annotated and any(
                isinstance(m, Tag) and m.tag == tag for m in member.__metadata__):
            return typing.get_args(member)[0]
    return None


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> ``X``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1 else tp
