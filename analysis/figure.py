"""matplotlib on first use. Importing it costs ~0.3 s of every command that imports the report
(``validate``, ``judge``, a bad input's exit 2), while only a report, a notebook view or a
``--traffic`` chart draws; the drawing modules ask here for a figure instead of importing it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def load() -> None:
    """Import matplotlib now, on the Agg backend (no display, no pyplot state): before a pool of
    workers forks, so each inherits it instead of importing it again."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure  # the import is the point: Figure, its axes and artists loaded


def new_figure(**kwargs: Any) -> Figure:
    """``matplotlib.figure.Figure(**kwargs)``, matplotlib loaded first."""
    load()
    from matplotlib.figure import Figure

    return Figure(**kwargs)
