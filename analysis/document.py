"""The report as one structure, built in one walk of a ``Report``: the answers first, each with
its chart, then the sections a reader opens when a figure needs checking (comparison, adaptive head
to head, per key, details per scenario, the charts across scenarios, the full tables, the campaign).
``analysis.page`` writes it through the templates in ``analysis/templates/``: report.html and
report.md cannot say different things, because neither decides what is said."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from contract.schema import CHARTS_DIR, KEYS_FILE

from . import sections, tables
from .adaptive import GOODPUT_BOUND_S
from .analysed import Report
from .analyze import KEY_ROWS
from .charts import Chart
from .labels import row_policy

TABLE_COLUMNS = 7
"""The most columns one HTML table holds: a wider one is split into parts that repeat its name
columns, so the report fits 1,000 px without scrolling sideways."""

_FIGURE = r"[+-]?[\d,]*\.?\d+(e[+-]?\d+)?[x%]?"
_NUMBER = re.compile(rf"^{_FIGURE}( \({_FIGURE}-{_FIGURE}\))?$")
"""A figure, and its spread when the run was repeated: ``1,060 (1,057-1,064)``."""

Cell = tuple[str, bool]
"""A cell's text and whether its column is numeric (right-aligned)."""


@dataclass(frozen=True)
class Part:
    header: list[Cell]
    rows: list[list[Cell]]
    more: bool
    """A second or later part of a split table."""


@dataclass(frozen=True)
class Table:
    header: list[str]
    body: list[list[str]]
    css: str = ""

    def numeric(self, i: int) -> bool:
        cells = [r[i] for r in self.body if r[i] != tables.NA]
        return bool(cells) and all(_NUMBER.match(c) for c in cells)

    def _empty(self, i: int) -> bool:
        """A column with nothing to say (every cell n/a): no name column, whatever its header."""
        return all(r[i] == tables.NA for r in self.body)

    @property
    def aligned(self) -> list[bool]:
        return [self.numeric(i) for i in range(len(self.header))]

    def parts(self) -> list[Part]:
        """The table in parts of at most TABLE_COLUMNS columns, each repeating the leading text columns."""
        width = len(self.header)
        names = next((i for i in range(width) if self.numeric(i) or self._empty(i)), width)
        rest = list(range(names, width))
        if width <= TABLE_COLUMNS or names >= TABLE_COLUMNS - 1:
            chunks = [(list(range(width)), False)]
        else:
            step = TABLE_COLUMNS - names
            chunks = [([*range(names), *rest[i:i + step]], i > 0) for i in range(0, len(rest), step)]
        num = self.aligned
        return [Part([(self.header[i], num[i]) for i in cols], [[(r[i], num[i]) for i in cols] for r in self.body], more)
                for cols, more in chunks]


@dataclass(frozen=True)
class Figure:
    """A chart as the report links it: its files under ``charts/``."""
    name: str
    title: str
    caption: str

    @property
    def png(self) -> str:
        return f"{CHARTS_DIR}/{self.name}.png"

    @property
    def svg(self) -> str:
        return f"{CHARTS_DIR}/{self.name}.svg"


def _figure(chart: Chart) -> Figure:
    return Figure(chart.name, chart.title, chart.caption)


@dataclass(frozen=True)
class Said:
    """An answer as the report opens with it."""
    key: str
    question: str
    sentence: str
    runs: tuple[str, ...]
    figure: Figure | None
    """Its chart, when no earlier answer showed it."""
    seen: Figure | None = None
    """Its chart, when an earlier answer showed it."""


@dataclass(frozen=True)
class Block:
    heading: str | None = None
    anchor: str | None = None
    table: Table | None = None
    figures: list[Figure] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    intro: list[str] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    pre: str | None = None
    """Preformatted text (the campaign's YAML)."""


@dataclass(frozen=True)
class Document:
    title: str
    lead: str
    warnings: list[str]
    answers: list[Said]
    sections: list[Section]

    @property
    def toc(self) -> list[tuple[str, str]]:
        return [("answers", "Answers")] * bool(self.answers) + [(s.id, s.title) for s in self.sections]

    @property
    def first_charts(self) -> list[Figure]:
        """The charts the first screen shows beside their answers."""
        return [a.figure for a in self.answers if a.figure is not None][:FIRST_SCREEN_CHARTS]


FIRST_SCREEN_CHARTS = 3

H2H_INTRO = ("Per adaptive rule and way the downstream breaks: goodput (answered 2xx within "
             f"{GOODPUT_BOUND_S:g} s of the intended send, per second), P99 of admitted requests, share of "
             "legitimate requests rejected, requests the gateway's bucket refused (with one in front), seconds "
             "from the break (and from the recovery) until the limit settles within 10% of its level, the limit's "
             "mean and coefficient of variation in the healthy steady state, target CPU.")
KEYS_SHOWN = 20
KEY_HEADER = ["key", "requests", "refused", "worst window (x L)"]
KEYS_INTRO = (f"Who got the 429s: per key, the requests it sent, how many the policy refused, and the most it had "
              f"admitted in any window W (in multiples of L); the {KEYS_SHOWN} most refused per run here, up to "
              f"{KEY_ROWS:,} in {KEYS_FILE}.")
LATENCY_INTRO = "Nearest-rank percentiles, from the intended and from the actual send time."


def anchor(scenario: str) -> str:
    return "scenario-" + re.sub(r"[^A-Za-z0-9_-]", "_", scenario)


def _answers(report: Report, shown: set[str]) -> list[Said]:
    out = []
    for answer in report.answers():
        chart = report.chart_for(answer)
        first = chart is not None and chart.name not in shown
        if chart is not None:
            shown.add(chart.name)
        out.append(Said(answer.key, answer.question, answer.sentence, answer.runs,
                        _figure(chart) if first and chart else None, _figure(chart) if chart and not first else None))
    return out


def _comparison(report: Report) -> list[Section]:
    found = sections.comparisons(report.groups)
    if not found:
        return []
    groups = sections.scenarios(report.groups)
    intro = [f"Per algorithm: P99 latency of admitted requests from the intended send time, share rejected, target CPU, "
             f"and the marginal CPU's overhead against {sections.BASELINE} (no limiting).", sections.cpu_note(report.groups)]
    return [Section("comparison", "Comparison", [p for p in intro if p],
                    [Block(sections.heading(s, groups[s]), table=Table(*t)) for s, t in found.items()])]


def _head_to_head(report: Report, shown: set[str]) -> list[Section]:
    found = sections.head_to_head(report.rows)
    if not found:
        return []
    blocks = [Block(kind, table=Table(*t)) for kind, t in found.items()]
    chart = next((c for c in report.charts if c.spec == "adaptive_limit"), None)
    if chart is not None:
        shown.add(chart.name)
        blocks.append(Block(figures=[_figure(chart)]))
    return [Section("adaptive-head-to-head", "Adaptive head to head", [H2H_INTRO], blocks)]


def _keys(report: Report) -> list[Section]:
    """A trace run's most refused keys, the run's policy in its heading."""
    blocks = []
    for a in report.analysis.runs:
        if a.keys is None:
            continue
        limit = a.run.info.policy.limit
        body = [[str(k.key), f"{k.requests:,}", f"{k.refused:,}", f"{k.worst_window / limit:,.2f}"]
                for k in a.keys.head(KEYS_SHOWN).itertuples()]
        refused = int((a.keys["refused"] > 0).sum())
        heading = f"{a.run.name} · {row_policy(a.row)}: {refused:,} of {len(a.keys):,} keys refused" + \
            (f" (the first {len(a.keys):,} keys kept)" if len(a.keys) >= KEY_ROWS else "")
        blocks.append(Block(heading, table=Table(KEY_HEADER, body)))
    return [Section("keys", "Per key", [KEYS_INTRO], blocks)] if blocks else []


def _details(report: Report, shown: set[str]) -> list[Section]:
    blocks = [Block(sections.heading(s, rows), anchor(s), Table(*sections.detail(rows)),
                    [_figure(c) for c in report.charts if c.scenario == s and c.name not in shown])
              for s, rows in sections.scenarios(report.groups).items()]
    rest = [_figure(c) for c in report.charts if c.scenario is None and c.name not in shown]
    across = [Section("across-scenarios", "Across scenarios", blocks=[Block(figures=rest)])] if rest else []
    return [Section("details", "Details per scenario", blocks=blocks), *across]


def _full(report: Report) -> Section:
    blocks = [Block(table=Table(*tables.render(tables.SUMMARY, report.rows), css="full"))]
    if tables.has_latency(report.rows):
        blocks.append(Block("Latency of admitted requests: " + LATENCY_INTRO,
                            table=Table(*tables.render(tables.LATENCY, report.rows), css="full")))
    return Section("full-tables", "Full tables", blocks=blocks)


def _campaign(campaign: dict[str, Any]) -> list[Section]:
    text = yaml.safe_dump({k: v for k, v in campaign.items() if k != "machine"}, sort_keys=False) or "(no campaign.yaml)\n"
    machine = campaign.get("machine") or {}
    rows = [[k, str(v)] for k, v in machine.items() if not isinstance(v, dict)]
    rows += [[f"{k} {name}", str(ver)] for k, sub in machine.items() if isinstance(sub, dict) for name, ver in sub.items()]
    return [Section("campaign", "Campaign", pre=text)] + \
        ([Section("machine", "Versions and machine", blocks=[Block(table=Table(["fact", "value"], rows))])] if rows else [])


def document(report: Report) -> Document:
    """The one walk: what the report says, in the order it says it; every chart shown once."""
    campaign = report.analysis.results.campaign
    shown: set[str] = set()
    said = _answers(report, shown)
    body: list[Section] = [*_comparison(report), *_head_to_head(report, shown), *_keys(report), *_details(report, shown),
                           _full(report), *_campaign(campaign)]
    lead = (f"{len(report.rows)} runs analysed, {len(report.analysis.left_out)} left out; "
            f"campaign created {campaign.get('created', 'n/a')}.")
    return Document(f"ratelimit-bench report: {campaign.get('name') or report.root.name}", lead, report.warnings(), said, body)
