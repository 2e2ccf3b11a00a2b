"""The would-be-refused report of `validate --traffic` in its four shapes: tables for the
terminal, JSON for scripts, JUnit for CI (one testcase per policy, timing and gated class), and a
self-contained report.html section with the refused-over-time chart."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from dataclasses import asdict
from datetime import UTC, datetime

from rich.console import Group
from rich.table import Table

from analysis.refused_chart import refused_over_time_svg
from harness.campaign.log_traffic import LogTraffic

from .traffic import Outcome

TIMING_NOTE = {
    "exact": "",
    "spread": "each second's requests spread evenly over it",
    "packed": "each second's requests packed at its start",
}


def traffic_facts(traffic: LogTraffic) -> dict:
    return {
        "file": str(traffic.path), "format": traffic.format, "detected": traffic.detected, "lines": traffic.lines,
        "requests": traffic.requests, "unreadable": traffic.bad.count,
        "unreadable_first": [{"line": n, "text": t} for n, t in traffic.bad.located(traffic.path)],
        "out_of_order": traffic.out_of_order, "whole_second": traffic.whole_second,
        "start": _utc(traffic.first_t) if traffic.requests else None, "span_s": traffic.span_s,
        "read": traffic.summary.line(traffic.format) if traffic.summary is not None else None,
    }


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def notes(facts: dict) -> list[str]:
    """What the reader must know about the log before trusting the numbers."""
    out = [f"{facts['file']}: {facts['format']}{' (detected)' if facts['detected'] else ''}, {facts['lines']:,} lines, "
           f"{facts['requests']:,} requests over {facts['span_s']:,.0f} s from {facts['start']}"]
    if facts.get("read"):
        out.append(facts["read"])
    if facts["unreadable"]:
        first = "; ".join(f"line {u['line']}: {u['text']!r}" for u in facts["unreadable_first"])
        out.append(f"{facts['unreadable']:,} unreadable lines skipped (first: {first})")
    if facts["out_of_order"]:
        out.append(f"{facts['out_of_order']:,} lines out of time order: sorted by time before the replay")
    if facts["whole_second"]:
        out.append("times are whole seconds: the log cannot say which request of one second came first, so every "
                   "policy is judged twice (spread: each second's requests evenly over it; packed: all at its "
                   "start) and the truth lies between; log $msec for an exact answer")
    return out


def summary_table(outcomes: list[Outcome]) -> Table:
    table = Table(title="would have been refused", title_justify="left")
    for col in ("policy", "timing", "requests", "refused", "share", "keys refused", "classes"):
        table.add_column(col, justify="left" if col in ("policy", "timing", "classes") else "right")
    for o in outcomes:
        gates = ", ".join(f"{c.name} {c.share:.2%}" + ("" if c.passed else " [red]FAIL[/red]") for c in o.classes)
        table.add_row(o.policy, o.timing, f"{o.requests:,}", f"{o.refused:,}", f"{o.refused / max(1, o.requests):.2%}",
                      f"{o.keys_refused:,} of {o.keys:,}", gates)
    return table


def worst_timing(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcome to detail per policy: the timing that refuses most (the upper bound of a
    whole-second log), if it refuses anything."""
    worst: dict[str, Outcome] = {}
    for o in outcomes:
        if o.refused and (o.policy not in worst or o.refused > worst[o.policy].refused):
            worst[o.policy] = o
    return list(worst.values())


def detail_tables(o: Outcome, routes: int = 6) -> Group:
    by_route = Table(title=f"{o.policy} ({o.timing}): by route", title_justify="left")
    for col in ("route", "requests", "refused"):
        by_route.add_column(col, justify="left" if col == "route" else "right")
    for r in o.by_route[:routes]:
        by_route.add_row(r.route, f"{r.requests:,}", f"{r.refused:,}")
    keys = Table(title=f"{o.policy} ({o.timing}): top keys by refused requests", title_justify="left")
    for col in ("key", "requests", "refused", "worst burst"):
        keys.add_column(col, justify="left" if col == "key" else "right")
    for k in o.top_keys:
        keys.add_row(k.key, f"{k.requests:,}", f"{k.refused:,}", k.burst)
    return Group(by_route, keys)


def to_json(facts: dict, outcomes: list[Outcome]) -> str:
    doc = {"traffic": facts, "notes": notes(facts), "passed": all(o.passed for o in outcomes),
           "policies": [{**asdict(o), "passed": o.passed} for o in outcomes]}
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def to_junit(outcomes: list[Outcome], seconds: float) -> str:
    """One testcase per policy and timing (the refused count, always passing) and one per gated class."""
    cases = [(o, c) for o in outcomes for c in [None, *[c for c in o.classes if c.max_refused is not None]]]
    failures = sum(c is not None and not c.passed for _, c in cases)
    suites = ET.Element("testsuites", name="ratelimit-bench validate --traffic", tests=str(len(cases)),
                        failures=str(failures), time=f"{seconds:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="validate --traffic", tests=str(len(cases)),
                          failures=str(failures), errors="0", skipped="0", time=f"{seconds:.3f}")
    for o, c in cases:
        if c is None:
            case = ET.SubElement(suite, "testcase", classname=f"traffic.{o.policy}", name=f"refused.{o.timing}")
            ET.SubElement(case, "system-out").text = (f"{o.refused} of {o.requests} requests, {o.keys_refused} of "
                                                      f"{o.keys} keys would be refused")
            continue
        case = ET.SubElement(suite, "testcase", classname=f"traffic.{o.policy}", name=f"class.{c.name}.{o.timing}")
        text = f"{c.refused} of {c.requests} {c.name} requests refused ({c.share:.3%}; max {c.max_refused:.3%})"
        if c.passed:
            ET.SubElement(case, "system-out").text = text
        else:
            ET.SubElement(case, "failure", message=text, type="traffic")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def to_html(facts: dict, outcomes: list[Outcome]) -> str:
    """A self-contained report.html whose one section is the would-be-refused report."""
    series = {f"{o.policy} ({o.timing})" if o.timing != "exact" else o.policy: (o.bin_start, o.bin_s, o.refused_per_bin)
              for o in outcomes}
    chart = refused_over_time_svg(series, outcomes[0].requests_per_bin if outcomes else [])
    esc = html.escape
    rows = "".join(f"<tr><td>{esc(o.policy)}</td><td>{o.timing}</td><td>{o.requests:,}</td><td>{o.refused:,}</td>"
                   f"<td>{o.refused / max(1, o.requests):.2%}</td><td>{o.keys_refused:,} of {o.keys:,}</td></tr>"
                   for o in outcomes)
    details = "".join(_html_policy(o) for o in outcomes)
    items = "".join(f"<li>{esc(n)}</li>" for n in notes(facts))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>would have been refused</title><style>"
            "body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse;margin:1em 0}"
            "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}td:first-child{text-align:left}"
            f"</style></head><body><section id='traffic'><h2>Who would have been refused</h2><ul>{items}</ul>"
            f"<table><tr><th>policy</th><th>timing</th><th>requests</th><th>refused</th><th>share</th>"
            f"<th>keys refused</th></tr>{rows}</table>{chart}{details}</section></body></html>\n")


def _html_policy(o: Outcome) -> str:
    esc = html.escape
    routes = "".join(f"<tr><td>{esc(r.route)}</td><td>{r.requests:,}</td><td>{r.refused:,}</td></tr>" for r in o.by_route)
    keys = "".join(f"<tr><td>{esc(k.key)}</td><td>{k.requests:,}</td><td>{k.refused:,}</td>"
                   f"<td>{esc(k.burst)}</td></tr>" for k in o.top_keys)
    classes = "".join(f"<tr><td>{esc(c.name)}</td><td>{c.requests:,}</td><td>{c.refused:,}</td><td>{c.share:.2%}</td>"
                      f"<td>{'' if c.max_refused is None else f'{c.max_refused:.2%}'}</td></tr>" for c in o.classes)
    class_table = (f"<table><tr><th>class</th><th>requests</th><th>refused</th><th>share</th><th>max</th></tr>"
                   f"{classes}</table>") if o.classes else ""
    return (f"<h3>{esc(o.policy)} ({o.timing})</h3><table><tr><th>route</th><th>requests</th><th>refused</th></tr>"
            f"{routes}</table><table><tr><th>key</th><th>requests</th><th>refused</th><th>worst burst</th></tr>"
            f"{keys}</table>{class_table}")


def class_table(o: Outcome) -> Table | None:
    if not o.classes:
        return None
    table = Table(title=f"{o.policy} ({o.timing}): refused by key class", title_justify="left")
    for col in ("class", "requests", "refused", "share", "max"):
        table.add_column(col, justify="left" if col == "class" else "right")
    for c in o.classes:
        table.add_row(c.name, f"{c.requests:,}", f"{c.refused:,}", f"{c.share:.2%}",
                      "" if c.max_refused is None else f"{c.max_refused:.2%}" + ("" if c.passed else " [red]FAIL[/red]"))
    return table
