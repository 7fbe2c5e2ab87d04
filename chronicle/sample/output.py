"""Writing the sample folder: atomic files, and never clobbering a folder the generator did not write.

Each file is written to a temp file and renamed, so a killed run leaves old or new files, never half
ones. A folder is reused only if its README.md/chronicle.toml carry `formats.MARKER`; on reuse, log and
note files the new arguments no longer produce are removed, so the folder matches a fresh run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from chronicle.sample.formats import MARKER

_STALE_PATTERNS = ("logs/*/*.jsonl", "logs/*/edc_queries.csv", "memory/**/*.md")


def check_ours(out_dir: Path) -> bool:
    """True if out_dir holds an earlier sample; refuse to overwrite someone's own README or config."""
    ours = False
    for name in ("README.md", "chronicle.toml"):
        path = out_dir / name
        if path.exists():
            if MARKER not in path.read_text(encoding="utf-8", errors="replace"):
                raise FileExistsError(f"{path} was not written by `chronicle sample`; use an empty directory")
            ours = True
    return ours


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the sample from other users of a shared box
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_tree(out_dir: Path, files: dict[str, str], *, previous: bool) -> None:
    """Write {relative path: text} under out_dir; if `previous`, drop the earlier sample's leftovers."""
    for rel, text in sorted(files.items()):
        write_atomic(out_dir / rel, text)
    if previous:
        # An earlier sample with other arguments may have left files this one would not write.
        for pattern in _STALE_PATTERNS:
            for stale in out_dir.glob(pattern):
                if stale.relative_to(out_dir).as_posix() not in files:
                    stale.unlink()
