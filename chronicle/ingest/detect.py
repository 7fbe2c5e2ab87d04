"""Which parser reads a file: decided from the name and, for .json, a peek at the content."""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from datetime import date
from pathlib import Path

NOTE_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:-[^/]*)?\.md$")
SUPPORTED_SUFFIXES = {".md", ".jsonl", ".ndjson", ".csv", ".json"}
COMPRESSED_SUFFIXES = {".jsonl", ".ndjson", ".csv", ".json"}
"""Log formats also read gzip-compressed (`app.jsonl.gz`): decompressed whole, re-read whole when changed."""


ROTATED = re.compile(r"(?:\.\d{1,4}|-\d{8}(?:\d{2})?|[.-]\d{4}-\d{2}-\d{2})$")
"""What log rotation appends to a name: `.1` (numbered), `-20260302` or `.2026-03-02` (dateext)."""


def log_name(path: Path) -> Path:
    """The name a rotated or compressed log had as a log: `app.jsonl.1.gz` -> `app.jsonl` (`.gz` kept apart)."""
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    unrotated = ROTATED.sub("", name)
    if unrotated != name and Path(unrotated).suffix.lower() in COMPRESSED_SUFFIXES:
        name = unrotated
    return path.with_name(name)


def gzipped(path: Path) -> bool:
    """`x.jsonl.gz` (and the rotated `x.jsonl.1.gz`): a compressed log, read through gzip."""
    return path.suffix.lower() == ".gz" and log_name(path).suffix.lower() in COMPRESSED_SUFFIXES


def _suffix(path: Path) -> str:
    return log_name(path).suffix.lower()


def _head(path: Path, size: int = 65536) -> bytes:
    if gzipped(path):
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read(size)
        except (OSError, EOFError, zlib.error):
            return b""  # a broken archive: refused with its reason when read
    with path.open("rb") as fh:
        return fh.read(size)


def detect_format(path: Path) -> str:
    """`note`, `jsonl`, `csv`, `locomo`, or `unsupported` (a `.gz` log by the name inside: `a.jsonl.gz` is jsonl)."""
    suffix = _suffix(path)
    if suffix == ".md":
        return "note" if NOTE_NAME.match(path.name) else "unsupported"
    if suffix in {".jsonl", ".ndjson"}:
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if suffix == ".json":
        head = _head(path)
        if b'"conversation"' in head[:4096] or b'"qa"' in head[:4096]:
            return "locomo"
        return "jsonl" if _json_lines(head) else "unsupported"
    return "unsupported"


def _json_lines(head: bytes) -> bool:
    """Whether a `.json` file is JSON lines (its first line is a whole object by itself), not one JSON document
    spread over many lines (a ground-truth or config file, whose every line would be a broken "entry").
    A file whose first line is not valid JSON at all is still read as lines, so its bad lines are kept as rejects."""
    first = next((line for line in head.splitlines() if line.strip()), b"")
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        text = first.strip()
        return not (text in (b"{", b"[") or text.startswith((b"[{", b"[\"")) or text.endswith((b"{", b"[")))


def note_date(path: Path) -> date:
    """Date of a daily note from its file name; raises ValueError for impossible dates (2026-02-30)."""
    match = NOTE_NAME.match(path.name)
    if not match:
        raise ValueError(f"not a daily-note name: {path.name} (expected YYYY-MM-DD.md or YYYY-MM-DD-slug.md)")
    year, month, day = (int(g) for g in match.groups())
    return date(year, month, day)


def _log_named(path: Path) -> bool:
    return _suffix(path) in SUPPORTED_SUFFIXES or gzipped(path)


def discover(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(log files, other files) under `paths`, recursive and sorted; hidden folders are skipped.

    A file named explicitly is always a log file (an unsupported one is rejected with a reason);
    inside folders, files that are not logs (README.md, MEMORY.md, images, a `.json` file holding one JSON
    document such as a ground truth) are listed as skipped. A path named like a log that is not a regular file
    (a FIFO, socket, device, directory, broken link or symlink loop) is listed as a log file: reading it refuses
    it with its reason, so it is named in the run instead of silently passed over. Symlinked folders are not
    followed (a link back up the tree would loop).
    """
    found: set[Path] = set()
    skipped: set[Path] = set()
    for root in paths:
        root = root.expanduser()
        if not root.is_dir():
            if not root.exists() and not root.is_symlink():
                raise FileNotFoundError(f"no such file or folder: {root}")
            found.add(resolved(root))
            continue
        # A folder that cannot be listed (permissions) is listed itself: reading it names the reason.
        for folder, dirs, names in os.walk(root, followlinks=False,
                                           onerror=lambda exc: found.add(Path(exc.filename).absolute())):
            here = Path(folder)
            dirs[:] = [d for d in dirs if not d.startswith(".") and _walk_into(here / d, found)]
            for name in names:
                if name.startswith("."):
                    continue
                _sort_file(here / name, found, skipped)
    return sorted(found), sorted(skipped)


def _walk_into(path: Path, found: set[Path]) -> bool:
    """Whether to descend into a folder; a folder (or a link to one) named like a log is also listed, to be refused."""
    if _log_named(path):
        found.add(path.absolute())
    return not path.is_symlink()


def _sort_file(path: Path, found: set[Path], skipped: set[Path]) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:  # a broken link or a symlink loop
        (found if _log_named(path) else skipped).add(path.absolute())
        return
    if not stat.S_ISREG(mode):
        if _log_named(path):
            found.add(path.absolute())
        return
    if _log_named(path) and detect_format(path) != "unsupported":
        found.add(resolved(path))
    else:
        skipped.add(resolved(path))


def resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: kept as named, refused with its reason when read
        return path.absolute()
