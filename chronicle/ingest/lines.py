"""Bytes -> text lines, with every undecodable or oversized line turned into a reject."""

from __future__ import annotations

import codecs

from chronicle.ingest.model import Reject

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def sniff_encoding(head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8"


def is_binary(head: bytes) -> bool:
    # UTF-16 text is full of NULs too; the BOM check runs first.
    return sniff_encoding(head) == "utf-8" and b"\x00" in head[:8192]


def escape(raw: bytes, limit: int | None = None) -> str:
    """Undecodable input kept as text: valid UTF-8 as is, other bytes backslash-escaped."""
    return (raw if limit is None else raw[:limit]).decode("utf-8", "backslashreplace")


def decode_lines(body: bytes, *, source_file: str, first_line_no: int) -> tuple[str, list[Reject]]:
    """UTF-8 text of `body`; lines that are not UTF-8 become rejects and empty placeholders.

    The placeholders keep every later line's number true; the SQL stage skips blank lines.
    """
    try:
        return body.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    out, rejects, offset = [], [], 0
    for i, raw in enumerate(body.split(b"\n")):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            rejects.append(Reject(source_file, first_line_no + i, offset, "invalid_utf8", str(exc), escape(raw)))
            out.append("")
        offset += len(raw) + 1
    return "\n".join(out), rejects
