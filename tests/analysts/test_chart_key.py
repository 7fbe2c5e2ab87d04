"""Trial charts are drawn only when what they show changed: the key of the charted rows is stamped in each PNG."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chronicle.analytics.chart_key import chart_key, chart_paths, stored_key
from chronicle.services.analytics import trial_charts
from chronicle.settings import Settings
from chronicle.storage.analytics import weekly_stats
from chronicle.storage.db import read
from tests.lake.helpers import child_env

# A second process sees the charts current: it returns the same files and never imports matplotlib.
RERUN = """
import sys
from pathlib import Path
from chronicle.services.analytics import trial_charts
from chronicle.settings import Settings
paths = trial_charts(Settings(), ["XH201"], Path(sys.argv[1]))["XH201"]
print(sorted(p.name for p in paths))
assert "matplotlib" not in sys.modules, "drew (or imported matplotlib) although nothing changed"
"""


def _stamp(path: Path) -> tuple[int, int, bytes]:
    return path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes()


def test_unchanged_charts_are_not_drawn_again_and_changed_ones_are(trial: Path, tmp_path: Path) -> None:
    settings = Settings()
    out = tmp_path / "charts"
    first = trial_charts(settings, ["XH201"], out)["XH201"]
    assert first == list(chart_paths("XH201", out))
    rows = read(settings, weekly_stats, "XH201")
    assert [stored_key(p) for p in first] == [chart_key("XH201", rows)] * 2
    before = [_stamp(p) for p in first]

    rerun = subprocess.run([sys.executable, "-c", RERUN, str(out)], env=child_env(trial.parent), cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert [_stamp(p) for p in first] == before  # same inode, same mtime, same bytes: not rewritten

    # One file drawn from other rows (the stats changed since): both are drawn again, from today's rows,
    # and the pictures are exactly those a first drawing gives.
    from chronicle.analytics.charts import project_charts

    project_charts("XH201", rows[:-1], out)
    assert stored_key(first[0]) != chart_key("XH201", rows)
    assert trial_charts(settings, ["XH201"], out)["XH201"] == first
    assert [stored_key(p) for p in first] == [chart_key("XH201", rows)] * 2
    assert [p.read_bytes() for p in first] == [b for _, _, b in before]


def test_the_key_follows_the_charted_columns_only() -> None:
    rows = [{"week_number": 202520, "enrolled": 1, "enrolled_total": 1, "ae": 0, "sae": 0, "deviations": 0,
             "queries": 3}]
    key = chart_key("XH201", rows)
    assert chart_key("XH201", [{**rows[0], "queries": 9}]) == key  # not on the charts
    assert chart_key("XH201", [{**rows[0], "ae": 1}]) != key
    assert chart_key("XH202", rows) != key  # the title shows the project


def test_a_png_without_a_key_or_no_png_is_not_current(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"not a png")
    assert stored_key(tmp_path / "a.png") is None
    assert stored_key(tmp_path / "missing.png") is None
