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
AXIS = 16
"""Height of the week labels under the bars."""
LABELS = 8
"""About this many week labels whatever the span: a label is ~50 px wide, the chart 780."""


@dataclass(frozen=True)
class Chart:
    title: str
    peak: int
    bars: Markup
    """`<rect>` elements, each with its week and count as its `<title>` (the tooltip)."""
    axis: Markup
    """The x axis under the bars: a tick and the week's name at every few weeks."""
    width: int = WIDTH
    height: int = HEIGHT + AXIS


def trend_charts(weeks: list[Any]) -> list[Chart]:
    """`weeks`: objects with `week` and `stats`, oldest first."""
    charts = []
    step = WIDTH / max(len(weeks), 1)
    bar_width = f"{max(step - 1, 1):.2f}"
    places = [(f"{i * step:.2f}", escape(w.week)) for i, w in enumerate(weeks)]  # shared by every series
    axis = _axis([w.week for w in weeks], step)
    for key, title in SERIES:
        values = [int((w.stats or {}).get(key) or 0) for w in weeks]
        peak = max(values, default=0)
        if peak == 0 and key in ("ae", "sae", "deviations"):
            continue
        bars = "".join(
            f'<rect x="{x}" y="{HEIGHT - HEIGHT * v / peak:.2f}" width="{bar_width}" '
            f'height="{HEIGHT * v / peak:.2f}"><title>{week}: {v}</title></rect>'
            for (x, week), v in zip(places, values, strict=True) if v > 0)
        charts.append(Chart(title, peak, Markup(bars), axis))
    return charts


def _axis(weeks: list[str], step: float) -> Markup:
    """Ticks and week names ("2025-W10") every few weeks, the first week always named, none cut off at the right."""
    every = max(1, -(-len(weeks) // LABELS))
    out = [f'<line class="axis" x1="0" y1="{HEIGHT}" x2="{WIDTH}" y2="{HEIGHT}"></line>']
    for i in range(0, len(weeks), every):
        x = i * step + step / 2
        anchor = "start" if i == 0 else ("end" if x > WIDTH - 30 else "middle")
        label_x = 0 if i == 0 else x
        out.append(f'<line class="tick" x1="{x:.2f}" y1="{HEIGHT}" x2="{x:.2f}" y2="{HEIGHT + 3}"></line>'
                   f'<text x="{label_x:.2f}" y="{HEIGHT + AXIS - 3}" text-anchor="{anchor}">{escape(weeks[i])}</text>')
    return Markup("".join(out))
