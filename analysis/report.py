"""``report.html`` (self-contained: charts embedded as base64 PNG, a few lines of inline script to
sort tables) and ``report.md``, rebuilt from a results folder's raw files, with summary.json/csv
and the charts beside them. Both open with the answers to the questions a user brings, then the
comparison, the details per scenario, and the full tables last."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from contract.atomic import write_text
from contract.schema import CHARTS_DIR, KEYS_FILE, REPORT_HTML, REPORT_MD
from contract.summary import write_summary

from . import sections, tables
from .adaptive import GOODPUT_BOUND_S
from .analyze import KEY_ROWS, FolderAnalysis, RunAnalysis, analyze
from .answers import Answer, answers
from .charts import Chart, check_panels, draw_all
from .keys import KEY_COLUMNS
from .labels import row_policy
from .loader import load_results
from .palette import html_markup
from .pool import worker_pool
from .spread import group


@dataclass
class Report:
    root: Path
    analysis: FolderAnalysis
    charts: list[Chart]  # the charts drawn: a chart without data is not drawn, and not mentioned
    rows: list[dict[str, Any]]
    """One per run (each repeat its own), as summary.json holds them."""

    @property
    def groups(self) -> list[dict[str, Any]]:
        """One per run with its repeats merged: the median and its spread (analysis.spread)."""
        return group(self.rows)

    def warnings(self) -> list[str]:
        """Everything a reader must know before trusting the numbers."""
        progress = self.analysis.results.progress
        first = [line] if progress is not None and (line := progress.line()) else []
        return first + [f"run left out: {x.name}: {x.reason}" for x in self.analysis.left_out] + self.analysis.warnings

    def answers(self) -> list[Answer]:
        return answers(self.groups)

    def chart_for(self, answer: Answer) -> Chart | None:
        """The answer's chart: the one of its first run's scenario when the chart is drawn per scenario."""
        scenario = next((r["scenario"] for r in self.groups if r["run"] == answer.runs[0]), None)
        return next((c for c in self.charts if c.spec == answer.chart and c.scenario in (None, scenario)), None)


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
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222;box-sizing:border-box}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
.scroll{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:.8em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:bottom}
th{background:#f2f2f2;font-weight:600;max-width:7em;white-space:normal;cursor:pointer;user-select:none}
th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td{white-space:nowrap}.scroll.more table{margin-top:0}
table.full{font-size:12px}table.full th{max-width:5.5em}
figure{margin:1em 0 2em}img{max-width:100%;border:1px solid #eee}
figcaption{color:#555;font-size:14px;max-width:1100px}
.warn{background:#fff4e0;border-left:4px solid #f0a020;padding:.5em 1em}pre{background:#f7f7f7;padding:1em;overflow:auto}
.answer{border-left:4px solid #4a7fb0;padding:.1em 1em;margin:1.2em 0;background:#f8fafc}
.answer h3{margin:.4em 0}.answer p.says{font-size:17px;line-height:1.45;max-width:1100px}
.alg{font-weight:600}code{font-size:90%;background:#eef1f4;padding:0 .25em;border-radius:3px}nav a{margin-right:1em}
"""

SORT_SCRIPT = """<script>
// click a header to sort its table (numbers as numbers; n/a last)
document.querySelectorAll("table.sortable th").forEach(th => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0], asc = th.dataset.dir !== "asc", i = th.cellIndex;
  th.parentNode.querySelectorAll("th").forEach(h => delete h.dataset.dir);
  th.dataset.dir = asc ? "asc" : "desc";
  const key = td => { const n = parseFloat(td.textContent.replace(/,/g, "")); return isNaN(n) ? td.textContent : n; };
  const cmp = (x, y) => typeof x !== typeof y ? (typeof x === "number" ? -1 : 1) : x < y ? -1 : x > y ? 1 : 0;
  [...body.rows].sort((a, b) => (asc ? 1 : -1) * cmp(key(a.cells[i]), key(b.cells[i]))).forEach(r => body.appendChild(r));
}));
</script>"""

_FIGURE = r"[+-]?[\d,]*\.?\d+(e[+-]?\d+)?[x%]?"
_NUMBER = re.compile(rf"^{_FIGURE}( \({_FIGURE}-{_FIGURE}\))?$")
"""A figure, and its spread when the run was repeated: ``1,060 (1,057-1,064)``."""


def _numeric(body: Sequence[Sequence[str]], i: int) -> bool:
    cells = [r[i] for r in body if r[i] != tables.NA]
    return bool(cells) and all(_NUMBER.match(c) for c in cells)


def _empty(body: Sequence[Sequence[str]], i: int) -> bool:
    """A column with nothing to say (every cell n/a): no name column, whatever its header."""
    return all(r[i] == tables.NA for r in body)


TABLE_COLUMNS = 7
"""The most columns one HTML table holds: a wider one is split into parts that repeat its name
columns, so the report fits 1,000 px without scrolling sideways."""


def _parts(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[tuple[list[int], bool]]:
    """Column indices of each part of a table (its leading text columns in every part)."""
    names = next((i for i in range(len(header)) if _numeric(body, i) or _empty(body, i)), len(header))
    rest = list(range(names, len(header)))
    if len(header) <= TABLE_COLUMNS or names >= TABLE_COLUMNS - 1:
        return [(list(range(len(header))), False)]
    step = TABLE_COLUMNS - names
    return [([*range(names), *rest[i:i + step]], i > 0) for i in range(0, len(rest), step)]


def _html_table(header: Sequence[str], body: Sequence[Sequence[str]], css: str = "") -> str:
    """Sortable; numeric columns (header and cells) right-aligned; split in parts of at most TABLE_COLUMNS."""
    out = []
    for cols, more in _parts(header, body):
        num = [_numeric(body, i) for i in cols]
        head = "".join(f"<th{' class=num' if n else ''}>{html.escape(header[i])}</th>" for i, n in zip(cols, num))
        rows = "".join("<tr>" + "".join(f"<td{' class=num' if n else ''}>{html.escape(r[i])}</td>" for i, n in zip(cols, num))
                       + "</tr>" for r in body)
        out.append(f"<div class='scroll{' more' if more else ''}'><table class='sortable {css}'><thead><tr>{head}</tr>"
                   f"</thead><tbody>{rows}</tbody></table></div>")
    return "".join(out)


def _figure(report: Report, chart: Chart) -> str:
    data = base64.b64encode(chart.files(report.root)["png"].read_bytes()).decode("ascii")
    return (f"<figure id='chart-{chart.name}'><img class='chart' alt='{html.escape(chart.title)}' "
            f"src='data:image/png;base64,{data}'><figcaption><b>{html.escape(chart.title)}.</b> "
            f"{html.escape(chart.caption)} (<a href='{CHARTS_DIR}/{chart.name}.svg'>SVG</a>)</figcaption></figure>")


def _says(answer: Answer) -> str:
    text = html_markup(answer.sentence)
    for run in answer.runs:
        text = text.replace(html.escape(run), f"<code>{html.escape(run)}</code>")
    return text


def _anchor(scenario: str) -> str:
    return "scenario-" + re.sub(r"[^A-Za-z0-9_-]", "_", scenario)


H2H_INTRO = ("Per adaptive rule and way the downstream breaks: goodput (answered 2xx within "
             f"{GOODPUT_BOUND_S:g} s of the intended send, per second), P99 of admitted requests, share of "
             "legitimate requests rejected, requests the gateway's bucket refused (with one in front), seconds "
             "from the break (and from the recovery) until the limit settles within 10% of its level, the limit's "
             "mean and coefficient of variation in the healthy steady state, target CPU.")


def _h2h_chart(report: Report) -> Chart | None:
    return next((c for c in report.charts if c.spec == "adaptive_limit"), None)


def _h2h_html(report: Report) -> list[str]:
    """The adaptive head to head: a table per downstream break, then the limit-over-time chart."""
    tables_ = sections.head_to_head(report.rows)
    if not tables_:
        return []
    parts = [f"<section id='adaptive-head-to-head'><h2>Adaptive head to head</h2><p>{html.escape(H2H_INTRO)}</p>"]
    parts += [f"<h3>{html.escape(kind)}</h3>" + _html_table(*t) for kind, t in tables_.items()]
    chart = _h2h_chart(report)
    return [*parts, *([_figure(report, chart)] if chart is not None else []), "</section>"]


def _h2h_md(report: Report) -> list[str]:
    tables_ = sections.head_to_head(report.rows)
    if not tables_:
        return []
    out = ["## Adaptive head to head", "", H2H_INTRO, ""]
    for kind, table in tables_.items():
        out += [f"### {kind}", "", _md_table(*table), ""]
    chart = _h2h_chart(report)
    return out + (_md_figure(chart) if chart is not None else [])


KEYS_SHOWN = 20
KEY_HEADER = ["key", "requests", "refused", "worst window (x L)"]


def _key_tables(report: Report) -> list[tuple[str, str, tuple[list[str], list[list[str]]]]]:
    """A trace run's most refused keys: (run, heading, table), the run's policy in its heading."""
    out = []
    for a in report.analysis.runs:
        if a.keys is None:
            continue
        limit = a.run.info.policy.limit
        body = [[str(k.key), f"{k.requests:,}", f"{k.refused:,}", f"{k.worst_window / limit:,.2f}"]
                for k in a.keys.head(KEYS_SHOWN).itertuples()]
        refused = int((a.keys["refused"] > 0).sum())
        heading = f"{a.run.name} · {row_policy(a.row)}: {refused:,} of {len(a.keys):,} keys refused" + \
            (f" (the first {len(a.keys):,} keys kept)" if len(a.keys) >= KEY_ROWS else "")
        out.append((a.run.name, heading, (KEY_HEADER, body)))
    return out


KEYS_INTRO = (f"Who got the 429s: per key, the requests it sent, how many the policy refused, and the most it had "
              f"admitted in any window W (in multiples of L); the {KEYS_SHOWN} most refused per run here, up to "
              f"{KEY_ROWS:,} in {KEYS_FILE}.")


def _keys_html(report: Report) -> list[str]:
    found = _key_tables(report)
    if not found:
        return []
    parts = [f"<section id='keys'><h2>Per key</h2><p>{html.escape(KEYS_INTRO)}</p>"]
    parts += [f"<h3>{html.escape(heading)}</h3>" + _html_table(*table) for _, heading, table in found]
    return [*parts, "</section>"]


def _keys_md(report: Report) -> list[str]:
    found = _key_tables(report)
    if not found:
        return []
    lines = ["## Per key", "", KEYS_INTRO, ""]
    for _, heading, table in found:
        lines += [f"### {heading}", "", _md_table(*table), ""]
    return lines


def write_keys(root: Path, runs: Sequence[RunAnalysis]) -> None:
    """keys.csv: every trace run's kept keys, the run's name first; not written when no run replayed a trace."""
    frames = [a.keys.assign(run=a.run.name)[["run", *KEY_COLUMNS]] for a in runs if a.keys is not None]
    if frames:
        write_text(root / KEYS_FILE, pd.concat(frames, ignore_index=True).to_csv(index=False))


def render_html(report: Report) -> str:
    campaign = report.analysis.results.campaign
    title = _title(campaign, report.root)
    groups = sections.scenarios(report.groups)
    found = report.answers()
    comparisons = sections.comparisons(report.groups)
    toc = [("answers", "Answers")] * bool(found) + [("comparison", "Comparison")] * bool(comparisons)
    toc += [("keys", "Per key")] * any(a.keys is not None for a in report.analysis.runs)
    toc += [(_anchor(s), s) for s in groups] + [("full-tables", "Full tables"), ("campaign", "Campaign")]
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{len(report.rows)} runs analysed, {len(report.analysis.left_out)} left out; "
             f"campaign created {html.escape(str(campaign.get('created', 'n/a')))}.</p>",
             "<nav>" + "".join(f"<a href='#{a}'>{html.escape(t)}</a>" for a, t in toc) + "</nav>"]
    warnings = report.warnings()
    if warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        parts.append(f"<section class='warn' id='warnings'><h2>Warnings</h2><ul>{items}</ul></section>")
    shown: set[str] = set()
    if found:
        parts.append("<section id='answers'><h2>Answers</h2>")
        for answer in found:
            parts.append(f"<div class='answer'><h3>{html.escape(answer.question)}</h3><p class='says'>{_says(answer)}</p>")
            chart = report.chart_for(answer)
            if chart is not None and chart.name not in shown:
                parts.append(_figure(report, chart))
                shown.add(chart.name)
            elif chart is not None:
                parts.append(f"<p>Chart: <a href='#chart-{chart.name}'>{html.escape(chart.title)}</a>.</p>")
            parts.append("</div>")
        parts.append("</section>")
    if comparisons:
        parts.append("<section id='comparison'><h2>Comparison</h2><p>Per algorithm: P99 latency of admitted requests "
                     f"from the intended send time, share rejected, target CPU, and the marginal CPU's overhead "
                     f"against {sections.BASELINE} (no limiting).</p><p>{html.escape(sections.cpu_note(report.groups))}</p>")
        parts += [f"<h3>{html.escape(sections.heading(s, groups[s]))}</h3>" + _html_table(*t) for s, t in comparisons.items()]
        parts.append("</section>")
    parts += _h2h_html(report)
    shown.update(c.name for c in [_h2h_chart(report)] if c is not None)
    parts += _keys_html(report)
    parts.append("<h2>Details per scenario</h2>")
    for scenario, rows in groups.items():
        parts.append(f"<section id='{_anchor(scenario)}'><h3>{html.escape(sections.heading(scenario, rows))}</h3>"
                     + _html_table(*sections.detail(rows)))
        parts += [_figure(report, c) for c in report.charts if c.scenario == scenario and c.name not in shown]
        parts.append("</section>")
    rest = [c for c in report.charts if c.scenario is None and c.name not in shown]
    if rest:
        parts.append("<h2>Across scenarios</h2>" + "".join(_figure(report, c) for c in rest))
    parts.append("<h2 id='full-tables'>Full tables</h2>" + _html_table(*tables.render(tables.SUMMARY, report.rows), css="full"))
    if tables.has_latency(report.rows):
        parts.append("<h3>Latency of admitted requests</h3><p>Nearest-rank percentiles, from the intended and "
                     "from the actual send time.</p>" + _html_table(*tables.render(tables.LATENCY, report.rows), css="full"))
    parts.append("<h2 id='campaign'>Campaign</h2><pre>" + html.escape(_config_yaml(campaign)) + "</pre>")
    machine = _machine_rows(campaign)
    if machine:
        parts.append("<h2>Versions and machine</h2>" + _html_table(["fact", "value"], machine))
    parts.append(SORT_SCRIPT + "</body></html>\n")
    return "\n".join(parts)


def _md_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "".join("---:|" if _numeric(body, i) else "---|" for i in range(len(header)))]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
    return "\n".join(lines)


def _md_figure(chart: Chart) -> list[str]:
    return [f"![{chart.title}]({CHARTS_DIR}/{chart.name}.png)", "", f"*{chart.title}.* {chart.caption}", ""]


def render_md(report: Report) -> str:
    campaign = report.analysis.results.campaign
    out = [f"# {_title(campaign, report.root)}", "",
           f"{len(report.rows)} runs analysed, {len(report.analysis.left_out)} left out.", ""]
    warnings = report.warnings()
    if warnings:
        out += ["## Warnings", "", *[f"- {w}" for w in warnings], ""]
    shown: set[str] = set()
    found = report.answers()
    if found:
        out += ["## Answers", ""]
        for answer in found:
            out += [f"### {answer.question}", "", answer.sentence, ""]
            chart = report.chart_for(answer)
            if chart is not None and chart.name not in shown:
                out += _md_figure(chart)
                shown.add(chart.name)
    comparisons = sections.comparisons(report.groups)
    groups = sections.scenarios(report.groups)
    if comparisons:
        out += ["## Comparison", "", sections.cpu_note(report.groups), ""]
        for scenario, table in comparisons.items():
            out += [f"### {sections.heading(scenario, groups[scenario])}", "", _md_table(*table), ""]
    out += _h2h_md(report)
    shown.update(c.name for c in [_h2h_chart(report)] if c is not None)
    out += _keys_md(report)
    out += ["## Details per scenario", ""]
    for scenario, rows in groups.items():
        out += [f"### {sections.heading(scenario, rows)}", "", _md_table(*sections.detail(rows)), ""]
        for chart in (c for c in report.charts if c.scenario == scenario and c.name not in shown):
            out += _md_figure(chart)
    rest = [c for c in report.charts if c.scenario is None and c.name not in shown]
    if rest:
        out += ["## Across scenarios", ""] + [line for c in rest for line in _md_figure(c)]
    out += ["## Full tables", "", _md_table(*tables.render(tables.SUMMARY, report.rows)), ""]
    if tables.has_latency(report.rows):
        out += ["### Latency of admitted requests", "", _md_table(*tables.render(tables.LATENCY, report.rows)), ""]
    out += ["## Campaign", "", "```yaml", _config_yaml(campaign).rstrip(), "```", ""]
    machine = _machine_rows(campaign)
    if machine:
        out += ["## Versions and machine", "", _md_table(["fact", "value"], machine), ""]
    return "\n".join(out)


def build_report(root: Path, on_run: Callable[[int, int, str], None] | None = None,
                 on_chart: Callable[[int, int, str], None] | None = None) -> Report:
    """Analyse the folder and write summary.json/csv, charts/, report.html and report.md;
    ``on_run`` and ``on_chart`` as each run is analysed and each chart drawn.

    Raises ResultsError when ``root`` is not a results folder; runs that are not whole are left
    out and named in the report's warnings."""
    root = Path(root)
    with worker_pool() as pool:
        analysis = analyze(load_results(root), on_run, pool)
        check_panels(analysis.runs)
        rows = write_summary(root, analysis.rows)
        write_keys(root, analysis.runs)
        report = Report(root, analysis, draw_all(analysis.runs, root, pool=pool, on_chart=on_chart), rows)
    write_text(root / REPORT_HTML, render_html(report))
    write_text(root / REPORT_MD, render_md(report))
    return report
