"""Weekly trend charts as PNG: enrolment (bars + cumulative line) and safety signals (AE / SAE / deviations).

Pure: rows in, files out. Matplotlib runs on the Agg backend (no display) and uses the Noto Sans
CJK font shipped by the `mplfonts` package, so Chinese titles render on a bare server. Each PNG carries the
key of the rows it was drawn from (`chronicle.analytics.chart_key`), so a caller can skip an unchanged chart
without importing this module.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from chronicle.analytics.chart_key import KEY_CHUNK, chart_key, chart_paths
from chronicle.names import bounded_label

CHART_SIZE_IN = (11.0, 5.0)
DPI = 110  # 11 x 5 in at 110 dpi = 1210 x 550 px
# Fixed margins instead of `tight_layout`, which lays every label out once more only to measure it (a sixth of
# a chart's CPU). The figure's size and fonts are fixed, so these fit: rotated week labels and the x label below,
# y ticks up to five digits on the left (and on the right axis of the enrolment chart), a 60-character title.
MARGINS = {"left": 0.07, "bottom": 0.18, "top": 0.92}
RIGHT = {"enrolment": 0.92, "safety": 0.985}


def _cjk_font() -> str | None:
    spec = importlib.util.find_spec("mplfonts")
    if not spec or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "fonts" / "NotoSansCJKsc-Regular.otf"
    if not path.exists():
        return None
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()


_FONT = _cjk_font()
if _FONT:
    matplotlib.rcParams["font.sans-serif"] = [_FONT, "DejaVu Sans"]
    matplotlib.rcParams["font.family"] = "sans-serif"
matplotlib.rcParams["axes.unicode_minus"] = False


def week_label(week_number: int) -> str:
    return f"{week_number // 100}-W{week_number % 100:02d}"


def _ticks(ax: Any, labels: Sequence[str]) -> None:
    step = max(1, len(labels) // 14)  # about 14 readable labels whatever the range
    positions = list(range(0, len(labels), step))
    ax.set_xticks(positions)
    ax.set_xticklabels([labels[i] for i in positions], rotation=45, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)


def _bars(ax: Any, heights: Sequence[float], color: str, label: str) -> None:
    """What `ax.bar(range(n), heights, color=…, label=…)` draws, as one collection instead of one patch per
    bar: `bar` spent ~40 % of a 300-week chart's CPU adding and bounding its Rectangles one by one."""
    half = 0.4  # `bar`'s default width, 0.8, centred on the week
    verts = [((i - half, 0), (i - half, h), (i + half, h), (i + half, 0)) for i, h in enumerate(heights)]
    bars = PolyCollection(verts, facecolors=color, edgecolors="none", label=label)
    bars.sticky_edges.y.append(0)  # like `bar`: the y axis starts at 0 without a margin below
    ax.add_collection(bars)
    ax.autoscale_view()


def _figure(kind: str) -> tuple[Figure, Any]:
    """A figure with one axes, outside pyplot: no global figure registry shared by the threads that draw."""
    fig = Figure(figsize=CHART_SIZE_IN, dpi=DPI)
    fig.subplots_adjust(right=RIGHT[kind], **MARGINS)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def enrolment_chart(project_id: str, rows: Sequence[dict[str, Any]], out: Path, key: str = "") -> Path:
    """Bars: subjects enrolled per ISO week; line: cumulative enrolment (right axis)."""
    labels = [week_label(r["week_number"]) for r in rows]
    x = range(len(rows))
    fig, ax = _figure("enrolment")
    _bars(ax, [r["enrolled"] for r in rows], "#4C78A8", "每周入组 enrolled / week")
    ax.set_ylabel("每周入组人数 (subjects / week)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax2 = ax.twinx()
    ax2.plot(x, [r["enrolled_total"] for r in rows], color="#F58518", linewidth=2, marker="o", markersize=3,
             label="累计入组 cumulative")
    ax2.set_ylabel("累计入组 (cumulative)")
    ax2.set_ylim(bottom=0)
    _ticks(ax, labels)
    ax.set_xlabel("ISO 周 (ISO week)")
    ax.set_title(f"{bounded_label(project_id, limit=60)} 入组进度 · Weekly enrolment")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="upper left", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, out, key)


def safety_chart(project_id: str, rows: Sequence[dict[str, Any]], out: Path, key: str = "") -> Path:
    """Weekly AE, SAE and protocol deviations as lines."""
    labels = [week_label(r["week_number"]) for r in rows]
    x = list(range(len(rows)))
    fig, ax = _figure("safety")
    for column, name, color in (("ae", "不良事件 AE", "#E45756"), ("sae", "严重不良事件 SAE", "#72171A"),
                                ("deviations", "方案偏离 deviations", "#54A24B")):
        ax.plot(x, [r[column] for r in rows], label=name, color=color, linewidth=1.8, marker="o", markersize=3)
    _ticks(ax, labels)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("ISO 周 (ISO week)")
    ax.set_ylabel("每周例数 (events / week)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{bounded_label(project_id, limit=60)} 安全性与方案偏离 · AE / SAE / deviations")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out, key)


def _save(fig: Any, out: Path, key: str) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    # Unique per process and thread: two runs drawing the same chart at once never move each other's file.
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.{threading.get_ident()}.tmp.png")
    fig.savefig(tmp, dpi=DPI, metadata={KEY_CHUNK: key} if key else None)
    tmp.replace(out)  # a reader never sees half a PNG
    return out


def project_charts(project_id: str, rows: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Both charts for one project, stamped with the rows' key; rows are `weekly_stats` rows in week order."""
    if not rows:
        raise ValueError(f"no weekly stats for project {project_id!r}: ingest its logs first")
    key = chart_key(project_id, rows)
    enrolment, safety = chart_paths(project_id, out_dir)
    return [enrolment_chart(project_id, rows, enrolment, key), safety_chart(project_id, rows, safety, key)]
