"""Matplotlib figures as PNG bytes, for the plots of every stage (view, evaluation).

Figures use the object-oriented API on an Agg canvas: no pyplot, so no display and no global figure state
(plots may be made side by side in threads), and no version string in the PNG, so the bytes depend on the
data only.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100
PNG_METADATA = {"Software": None}


def new_figure(size: tuple[float, float]) -> Figure:
    """An empty figure of `size` inches on its own Agg canvas."""
    figure = Figure(figsize=size, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def figure_png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    return buffer.getvalue()
