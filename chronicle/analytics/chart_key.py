"""What a trial chart was drawn from, stamped into the PNG itself, so an unchanged chart is not drawn again.

Drawing a project's two charts costs a backfill ~0.4 s of CPU for matplotlib's import and ~0.4 s per drawing
— a fifth to a third of an offline backfill's worker CPU — while a rerun, or a backfill of weeks whose raw
logs did not change, would draw the very same pictures. The key is a hash of exactly what the pictures show
(the project id in the titles, the charted columns of every week, the drawing code's version); it travels in a
PNG text chunk of each file, so a file and its key are replaced together (the PNG is swapped in atomically)
and two runs drawing at once can never leave one file with the other's key. This module does not import
matplotlib: deciding that nothing needs drawing costs a few file reads.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronicle.names import bounded_name

CHART_COLUMNS = ("week_number", "enrolled", "enrolled_total", "ae", "sae", "deviations")
"""The `weekly_stats` columns the charts show; any other column changing does not change a picture."""

DRAWING_VERSION = "3"
"""Bump when `chronicle.analytics.charts` draws differently, so every stored chart is drawn again once."""

KEY_CHUNK = "Chronicle-Chart-Key"
"""The PNG tEXt keyword that holds the key."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chart_paths(project_id: str, out_dir: Path) -> tuple[Path, Path]:
    """The enrolment and safety PNGs of a project in `out_dir`."""
    safe = bounded_name(project_id, limit=64)  # file systems cap names at 255 bytes; ids are data
    return out_dir / f"{safe}_enrolment.png", out_dir / f"{safe}_safety.png"


def chart_key(project_id: str, rows: Sequence[dict[str, Any]]) -> str:
    """Hex SHA-256 of what the project's charts show."""
    shown = [[row[c] for c in CHART_COLUMNS] for row in rows]
    payload = json.dumps([DRAWING_VERSION, project_id, shown], ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def stored_key(path: Path) -> str | None:
    """The key stamped into the PNG at `path`; None when the file is missing, not a PNG or carries no key.

    Reads the chunks before the image data only (the text chunks come first), not the picture.
    """
    try:
        with path.open("rb") as f:
            if f.read(8) != _PNG_SIGNATURE:
                return None
            while header := f.read(8):
                if len(header) < 8:
                    return None
                length, kind = struct.unpack(">I4s", header)
                if kind in (b"IDAT", b"IEND"):
                    return None
                body = f.read(length)
                f.seek(4, 1)  # the chunk's CRC
                if kind == b"tEXt":
                    keyword, _, text = body.partition(b"\0")
                    if keyword.decode("latin-1") == KEY_CHUNK:
                        return text.decode("latin-1")
    except OSError:
        return None
    return None


def charts_current(project_id: str, rows: Sequence[dict[str, Any]], out_dir: Path) -> bool:
    """Whether both of the project's PNGs in `out_dir` were drawn from exactly these rows."""
    key = chart_key(project_id, rows)
    return all(stored_key(p) == key for p in chart_paths(project_id, out_dir))
