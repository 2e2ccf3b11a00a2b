"""The three shapes of a `validate` verdict: a rich table for people, JSON for scripts, JUnit XML
for CI systems (one testcase per check, so a CI page lists each lint and check by name)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict

from rich.table import Table

from harness.campaign.thresholds import parse_threshold

from .checks import CheckVerdict, display
from .live import LiveOutcome


def threshold_cell(v: CheckVerdict) -> str:
    """The threshold in the unit of the measured column (``< 0.1%`` beside ``37.5%``); the JSON
    keeps the file's own words (``legit_rejection_rate < 0.001``)."""
    try:
        t = parse_threshold(v.threshold)
    except ValueError:  # a lint's "no findings"
        return v.threshold
    return f"{t.op} {display(v.metric, t.value)}"


def verdict_table(policy_name: str, verdicts: list[CheckVerdict]) -> Table:
    failed = sum(not v.passed for v in verdicts)
    status = "[green]PASS[/green]" if not failed else f"[red]FAIL[/red] ({failed} of {len(verdicts)} checks)"
    table = Table(title=f"validate {policy_name}: {status}", title_justify="left")
    for col in ("check", "measured", "threshold", "result"):
        table.add_column(col, justify="right" if col in ("measured", "threshold") else "left",
                         no_wrap=col == "check")
    for v in verdicts:
        result = "n/a" if v.na else "[green]pass[/green]" if v.passed else "[red]FAIL[/red]"
        table.add_row(v.name, v.display, threshold_cell(v), result)
    return table


def suggestions(verdicts: list[CheckVerdict]) -> list[str]:
    """What failed and how to fix it: each failure on its line, then each fix once, under the
    failures it fixes (a lint and the checks that measure its pitfall share one)."""
    groups: dict[str | None, list[CheckVerdict]] = {}
    for v in verdicts:
        if not v.passed:
            groups.setdefault(v.fix or v.suggestion or f"#{id(v)}", []).append(v)
    out = []
    for failures in groups.values():
        text = "\n".join(f"{v.name}: {v.message}" for v in failures)
        fix = failures[0].fix or failures[0].suggestion
        out.append(text + (f"\n  -> {fix}" if fix else ""))
    return out


def to_json(policy_name: str, source: str, verdicts: list[CheckVerdict], live: LiveOutcome | None = None,
            measured: dict | None = None, notes: list[str] | None = None) -> str:
    """The verdict as JSON; ``measured``: a ``--url`` session that ended in an error (exit 2), its
    partial measurement (``harness.judge.verdict.measurement``); ``notes``: what a peer's file
    tells beside the checks (what its model does not reproduce, the product's status)."""
    doc: dict = {
        "policy": policy_name,
        "file": source,
        "passed": all(v.passed for v in verdicts),
        "failures": sum(not v.passed for v in verdicts),
        "checks": [{k: x for k, x in asdict(v).items() if k != "fix"} for v in verdicts],
    }
    if notes:
        doc["notes"] = notes
    if live is not None:
        doc["live"] = {"results": None if live.folder is None else str(live.folder), "notes": live.plan.notes}
    if measured is not None:
        doc["measured"] = measured
    return json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n"


def to_junit(policy_name: str, verdicts: list[CheckVerdict], seconds: float) -> str:
    failures = sum(not v.passed for v in verdicts)
    suites = ET.Element("testsuites", name="ratelimit-bench validate", tests=str(len(verdicts)),
                        failures=str(failures), time=f"{seconds:.3f}")
    suite = ET.SubElement(suites, "testsuite", name=f"validate {policy_name}", tests=str(len(verdicts)),
                          failures=str(failures), errors="0", skipped=str(sum(v.na for v in verdicts)), time=f"{seconds:.3f}")
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"validate.{policy_name}.{v.kind}", name=v.name)
        if v.na:
            ET.SubElement(case, "skipped", message=v.message)
        elif v.passed:
            ET.SubElement(case, "system-out").text = f"{v.display} ({threshold_cell(v)}): {v.message}"
        else:
            failure = ET.SubElement(case, "failure", message=f"{v.display} vs {threshold_cell(v)}: {v.message}",
                                    type=v.kind)
            failure.text = v.suggestion or v.message
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
