"""A log file's identity is what it holds, not its name: the hash of its head (its first lines).

A rename, a `copytruncate` copy, a compressed rotation (`app.jsonl.1.gz`) or a copy under another name
starts with the same bytes as the file already read, so it is recognised as that file and read on from the
offset already reached (its lines are not read twice); a path whose head changed holds new content, read from
its start. The head grows with a small file (its first lines within `HEAD_BYTES`), so the content looked up
is tried at each line boundary: the head the known file had when it was read may be shorter than today's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

HEAD_BYTES = 4096
"""Bytes of a file's start that recognise it (cut back to a line boundary)."""
MIN_HEAD = 32
"""A shorter head (one tiny line) is too common to recognise a file at another path by."""


@dataclass(frozen=True)
class Head:
    """The recognising prefix of a file's content: its length and sha256."""

    length: int
    sha256: str

    def matches(self, content: bytes) -> bool:
        """Whether `content` starts with this head (the same file, possibly grown)."""
        return len(content) >= self.length and sha256_hex(content[: self.length]) == self.sha256


def sha256_hex(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def head_of(content: bytes) -> Head:
    """The head of `content`: its whole lines within `HEAD_BYTES`, or `HEAD_BYTES` when its first line is longer."""
    window = content[:HEAD_BYTES]
    cut = window.rfind(b"\n") + 1
    prefix = window[:cut] if cut else window
    return Head(len(prefix), sha256_hex(prefix))


def candidate_heads(content: bytes, skip_first_line: bool = False) -> list[Head]:
    """Every head a known file could have had if `content` is that file grown: each line-boundary prefix within
    `HEAD_BYTES` (and the head of `content` itself), never shorter than `MIN_HEAD`. `skip_first_line`: a CSV's
    first line is its header, shared by every export of the same columns, so it alone recognises nothing."""
    window = content[:HEAD_BYTES]
    heads: list[Head] = []
    digest, start = hashlib.sha256(), 0
    while (end := window.find(b"\n", start) + 1) > 0:
        digest.update(window[start:end])  # incremental: each prefix costs its new line only
        if end >= MIN_HEAD and not (skip_first_line and start == 0):
            heads.append(Head(end, digest.copy().hexdigest()))
        start = end
    own = head_of(content)
    if own.length >= MIN_HEAD and own not in heads:
        heads.append(own)
    return heads


def identity_for(path: str, head: Head, taken: set[str]) -> str:
    """The id of content first seen at `path`: the path itself unless rows of other content already use it."""
    return path if path not in taken else f"{path}#{head.sha256[:12]}"
