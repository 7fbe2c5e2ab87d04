"""Bytes -> text lines, with every undecodable or oversized line turned into a reject."""

from __future__ import annotations

import codecs

import numpy as np

from chronicle.ingest.model import Reject

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def sniff_encoding(head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8"


def mostly_binary(data: bytes) -> bool:
    """A binary file, not a text file with a stray NUL: NUL bytes on most of its lines or most of its bytes.

    Text with a few NUL-bearing lines is judged per line instead (`binary_line`), so one bad line does not
    refuse the 199 good ones around it. UTF-16 text is full of NULs too: the BOM check runs first.
    """
    if sniff_encoding(data[:4]) != "utf-8" or b"\x00" not in data:
        return False
    lines = [raw for raw in data.split(b"\n") if raw.strip()]
    bad = [raw for raw in lines if b"\x00" in raw]
    return 2 * len(bad) > len(lines) or 2 * sum(len(raw) for raw in bad) > len(data)


def escape(raw: bytes, limit: int | None = None) -> str:
    """Refused input kept as text: valid UTF-8 as is, other bytes and NUL backslash-escaped (`\\xNN`)."""
    return (raw if limit is None else raw[:limit]).decode("utf-8", "backslashreplace").replace("\x00", "\\x00")


def _binary_reject(source_file: str, line_no: int, offset: int, raw: bytes) -> Reject:
    return Reject(source_file, line_no, offset, "binary_line", f"{raw.count(0)} NUL byte(s) in the line", escape(raw))


def blank_binary_lines(data: bytes, *, source_file: str) -> tuple[bytes, list[Reject]]:
    """`data` with every NUL-bearing line emptied (line numbers stay true) and a `binary_line` reject for each."""
    if b"\x00" not in data:
        return data, []
    out, rejects, offset = [], [], 0
    for i, raw in enumerate(data.split(b"\n")):
        size = len(raw)
        if b"\x00" in raw:
            rejects.append(_binary_reject(source_file, i + 1, offset, raw))
            raw = b""
        out.append(raw)
        offset += size + 1
    return b"\n".join(out), rejects


def decode_lines(body: bytes, *, source_file: str, first_line_no: int) -> tuple[str, list[Reject]]:
    """UTF-8 text of `body`; lines that are not UTF-8 or hold a NUL byte become rejects and empty placeholders.

    The placeholders keep every later line's number true; the SQL stage skips blank lines.
    """
    if b"\x00" not in body:  # one C-speed scan; per-line work only for the rare file that needs it
        try:
            return body.decode("utf-8"), []
        except UnicodeDecodeError:
            pass
    out, rejects, offset = [], [], 0
    for i, raw in enumerate(body.split(b"\n")):
        if b"\x00" in raw:
            rejects.append(_binary_reject(source_file, first_line_no + i, offset, raw))
            out.append("")
            offset += len(raw) + 1
            continue
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            rejects.append(Reject(source_file, first_line_no + i, offset, "invalid_utf8", str(exc), escape(raw)))
            out.append("")
        offset += len(raw) + 1
    return "\n".join(out), rejects


def split_lines(body: bytes) -> tuple[bytes, np.ndarray]:
    """`body`'s lines as one buffer without the `\\n` separators, and the Arrow offsets (int64, one more than
    there are lines) of each line in it — a large_string column built at C speed, no Python str per line.

    A final line without its `\\n` is a line; a body ending in `\\n` has no empty line after it. `\\r` stays in
    the lines (the SQL stage strips a trailing one when the body has any).
    """
    if not body:
        return b"", np.zeros(1, np.int64)
    newlines = np.flatnonzero(np.frombuffer(body, np.uint8) == 10)
    n = len(newlines) + (0 if body.endswith(b"\n") else 1)
    starts = np.empty(n + 1, np.int64)
    starts[0] = 0
    starts[1 : len(newlines) + 1] = newlines + 1
    if n > len(newlines):
        starts[n] = len(body) + 1  # as if the last line ended with `\n`
    # A line's start in the separator-free buffer: its start in `body` minus the separators before it.
    offsets = starts - np.arange(n + 1, dtype=np.int64)
    return body.replace(b"\n", b""), offsets
