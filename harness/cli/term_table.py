"""Summary tables for the terminal that fit its width without cutting the names that tell rows
apart (``sliding_log`` vs ``sliding_window_counter``): the wide layout (one column per name)
when it fits or is asked for, else a narrow one (a heading row per scenario, short wrapped
headers). Piped output is wide (nothing to fit)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

WIDE = 160
"""Console width when stdout is not a terminal or ``--wide`` is given: wide enough for the wide
layout (a terminal narrower than that wraps its lines)."""


def console(*, stderr: bool = False, wide: bool = False) -> Console:
    """The CLI's console: the terminal's width, or WIDE when piped or asked for."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=WIDE if wide or not stream.isatty() else None)


@dataclass(frozen=True)
class Column:
    header: str
    """The wide layout's header."""
    short: str
    """The narrow layout's header (``\\n`` breaks it)."""
    cell: Callable[[dict[str, Any]], str]


def names_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The name columns that tell these rows apart: scenario, algorithm, and store when they differ."""
    return ["scenario", "algorithm"] + (["store"] if len({r.get("store") for r in rows}) > 1 else [])


def fit_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: Console,
              *, wide: bool = False, names: Sequence[str] | None = None, leaf: str = "algorithm") -> Table:
    """The wide table if ``wide`` or it fits ``out``'s width, else the narrow one. ``names``: the
    name columns (default ``names_of``); ``leaf``: the one the narrow layout lists under headings."""
    names = list(names) if names is not None else names_of(rows)
    table = _wide(title, rows, columns, names)
    if wide or out.measure(table, options=out.options.update_width(10**6)).maximum <= out.width:
        return table
    return _narrow(title, rows, columns, names, leaf)


def _name_column(table: Table, header: str, values: Sequence[str]) -> None:
    table.add_column(header, no_wrap=True, min_width=max([len(header), *map(len, values)]))


def _wide(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column], names: list[str]) -> Table:
    table = Table(title=title)
    for name in names:
        _name_column(table, name, [str(r.get(name)) for r in rows])
    for c in columns:
        table.add_column(c.header, justify="right")
    for r in rows:
        table.add_row(*(str(r.get(n)) for n in names), *(c.cell(r) for c in columns))
    return table


def _narrow(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column], names: list[str],
            leaf: str) -> Table:
    """A heading row per scenario (and store), then one row per algorithm (``leaf``): the name
    column is as wide as the longest name, whole; the value columns get short headers that wrap."""
    group = [n for n in names if n != leaf]
    heading_of = {id(r): " · ".join(str(r.get(n)) for n in group) for r in rows}
    order = list(dict.fromkeys(heading_of.values()))  # each heading once, where it first appears
    rows = sorted(rows, key=lambda r: order.index(heading_of[id(r)]))
    headings = [heading_of[id(r)] for r in rows]
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    _name_column(table, " · ".join([*group, leaf]) if len(group) > 1 else f"{group[0]} / {leaf}",
                 [*headings, *(f"  {r.get(leaf)}" for r in rows)])
    for c in columns:  # whole numbers too: as wide as the widest value or the header's longest line
        values = [Text.from_markup(c.cell(r)).cell_len for r in rows]
        table.add_column(c.short, justify="right", no_wrap=True,
                         min_width=max([*values, *(len(line) for line in c.short.splitlines())]))
    current = None
    for heading, r in zip(headings, rows):
        if heading != current:
            if current is not None:
                table.add_section()
            table.add_row(f"[bold]{heading}[/bold]", *([""] * len(columns)))
            current = heading
        table.add_row(f"  {r.get(leaf)}", *(c.cell(r) for c in columns))
    return table


def fit_columns(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: Console,
                *, wide: bool = False) -> tuple[Table, list[Column]]:
    """``fit_table`` with as many of ``columns`` (from the left: the first matter most) as fit
    ``out``'s width, and the columns left out (none with ``wide``): a column is dropped whole,
    never shrunk to an unreadable stub."""
    for n in range(len(columns), 0, -1):
        table = fit_table(title, rows, columns[:n], out, wide=wide)
        if wide or out.measure(table, options=out.options.update_width(10**6)).maximum <= out.width:
            return table, list(columns[n:])
    return fit_table(title, rows, columns[:1], out), list(columns[1:])


def left_out(columns: Sequence[Column], width: int, how: str) -> str:
    """The line under a table that left columns out: which, and how to see them."""
    return f"not shown in {width} columns: {', '.join(c.header for c in columns)}; every column: {how}"
