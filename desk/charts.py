"""The chronicle's trend charts as inline SVG bars computed here (no script, no inline style: the CSP allows
neither), one chart per counted series of the weeks' stats.

A chart's bars are written here as one escaped SVG fragment rather than looped over in the template: a
156-week chronicle has up to five charts of 156 bars, and a template loop over ~800 elements cost more than
the page's queries. A week counting zero draws no bar (nothing to see or hover)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

SERIES = (("entries", "log entries per week"), ("enrolled_total", "enrolled (cumulative)"),
          ("ae", "AE per week"), ("sae", "SAE per week"), ("deviations", "protocol deviations per week"))
WIDTH, HEIGHT = 780, 90


@dataclass(frozen=True)
class Chart:
    title: str
    peak: int
    bars: Markup
    """`<rect>` elements, each with its week and count as its `<title>` (the tooltip)."""
    width: int = WIDTH
    height: int = HEIGHT


def trend_charts(weeks: list[Any]) -> list[Chart]:
    """`weeks`: objects with `week` and `stats`, oldest first."""
    charts = []
    step = WIDTH / max(len(weeks), 1)
    bar_width = f"{max(step - 1, 1):.2f}"
    places = [(f"{i * step:.2f}", escape(w.week)) for i, w in enumerate(weeks)]  # shared by every series
    for key, title in SERIES:
        values = [int((w.stats or {}).get(key) or 0) for w in weeks]
        peak = max(values, default=0)
        if peak == 0 and key in ("ae", "sae", "deviations"):
            continue
        bars = "".join(
            f'<rect x="{x}" y="{HEIGHT - HEIGHT * v / peak:.2f}" width="{bar_width}" '
            f'height="{HEIGHT * v / peak:.2f}"><title>{week}: {v}</title></rect>'
            for (x, week), v in zip(places, values, strict=True) if v > 0)
        charts.append(Chart(title, peak, Markup(bars)))
    return charts
