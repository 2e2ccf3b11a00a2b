"""An answer read back against the summary rows it cites (issue 38): what a sentence says of a run
(its figure, inside or past its bound, best, tied, no legitimate request refused) must be what
its row holds. Returns the contradictions found, none when the sentence is true to its table."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from analysis.answers import BASELINE, Answer, family
from analysis.own_bound import bound

Row = dict[str, Any]


def _who(row: Row) -> str:
    return row["algorithm"] if row["store"] == "memory" else f"{row['algorithm']} ({row['store']})"


def _after(text: str, row: Row) -> str | None:
    """The text after the run's name, as a word (``sliding_log`` is not ``sliding_log_x``)."""
    found = re.search(rf"(?<![\w-]){re.escape(_who(row))}(?![\w-])", text)
    return text[found.end():] if found else None


def _over_admission(answer: Answer, rows: Sequence[Row]) -> list[str]:
    lead_text = answer.sentence.split(" window: ", 1)[1].split(";", 1)[0]
    lead = next(r for r in rows if r["run"] == answer.runs[0])["scenario"]
    wrong = []
    for r in rows:
        if r["scenario"] != lead or r["algorithm"] == BASELINE or r.get("over_admission") is None:
            continue
        rest = _after(lead_text, r)
        said = re.match(r"[^;]*? (\d+\.\d\d)x (?:\([^)]*\) )?\((?:each )?(inside|past) its (\d+\.\d\d)x bound", rest or "")
        if said is None:
            wrong.append(f"{r['run']}: not named with its figure")
            continue
        x, state, b = float(said[1]), said[2], float(said[3])
        if x != round(r["over_admission"], 2) or b != round(bound(r), 2):
            wrong.append(f"{r['run']}: says {x}x of {b}x, its row {r['over_admission']} of {bound(r)}")
        if (state == "past") != (r["over_admission"] > bound(r) + 1e-9):
            wrong.append(f"{r['run']}: says {state} its bound")
    past = [r for r in rows if r.get("over_admission") is not None and r["algorithm"] != BASELINE
            and bound(r) is not None and r["over_admission"] > bound(r) + 1e-9]
    if ("every limiter stayed inside its own bound" in answer.sentence) == bool(past):
        wrong.append("every limiter inside its bound said against the rows, or not said where true")
    return wrong


def _best(answer: Answer, rows: Sequence[Row], field: str, high: bool) -> list[str]:
    """The best named first is the highest (lowest) of its scenario's limiters; each run with its
    very figure is named beside it as tied (virtual time: exact figures)."""
    runs = [r for r in rows if r["algorithm"] != BASELINE and r.get(field) is not None
            and r["scenario"] == next(x for x in rows if x["run"] == answer.runs[0])["scenario"]]
    top = (max if high else min)(r[field] for r in runs)
    best = next(r for r in runs if r["run"] == answer.runs[0])
    if best[field] != top:
        return [f"best {best['run']} has {best[field]}, the top is {top}"]
    head = answer.sentence.split("; worst", 1)[0]
    tied = [r for r in runs if r[field] == top and r is not best]
    return [f"{r['run']} tied at the top, not named as such" for r in tied if _after(head, r) is None]


def _legit(answer: Answer, rows: Sequence[Row]) -> list[str]:
    runs = [r for r in rows if family(r["scenario"]) == "page_load_burst" and r["algorithm"] != BASELINE
            and r.get("rejected_legit") is not None]
    wrong = []
    said = re.match(r"With (\S+), yes", answer.sentence)
    if said and max(r["rejected_legit_rate"] for r in runs) != next(r for r in runs if _who(r) == said[1])["rejected_legit_rate"]:
        wrong.append(f"{said[1]} is not the limiter that refused most page loads")
    spared = answer.sentence.split("no legitimate request rejected by ", 1)[1].split(";")[0] \
        if "no legitimate request rejected by " in answer.sentence else ""
    wrong += [f"{r['run']} said to refuse none" for r in runs if r["rejected_legit"] and _after(spared, r) is not None]
    return wrong


def contradictions(answers: Sequence[Answer], rows: Sequence[Row]) -> list[str]:
    """Every contradiction between the answers and the rows they cite."""
    runs = {r["run"] for r in rows}
    wrong = [f"{a.key} cites {run}, no such row" for a in answers for run in a.runs if run not in runs]
    for a in answers:
        if a.key == "over_admission":
            wrong += _over_admission(a, rows)
        elif a.key == "throughput":
            wrong += _best(a, rows, "ramp_sustained_rps", high=True)
        elif a.key == "bounded_p99":
            wrong += _best(a, rows, "latency_p99_intended_ms", high=False)
        elif a.key == "legit_rejections":
            wrong += _legit(a, rows)
    return wrong
