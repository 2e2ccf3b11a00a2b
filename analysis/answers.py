"""The questions a user brings (docs/architecture.md), each answered in one sentence from summary rows.

Pure: rows in, sentences out. A question is answered only when the campaign holds the scenario
that measures it; every figure names the run it comes from, so a reader can check it in the
tables below. The report, the terminal summary and the notebook print the same sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .labels import cell, num, row_policy
from .own_bound import bound, past
from .own_bound import verdict as own_verdict
from .spread import apart, exact, interval, with_spread
from .theory import BUCKETS

Row = dict[str, Any]

BASELINE = "none"  # admits everything: the overhead baseline, never "the best limiter"


@dataclass(frozen=True)
class Answer:
    key: str
    question: str
    sentence: str
    runs: tuple[str, ...]  # the runs the figures come from, in the order the sentence names them
    chart: str | None  # the chart that shows it

    def line(self) -> str:
        return f"{self.question} {self.sentence}"


def family(scenario: str) -> str:
    """The scenario's name without the campaign entry's label (``retry_storm-full_jitter``)."""
    return scenario.split("-", 1)[0]


def _of(rows: Sequence[Row], name: str, field: str, one_scenario: bool = True) -> list[Row]:
    """The rows of family ``name`` that have ``field``, leaving out degraded runs (a fallback, not
    their store, made some of their decisions: the report's warnings name them); with
    ``one_scenario``, of its first scenario only: one policy and one panel (a labelled second entry
    is another scenario)."""
    found = [r for r in rows if family(r["scenario"]) == name and r.get(field) is not None and not r.get("degraded_share")]
    return [r for r in found if r["scenario"] == found[0]["scenario"] or not one_scenario] if found else []


def _idle(row: Row) -> bool:
    """Its limit never reached: nothing rejected."""
    return row.get("rejected_rate") == 0


def _limiters(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r["algorithm"] != BASELINE]


def _who(row: Row) -> str:
    return row["algorithm"] if row["store"] == "memory" else f"{row['algorithm']} ({row['store']})"


def _names(rows: Sequence[Row], most: int = 3) -> str:
    names = [_who(r) for r in rows]
    if len(names) > most:
        names = [*names[:most], f"{len(names) - most} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


_num = num


def _where(row: Row) -> str:
    """The scenario and policy a sentence speaks of, as its panel and table name them."""
    return f"on {row['scenario']} ({row_policy(row)})"


def _extreme(runs: Sequence[Row], field: str, high: bool) -> list[Row]:
    """The run with the highest (lowest) ``field``, then every run within noise of it."""
    top = (max if high else min)(runs, key=lambda r: r[field])
    return [top, *(r for r in runs if r is not top and not apart(top, r, field))]


def _even(rows: Sequence[Row]) -> str:
    """How equal figures are said: tied in virtual time (no noise), else within noise."""
    return "tied" if exact(*rows) else "within noise of each other"


def _tied(rows: Sequence[Row]) -> str:
    return _who(rows[0]) if len(rows) == 1 else f"{_names(rows)} ({_even(rows)})"


def _figure(row: Row, field: str, text: str, fmt: Any = _num) -> str:
    return with_spread(row, field, text, fmt)


def _state(row: Row) -> str:
    """A run's figure against its own policy's bound (analysis/own_bound.py)."""
    b, over = bound(row), past(row)
    if b is None:
        return "without a bound"
    return f"past its {b:.2f}x bound by {over:.2f}x" if over is not None else f"inside its {b:.2f}x bound"


def _each(runs: Sequence[Row]) -> tuple[str, list[Row]]:
    """Every run's figure and state in one list, runs with the same figure and state named together;
    with the runs in the order the list names them."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in runs:
        x = _figure(r, "over_admission", f"{r['over_admission']:.2f}x", lambda v: f"{v:.2f}x")
        groups.setdefault((x, _state(r)), []).append(r)
    return ", ".join(f"{_names(rs, len(rs))} {x} ({'each ' if len(rs) > 1 else ''}{state})"
                     for (x, state), rs in groups.items()), [r for rs in groups.values() for r in rs]


EDGE = "boundary_burst"  # the window-edge question: how much gets through where one window meets the next


def over_admission(rows: Sequence[Row]) -> Answer | None:
    """The window edge first (boundary_burst, else the scenario that got the most through): every
    limiter's most admitted in any W, as a multiple of L, each against the bound its own policy
    implies; then the campaign's worst of every scenario when elsewhere, and every run past its own
    bound named. What a policy allows by design (a bucket's burst) is never called past it."""
    runs = _limiters([r for r in rows if r.get("over_admission") is not None and not r.get("degraded_share")])
    if not runs:
        return None
    top = max(runs, key=lambda r: r["over_admission"])
    edge = [r for r in runs if family(r["scenario"]) == EDGE]
    lead = [r for r in runs if r["scenario"] == (edge[0] if edge else top)["scenario"]]
    first, window = lead[0], lead[0]["window_s"]
    where = f"At the window edge {_where(first)}" if edge else f"O{_where(first)[1:]}"
    each, cited = _each(lead)
    sentence = f"{where}, the most admitted in one {window:g} s window: {each}"
    if all(r is not top for r in lead):
        worst, _ = _each(_extreme([r for r in runs if r["scenario"] == top["scenario"]], "over_admission", True))
        sentence += f"; the most of the campaign's {len(runs)} rate-limiter runs {_where(top)}: {worst}, in {top['run']}"
        cited.append(top)
    said = own_verdict(runs)
    sentence += f"; {said}" if said else ""
    limit = _num(first["limit"])
    question = (f"We limit to {limit} per {window:g} s per key: how much gets through at a window edge?" if edge else
                f"We limit to {limit} per {window:g} s per key: how much can get through in any {window:g} s?")
    return Answer("over_admission", question, sentence + ".", tuple(dict.fromkeys(r["run"] for r in cited)),
                  "over_admission")


def _abuse(row: Row) -> str:
    """The counterweight of sparing legitimate requests: how much of the abuser got through."""
    if not row.get("abusive_requests"):
        return ""
    share = 1.0 - (row.get("rejected_abusive_rate") or 0.0)
    return " (but admitted all of the abusive traffic)" if share >= 1.0 else \
        f" (but admitted {100 * share:.0f}% of the abusive traffic)"


def _burst_buys(runs: Sequence[Row]) -> str:
    """What the burst setting buys a page load: the legitimate requests the buckets admitted that
    the sliding log (the exact window, no burst) refused."""
    strict = [r for r in runs if r["algorithm"] == "sliding_log" and r["rejected_legit"]]
    buckets = [r for r in runs if r["algorithm"] in BUCKETS]
    if not strict or not buckets:
        return ""
    refused = strict[0]["rejected_legit"]
    fewest = min(buckets, key=lambda r: r["rejected_legit"])
    spared = max(refused - fewest["rejected_legit"], 0)
    return (f"; the burst of {_num(fewest.get('burst') or fewest['limit'])} spared {spared:,} of the {refused:,} "
            f"legitimate requests sliding_log refused ({_who(fewest)}, {fewest['run']})")


def legit_rejections(rows: Sequence[Row]) -> Answer | None:
    runs = _limiters([r for r in _of(rows, "page_load_burst", "rejected_legit_rate") if r.get("legit_requests")])
    if not runs:
        return None
    worst = max(runs, key=lambda r: r["rejected_legit_rate"])
    spared = [r for r in runs if not r["rejected_legit"]]
    question = f"Do normal page loads (8 parallel calls) get 429s {_where(worst)}?"
    if not worst["rejected_legit"]:
        spared_text = "; ".join(f"{_who(r)}{_abuse(r)}" for r in spared[:4])
        return Answer("legit_rejections", question, f"No: no limiter rejected a legitimate request ({worst['run']}): "
                      f"{spared_text}.", (worst["run"],), "rejections")
    if spared:
        parts = [f"{_who(r)}{_abuse(r)}" for r in spared[:3]] + ([f"{len(spared) - 3} more"] if len(spared) > 3 else [])
        rest = f"no legitimate request rejected by {', '.join(parts)} ({spared[0]['run']})"
        other = spared[0]["run"]
    else:
        least = _extreme(runs, "rejected_legit_rate", False)
        rate = _figure(least[0], "rejected_legit_rate", f"{100 * least[0]['rejected_legit_rate']:.1f}%",
                       lambda v: f"{100 * v:.1f}%")
        rest = f"every limiter rejected some; the fewest: {_tied(least)} ({rate}, {least[0]['run']}){_abuse(least[0])}"
        other = least[0]["run"]
    rate = _figure(worst, "rejected_legit_rate", f"{100 * worst['rejected_legit_rate']:.1f}%", lambda v: f"{100 * v:.1f}%")
    sentence = (f"With {_who(worst)}, yes: {worst['rejected_legit']:,} of {worst['legit_requests']:,} legitimate requests "
                f"({rate}) got a 429 ({worst['run']}); {rest}{_burst_buys(runs)}.")
    return Answer("legit_rejections", question, sentence, (worst["run"], other), "rejections")


def _collapsed(runs: Sequence[Row]) -> str:
    """An adaptive limit that fell onto its floor and stayed there to the run's end: a finding,
    said with when (from the first send) and the floor (analysis.adaptive.collapse)."""
    return "".join(f"; {_who(r)}'s limit collapsed to {_num(r['limit_floor'])} at {r['limit_collapsed_s']:g} s and "
                   f"never recovered ({r['run']})" for r in runs if r.get("limit_collapsed_s") is not None)


def bounded_p99(rows: Sequence[Row]) -> Answer | None:
    field = "latency_p99_intended_ms"
    every = _of(rows, "unhealthy_downstream", field)
    runs = _limiters(every)
    if not runs:
        return None
    best = _extreme(runs, field, False)
    b = best[0]
    others = [r for r in runs if all(r is not x for x in best)]
    shed = 100 * (b.get("rejected_rate") or 0.0)
    ms = _figure(b, field, f"{_num(b[field])} ms", lambda v: f"{_num(v)} ms")
    lead = "Best" if len(best) == 1 else f"Best, {_even(best)}"
    sentence = f"{lead}: {_names(best)}, P99 {ms} while rejecting {shed:.1f}% of requests ({b['run']})"
    if _idle(b):
        sentence += ", its limit never reached (0% rejected)"
    cited = [b]
    if others:
        worst = _extreme(others, field, True)
        low = min(r[field] for r in others)
        span = dict.fromkeys((_num(low), _num(worst[0][field])))  # one figure when both ends write the same
        spread = " to ".join(span) + " ms" if len(others) > 1 else \
            _figure(worst[0], field, f"{_num(worst[0][field])} ms", lambda v: f"{_num(v)} ms")
        who = _names(others, 1) if len(others) == 1 else f"the {len(others)} others"
        named = f"worst: {_who(worst[0])}, {worst[0]['run']}" if len(worst) == 1 and len(others) > 1 else \
            (_even(others) if len(others) > 1 else worst[0]["run"])
        sentence += f"; {who}: {spread} ({named})"
        idle = [r for r in others if _idle(r)]
        if idle:
            said = ("its limit was" if len(others) == 1 else "their limits were") if len(idle) == len(others) else \
                f"{len(idle)} of them had their limit"
            sentence += f"; {said} never reached (0% rejected)"
        cited.append(worst[0])
    baseline = [r for r in every if r["algorithm"] == BASELINE]
    if baseline:
        sentence += f"; no limiting at all ({BASELINE}): {_num(baseline[0][field])} ms"
        cited.append(baseline[0])
    sentence += _collapsed(runs)
    return Answer("bounded_p99", f"The downstream got slow {_where(b)}: which limiter keeps P99 bounded?", sentence + ".",
                  tuple(r["run"] for r in cited), "latency_over_time")


def _rps(value: float) -> str:
    return f"{value:,.0f}/s"


STOPPED = {"p99": "then P99 over {bound}", "late": "then late sends: the generator fell behind",
           "failed": "then failed requests", None: "held to the top of the ramp"}


SHED = 0.5  # a rule refusing this share or more of its traffic says so beside the rate it sustained


def _shed(row: Row) -> str:
    share = row.get("rejected_rate") or 0.0
    return f" while refusing {100 * share:.0f}% of requests" if share >= SHED else ""


def _sustained(row: Row, bound: str) -> str:
    rate = row["ramp_sustained_rps"]
    reached = _rps(rate) if rate > 0 else f"not even the ramp's first {_rps(row['ramp_offered_min_rps'])}"
    shed = _shed(row)
    stall = row.get("ramp_startup_stall_s")
    after = f"after a start-up stall of {_num(stall)} s (late sends), " if stall else ""
    return f"{reached}{shed} ({after}{STOPPED[row['ramp_stopped_by']].format(bound=bound)}; {row['run']})"


P99 = "latency_p99_intended_ms"
TIE_BREAKS = ((P99, "lower P99", lambda v: f"{_num(v)} ms"), ("goodput_rps", "higher goodput", _rps))
"""A tie on the rate sustained is broken by P99, then by goodput."""


def _order(row: Row) -> tuple[float, float]:
    p99, goodput = row.get(P99), row.get("goodput_rps")
    return (np.inf if p99 is None else p99, -(goodput or 0.0))


def _broken(best: Row, rest: Sequence[Row]) -> str:
    """Why ``best`` heads the runs tied with it on the rate: the first criterion that sets it apart."""
    for field, said, fmt in TIE_BREAKS:
        if best.get(field) is not None and all(r.get(field) is not None and apart(best, r, field) for r in rest):
            return f"{_who(best)} first by its {said} ({fmt(best[field])} against {', '.join(fmt(r[field]) for r in rest)})"
    return "tied on P99 and goodput too"


def throughput(rows: Sequence[Row]) -> Answer | None:
    """Per ramp run, the highest offered rate with P99 under the bound and no late or failed request;
    runs tied on it are named as tied and ordered by P99, then goodput."""
    every = _of(rows, "ramp", "ramp_sustained_rps")
    runs = _limiters(every)
    if not runs:
        return None
    bounds = {r["ramp_p99_bound_ms"] for r in every}
    bound = f"{_num(next(iter(bounds)))} ms" if len(bounds) == 1 else "its bound"
    top = sorted(_extreme(runs, "ramp_sustained_rps", True), key=_order)
    best = top[0]
    others = sorted((r for r in runs if all(r is not t for t in top)), key=lambda r: (-r["ramp_sustained_rps"], _order(r)))
    sentence = f"Best: {_who(best)}, {_sustained(best, bound)}"
    if len(top) > 1:
        also = ", ".join(f"{_who(r)}{_shed(r)} ({r['run']})" for r in top[1:])
        sentence += f"; {'tied' if exact(*top) else 'within noise'} with it on the rate: {also}; {_broken(best, top[1:])}"
    cited = [best]
    if others:
        worst = others[-1]
        middle = f"; {_names(others[:-1])} in between" if len(others) > 1 else ""
        sentence += f"; worst: {_who(worst)}, {_sustained(worst, bound)}{middle}"
        cited.append(worst)
    baseline = [r for r in every if r["algorithm"] == BASELINE]
    if baseline:
        sentence += f"; no limiting at all ({BASELINE}): {_sustained(baseline[0], bound)}"
        cited.append(baseline[0])
    sentence += _collapsed(runs)
    offered = max(r["ramp_offered_max_rps"] for r in every)
    question = (f"Offered up to {_rps(offered)}: how high can the rate go with P99 under {bound} and nothing late or failed?")
    return Answer("throughput", question, sentence + ".", tuple(r["run"] for r in cited), "ramp_p99")


def backoff(row: Row) -> str:
    """A retry storm's backoff policy (and trigger, when not the default burst)."""
    params = row.get("scenario_params") or {}
    name = str(params.get("backoff") or row["scenario"].split("-", 1)[-1])
    return f"{name}, {params['trigger']}" if params.get("trigger", "burst") != "burst" else name


def _storm(row: Row) -> str:
    policy = backoff(row)
    policy = "no backoff" + policy[len(BASELINE):] if policy.startswith(BASELINE) else f"{policy} backoff"  # not the algorithm
    return (f"with {policy}: {row['amplification']:.1f} calls per request, {row['completed_requests']:,} of "
            f"{row['unique_requests']:,} completed in {row['time_to_done_s']:.1f} s ({row['run']})")


def retries(rows: Sequence[Row]) -> Answer | None:
    runs = [r for r in _of(rows, "retry_storm", "amplification", one_scenario=False) if r.get("completed_requests") is not None]
    if not runs:
        return None
    fewest, most = min(runs, key=lambda r: r["amplification"]), max(runs, key=lambda r: r["amplification"])
    sentence = _storm(fewest) if fewest is most else f"{_storm(fewest)}; {_storm(most)}"
    return Answer("retries", f"What happens when {fewest['unique_requests']:,} clients retry at once?",
                  "W" + sentence[1:] + ".", tuple(dict.fromkeys((fewest["run"], most["run"]))), "retry_storm")


def distribution(rows: Sequence[Row]) -> Answer | None:
    runs = _of(rows, "multi_node", "over_admission", one_scenario=False)
    stores: dict[str, Row] = {}
    for r in runs:  # the worst run of each store
        if r["store"] not in stores or r["over_admission"] > stores[r["store"]]["over_admission"]:
            stores[r["store"]] = r
    if not stores:
        return None
    ranked = sorted(stores.items(), key=lambda s: s[1]["over_admission"])
    parts = [f"{store} {r['over_admission']:.2f}x ({r['run']})" for store, r in ranked]
    sentence = "The most the fleet admitted to one key in any window, as a multiple of the limit: " + ", ".join(parts) + "."
    return Answer("distribution", "Many nodes: local counters, shared counters or leased tokens?", sentence,
                  tuple(r["run"] for r in stores.values()), "over_admission")


def _cost(runs: Sequence[Row]) -> str:
    """One algorithm's marginal CPU per request: the median of its runs that resolve it, with the
    span of their 95% intervals."""
    field = "cpu_target_us_per_req"
    lows, highs = zip(*(interval(r, field) for r in runs))
    median = float(np.median([r[field] for r in runs]))
    low, high = cell(field, min(lows)), cell(field, max(highs))
    spread = "exact" if low == high else f"{low}-{high}"  # as written: 106.0-106.0 is one figure
    return f"{_who(runs[0])} {cell(field, median)} µs ({spread})"


def cpu(rows: Sequence[Row]) -> Answer | None:
    """The target's marginal CPU per request of each algorithm with its interval, or that the
    campaign cannot resolve it: never a figure from one sample (analysis.cpu)."""
    sampled = [r for r in rows if r.get("cpu_target_ms_per_1k") is not None and not r.get("degraded_share")]
    algorithms: dict[str, list[Row]] = {}
    for r in sampled:
        algorithms.setdefault(_who(r), []).append(r)
    if not algorithms:
        return None
    resolved = {who: [r for r in rs if r.get("cpu_target_us_per_req") is not None] for who, rs in algorithms.items()}
    parts = [_cost(rs) for rs in resolved.values() if rs]
    below = [who for who, rs in resolved.items() if not rs]
    res = [r["cpu_target_resolution_ms_per_1k"] for r in sampled if not resolved[_who(r)]
           and r.get("cpu_target_resolution_ms_per_1k") is not None]
    tick = f" ({_num(min(res))} ms per 1,000 requests)" if res else ""
    unresolved = f"below the resolution of this run{tick}: use `bench targets`"
    if not parts:
        sentence = f"The marginal CPU per request is {unresolved}."
    else:
        sentence = "Per request, with its 95% interval: " + ", ".join(parts) + \
            (f"; {', '.join(below)}: {unresolved}" if below else "") + "."
    if all(r.get("kind") == "virtual" for r in sampled):
        sentence += " Virtual time: the system model's cost (its cpu_us), not a measurement."
    runs = tuple(r["run"] for rs in resolved.values() for r in rs) or tuple(r["run"] for r in sampled)
    return Answer("cpu", "What does each limiter cost the target in CPU?", sentence, runs, "comparison")


QUESTIONS = (over_admission, legit_rejections, bounded_p99, throughput, retries, distribution, cpu)


def answers(rows: Sequence[Row]) -> list[Answer]:
    """The answers the rows can give, in docs/architecture.md's order of the questions; of runs,
    never of a peer's virtual twin (a model of it, shown beside its row, not a run)."""
    runs = [r for r in rows if not r.get("twin_of")]
    return [a for a in (q(runs) for q in QUESTIONS) if a is not None]
