"""``report.html`` (self-contained: charts embedded as base64 PNG) and ``report.md``, rebuilt from
a results folder's raw files, with summary.json/csv and the charts beside them."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from contract.atomic import write_text
from contract.schema import CHARTS_DIR, REPORT_HTML, REPORT_MD
from contract.summary import write_summary

from . import tables
from .analyze import FolderAnalysis, analyze
from .charts import Chart, draw_all
from .loader import load_results
from .pool import worker_pool


@dataclass
class Report:
    root: Path
    analysis: FolderAnalysis
    charts: list[Chart]
    rows: list[dict[str, Any]]

    @property
    def drawn(self) -> list[Chart]:
        return [c for c in self.charts if c.skipped is None]

    def warnings(self) -> list[str]:
        """Everything a reader must know before trusting the numbers."""
        out = [f"run left out: {x.name}: {x.reason}" for x in self.analysis.left_out]
        out += self.analysis.warnings
        out += [f"chart skipped: {c.title}: {c.skipped}" for c in self.charts if c.skipped]
        return out


def _title(campaign: dict[str, Any], root: Path) -> str:
    return f"ratelimit-bench report: {campaign.get('name') or root.name}"


def _config_yaml(campaign: dict[str, Any]) -> str:
    return yaml.safe_dump({k: v for k, v in campaign.items() if k != "machine"}, sort_keys=False) or "(no campaign.yaml)\n"


def _machine_rows(campaign: dict[str, Any]) -> list[tuple[str, str]]:
    machine = campaign.get("machine") or {}
    rows = [(k, str(v)) for k, v in machine.items() if not isinstance(v, dict)]
    rows += [(f"{k} {name}", str(ver)) for k, sub in machine.items() if isinstance(sub, dict) for name, ver in sub.items()]
    return rows


STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f2f2f2}td:nth-child(-n+3){text-align:left}figure{margin:2em 0}img{max-width:100%;border:1px solid #eee}
.warn{background:#fff4e0;border-left:4px solid #f0a020;padding:.5em 1em}pre{background:#f7f7f7;padding:1em;overflow:auto}
figcaption{color:#555;font-size:14px}
"""


def _html_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def render_html(report: Report) -> str:
    campaign = report.analysis.results.campaign
    title = _title(campaign, report.root)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{len(report.rows)} runs analysed, {len(report.analysis.left_out)} left out; "
             f"campaign created {html.escape(str(campaign.get('created', 'n/a')))}.</p>"]
    warnings = report.warnings()
    if warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        parts.append(f"<section class='warn' id='warnings'><h2>Warnings</h2><ul>{items}</ul></section>")
    parts.append("<h2>Summary</h2>" + _html_table(*tables.render(tables.SUMMARY, report.rows)))
    if tables.has_latency(report.rows):
        parts.append("<h2>Latency of admitted requests</h2><p>Nearest-rank percentiles, from the intended and "
                     "from the actual send time.</p>" + _html_table(*tables.render(tables.LATENCY, report.rows)))
    parts.append("<h2>Charts</h2>")
    for chart in report.drawn:
        files = chart.files(report.root)
        data = base64.b64encode(files["png"].read_bytes()).decode("ascii")
        parts.append(f"<figure id='chart-{chart.name}'><img class='chart' alt='{html.escape(chart.title)}' "
                     f"src='data:image/png;base64,{data}'><figcaption><b>{html.escape(chart.title)}.</b> "
                     f"{html.escape(chart.caption)} (<a href='{CHARTS_DIR}/{chart.name}.svg'>SVG</a>)</figcaption></figure>")
    parts.append("<h2>Campaign</h2><pre>" + html.escape(_config_yaml(campaign)) + "</pre>")
    machine = _machine_rows(campaign)
    if machine:
        parts.append("<h2>Versions and machine</h2>" + _html_table(["fact", "value"], machine))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _md_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
    return "\n".join(lines)


def render_md(report: Report) -> str:
    campaign = report.analysis.results.campaign
    out = [f"# {_title(campaign, report.root)}", "",
           f"{len(report.rows)} runs analysed, {len(report.analysis.left_out)} left out.", ""]
    warnings = report.warnings()
    if warnings:
        out += ["## Warnings", "", *[f"- {w}" for w in warnings], ""]
    out += ["## Summary", "", _md_table(*tables.render(tables.SUMMARY, report.rows)), ""]
    if tables.has_latency(report.rows):
        out += ["## Latency of admitted requests", "", _md_table(*tables.render(tables.LATENCY, report.rows)), ""]
    out += ["## Charts", ""]
    for chart in report.drawn:
        out += [f"![{chart.title}]({CHARTS_DIR}/{chart.name}.png)", "", f"*{chart.title}.* {chart.caption}", ""]
    out += ["## Campaign", "", "```yaml", _config_yaml(campaign).rstrip(), "```", ""]
    machine = _machine_rows(campaign)
    if machine:
        out += ["## Versions and machine", "", _md_table(["fact", "value"], machine), ""]
    return "\n".join(out)


def build_report(root: Path, on_run: Callable[[int, int, str], None] | None = None) -> Report:
    """Analyse the folder and write summary.json/csv, charts/, report.html and report.md.

    Raises ResultsError when ``root`` is not a results folder; runs that are not whole are left
    out and named in the report's warnings."""
    root = Path(root)
    with worker_pool() as pool:
        analysis = analyze(load_results(root), on_run, pool)
        rows = write_summary(root, analysis.rows)
        report = Report(root, analysis, draw_all(analysis.runs, root, pool=pool), rows)
    write_text(root / REPORT_HTML, render_html(report))
    write_text(root / REPORT_MD, render_md(report))
    return report
