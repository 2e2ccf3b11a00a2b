"""report.html and report.md from one ``analysis.document.Document``, through the jinja2 templates
shipped in ``analysis/templates/`` (HTML autoescaped; Markdown as written)."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from .document import Document, Said
from .palette import html_markup


def _says(answer: Said) -> Markup:
    """The sentence with every algorithm name in its colour and every run it cites as code."""
    text = html_markup(answer.sentence)
    for run in answer.runs:
        text = text.replace(html.escape(run), f"<code>{html.escape(run)}</code>")
    return Markup(text)


TEMPLATES = Path(__file__).with_name("templates")
"""Package data (pyproject.toml), found beside this module however the package was imported."""


@cache
def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html.j2"]),
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["says"] = _says
    return env


def render(doc: Document, form: str) -> str:
    """``form``: ``html`` or ``md``."""
    return _environment().get_template(f"report.{form}.j2").render(doc=doc)
