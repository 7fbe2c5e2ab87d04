"""Which parser reads a file: decided from the name and, for .json, a peek at the content."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from datetime import date
from pathlib import Path

NOTE_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:-[^/]*)?\.md$")
SUPPORTED_SUFFIXES = {".md", ".jsonl", ".ndjson", ".csv", ".json"}
COMPRESSED_SUFFIXES = {".jsonl", ".ndjson", ".csv", ".json"}
"""Log formats also read gzip-compressed (`app.jsonl.gz`): decompressed whole, re-read whole when changed."""


def gzipped(path: Path) -> bool:
    """`x.jsonl.gz` and friends: a compressed log, read through gzip."""
    return path.suffix.lower() == ".gz" and Path(path.stem).suffix.lower() in COMPRESSED_SUFFIXES


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
    suffix = Path(path.stem).suffix.lower() if gzipped(path) else path.suffix.lower()
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


def discover(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(log files, other files) under `paths`, recursive and sorted; hidden folders are skipped.

    A file named explicitly is always a log file (an unsupported one is rejected with a reason);
    inside folders, files that are not logs (README.md, MEMORY.md, images, a `.json` file holding one JSON
    document such as a ground truth) are listed as skipped.
    """
    found: set[Path] = set()
    skipped: set[Path] = set()
    for root in paths:
        root = root.expanduser()
        if root.is_file():
            found.add(root.resolve())
            continue
        if not root.exists():
            raise FileNotFoundError(f"no such file or folder: {root}")
        for p in root.rglob("*"):
            rel = p.relative_to(root).parts
            if not p.is_file() or any(part.startswith(".") for part in rel):
                continue
            if (p.suffix.lower() in SUPPORTED_SUFFIXES or gzipped(p)) and detect_format(p) != "unsupported":
                found.add(p.resolve())
            else:
                skipped.add(p.resolve())
    return sorted(found), sorted(skipped)
