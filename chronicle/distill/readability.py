"""How much of a knowledge file a reader has to skip: the share of its characters that are markup (pure).

Markup: HTML comments (Chronicle's section and bullet markers, anyone's), heading hashes, list bullets,
emphasis and code marks. Whitespace counts for neither side, so the share says how much of what an assistant
loads into its context is not the facts themselves.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINE_MARKS = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|[-*+][ \t]|\d+[.)][ \t]|>[ \t]?)", re.M)
_INLINE = re.compile(r"\*\*|__|`")


def _visible(text: str) -> int:
    return sum(1 for c in text if not c.isspace())


def markup_share(text: str) -> float:
    """Markup characters / all non-whitespace characters of `text` (0.0 for an empty text)."""
    total = _visible(text)
    if not total:
        return 0.0
    comments = sum(_visible(m.group(0)) for m in _COMMENT.finditer(text))
    rest = _COMMENT.sub("", text)
    marks = sum(_visible(m.group(0)) for m in _LINE_MARKS.finditer(rest)) + sum(
        len(m.group(0)) for m in _INLINE.finditer(rest))
    return (comments + marks) / total
