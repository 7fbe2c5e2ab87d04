"""The chronicle's trend charts as inline SVG bars computed here (no script, no inline style: the CSP allows
neither), one chart per counted series of the weeks' stats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERIES = (("entries", "log entries per week"), ("enrolled_total", "enrolled (cumulative)"),
          ("ae", "AE per week"), ("sae", "SAE per week"), ("deviations", "protocol deviations per week"))
WIDTH, HEIGHT = 780, 90


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    w: float
    h: float
    label: str


@dataclass(frozen=True)
class Chart:
    title: str
    peak: int
    bars: list[Bar]
    width: int = WIDTH
    height: int = HEIGHT


def trend_charts(weeks: list[Any]) -> list[Chart]:
    """`weeks`: objects with `week` and `stats`, oldest first."""
    charts = []
    step = WIDTH / max(len(weeks), 1)
    for key, title in SERIES:
        values = [int((w.stats or {}).get(key) or 0) for w in weeks]
        peak = max(values, default=0)
        if peak == 0 and key in ("ae", "sae", "deviations"):
            continue
        bars = [Bar(round(i * step, 2), round(HEIGHT - HEIGHT * v / peak, 2) if peak else HEIGHT,
                    round(max(step - 1, 1), 2), round(HEIGHT * v / peak, 2) if peak else 0, f"{w.week}: {v}")
                for i, (w, v) in enumerate(zip(weeks, values, strict=True))]
        charts.append(Chart(title, peak, bars))
    return charts
