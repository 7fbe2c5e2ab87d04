"""Content fingerprint of a log file: what tells a same-size rewrite with a restored mtime from "unchanged".

Small files are hashed whole. Big ones are fingerprinted by size, head and tail — a full hash of every
file on every hourly run would cost a full read of every log; an edit in the middle of a big file that
also keeps its size and restores its mtime needs `chronicle ingest --force` (README, "Input contract").
"""

from __future__ import annotations

import hashlib
from pathlib import Path

FULL_HASH_MAX = 8 << 20
"""Files up to 8 MiB are hashed whole (a few ms)."""
EDGE = 1 << 20
"""Bytes hashed at each end of a bigger file."""


def fingerprint(data: bytes) -> str:
    """The fingerprint of a file whose bytes are `data` (equal to `file_fingerprint` of that file)."""
    if len(data) <= FULL_HASH_MAX:
        return "full:" + hashlib.sha256(data).hexdigest()
    return _edges(len(data), data[:EDGE], data[-EDGE:])


def file_fingerprint(path: Path, size: int) -> str:
    """The fingerprint of the file at `path` reading at most 2 MiB of it (`size` from its stat)."""
    if size <= FULL_HASH_MAX:
        return fingerprint(path.read_bytes())
    with path.open("rb") as fh:
        head = fh.read(EDGE)
        fh.seek(max(0, size - EDGE))
        tail = fh.read(EDGE)
    return _edges(size, head, tail)


def _edges(size: int, head: bytes, tail: bytes) -> str:
    digest = hashlib.sha256(b"%d\x1f" % size)
    digest.update(head)
    digest.update(b"\x1f")
    digest.update(tail)
    return "edges:" + digest.hexdigest()
