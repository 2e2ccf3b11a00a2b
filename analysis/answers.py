"""The questions a user brings (docs/architecture.md), each answered in one sentence from summary rows.

Pure: rows in, sentences out. A question is answered only when the campaign holds the scenario
that measures it; every figure names the run it comes from, so a reader can check it in the
tables below. The report, the terminal summary and the notebook print the same sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]

BASELINE = "none"  # admits everything: the overhead baseline, never "the best limiter"
LINE = 2.0  # the fixed window's bound, the line every over-admission is drawn against


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


def _of(rows: Sequence[Row], name: str, field: str) -> list[Row]:
    """A scenario family's runs that measured ``field``, leaving out degraded runs: a fallback,
    not their store, made some of their decisions (the report's warnings name them)."""
    return [r for r in rows if family(r["scenario"]) == name and r.get(field) is not None and not r.get("degraded_share")]


def _limiters(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r["algorithm"] != BASELINE]


def _who(row: Row) -> str:
    return row["algorithm"] if row["store"] == "memory" else f"{row['algorithm']} ({row['store']})"


def _names(rows: Sequence[Row], most: int = 3) -> str:
    names = [_who(r) for r in rows]
    if len(names) > most:
        names = [*names[:most], f"{len(names) - most} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def over_admission(rows: Sequence[Row]) -> Answer | None:
    """Worst and best limiter at the window edge (boundary bursts; else the Retry-After drip)."""
    runs = _limiters(_of(rows, "boundary_burst", "over_admission") or _of(rows, "adversarial_drip", "over_admission"))
    if not runs:
        return None
    worst = max(runs, key=lambda r: r["over_admission"])
    low = min(r["over_admission"] for r in runs)
    best = [r for r in runs if r["over_admission"] == low]
    above = [r for r in runs if r["over_admission"] > LINE + 1e-9]
    limit, window = worst["limit"], worst["window_s"]
    past = f"{len(above)} of {len(runs)} limiters went past the {LINE:g}x line" if above else \
        f"no limiter went past the {LINE:g}x line"
    sentence = (f"Up to {worst['over_admission']:.2f}x the limit: {_who(worst)} admitted "
                f"{_num(worst['over_admission'] * limit)} in one {window:g} s window against a limit of {_num(limit)} "
                f"({worst['run']}); {_names(best)} held it to {low:.2f}x ({best[0]['run']}); {past}.")
    return Answer("over_admission", f"We limit to {_num(limit)} per {window:g} s: how much can get through in any {window:g} s?",
                  sentence, (worst["run"], best[0]["run"]), "over_admission")


def legit_rejections(rows: Sequence[Row]) -> Answer | None:
    runs = _limiters([r for r in _of(rows, "page_load_burst", "rejected_legit_rate") if r.get("legit_requests")])
    if not runs:
        return None
    worst = max(runs, key=lambda r: r["rejected_legit_rate"])
    spared = [r for r in runs if not r["rejected_legit"]]
    question = "Do normal page loads (8 parallel calls) get 429s?"
    if not worst["rejected_legit"]:
        return Answer("legit_rejections", question, f"No: no limiter rejected a legitimate request "
                      f"({worst['run']}).", (worst["run"],), "rejections")
    if spared:
        rest, other = f"{_names(spared)} rejected no legitimate request ({spared[0]['run']})", spared[0]["run"]
    else:
        least = min(runs, key=lambda r: r["rejected_legit_rate"])
        rest = f"every limiter rejected some; the fewest: {_who(least)} ({100 * least['rejected_legit_rate']:.1f}%, {least['run']})"
        other = least["run"]
    sentence = (f"With {_who(worst)}, yes: {worst['rejected_legit']:,} of {worst['legit_requests']:,} legitimate requests "
                f"({100 * worst['rejected_legit_rate']:.1f}%) got a 429 ({worst['run']}); {rest}.")
    return Answer("legit_rejections", question, sentence, (worst["run"], other), "rejections")


def bounded_p99(rows: Sequence[Row]) -> Answer | None:
    field = "latency_p99_intended_ms"
    every = _of(rows, "unhealthy_downstream", field)
    runs = _limiters(every)
    if not runs:
        return None
    best = min(runs, key=lambda r: r[field])
    others = [r for r in runs if r is not best]
    shed = 100 * (best.get("rejected_rate") or 0.0)
    sentence = f"Best: {_who(best)}, P99 {_num(best[field])} ms while rejecting {shed:.1f}% of requests ({best['run']})"
    cited = [best]
    if others:
        worst = max(others, key=lambda r: r[field])
        low = min(r[field] for r in others)
        spread = f"{_num(low)} to {_num(worst[field])} ms" if len(others) > 1 else f"{_num(worst[field])} ms"
        sentence += f"; {_names(others, 1) if len(others) == 1 else f'the {len(others)} others'}: {spread} " \
                    f"(worst: {_who(worst)}, {worst['run']})"
        cited.append(worst)
    baseline = [r for r in every if r["algorithm"] == BASELINE]
    if baseline:
        sentence += f"; no limiting at all ({BASELINE}): {_num(baseline[0][field])} ms"
        cited.append(baseline[0])
    return Answer("bounded_p99", "The downstream got slow: which limiter keeps P99 bounded?", sentence + ".",
                  tuple(r["run"] for r in cited), "latency_over_time")


def _rps(value: float) -> str:
    return f"{value:,.0f}/s"


STOPPED = {"p99": "then P99 over {bound}", "late": "then late sends: the generator fell behind",
           "failed": "then failed requests", None: "held to the top of the ramp"}


def _sustained(row: Row, bound: str) -> str:
    rate = row["ramp_sustained_rps"]
    reached = _rps(rate) if rate > 0 else f"not even the ramp's first {_rps(row['ramp_offered_min_rps'])}"
    return f"{reached} ({STOPPED[row['ramp_stopped_by']].format(bound=bound)}; {row['run']})"


def throughput(rows: Sequence[Row]) -> Answer | None:
    """Per ramp run, the highest offered rate with P99 under the bound and no late or failed request."""
    every = _of(rows, "ramp", "ramp_sustained_rps")
    runs = _limiters(every)
    if not runs:
        return None
    bounds = {r["ramp_p99_bound_ms"] for r in every}
    bound = f"{_num(next(iter(bounds)))} ms" if len(bounds) == 1 else "its bound"
    ranked = sorted(runs, key=lambda r: -r["ramp_sustained_rps"])
    best, others = ranked[0], ranked[1:]
    sentence = f"Best: {_who(best)}, {_sustained(best, bound)}"
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
    top = max(r["ramp_offered_max_rps"] for r in every)
    question = (f"Offered up to {_rps(top)}: how high can the rate go with P99 under {bound} and nothing late or failed?")
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
    runs = [r for r in _of(rows, "retry_storm", "amplification") if r.get("completed_requests") is not None]
    if not runs:
        return None
    fewest, most = min(runs, key=lambda r: r["amplification"]), max(runs, key=lambda r: r["amplification"])
    sentence = _storm(fewest) if fewest is most else f"{_storm(fewest)}; {_storm(most)}"
    return Answer("retries", f"What happens when {fewest['unique_requests']:,} clients retry at once?",
                  "W" + sentence[1:] + ".", tuple(dict.fromkeys((fewest["run"], most["run"]))), "retry_storm")


def distribution(rows: Sequence[Row]) -> Answer | None:
    runs = _of(rows, "multi_node", "over_admission")
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


QUESTIONS = (over_admission, legit_rejections, bounded_p99, throughput, retries, distribution)


def answers(rows: Sequence[Row]) -> list[Answer]:
    """The answers the rows can give, in docs/architecture.md's order of the questions."""
    return [a for a in (q(rows) for q in QUESTIONS) if a is not None]
