"""Log text made inert before it lands in Markdown a browser renders (pure).

Reports, Prefect artifacts and knowledge files quote log lines and model replies, and both are written by
whoever can write a log. Rendered as Markdown, a quoted `<img src=…>`, `![track](https://…)` or `<script>` would
make the reader's browser fetch or run something (a tracking pixel in the Prefect UI). Quoted text is therefore
made inert: HTML is escaped (`<` and `>` as entities, so it reads the same and parses as text), image syntax is
broken (`!\\[` is a literal `![`), link syntax is broken (`]\\(`), and in what a browser shows (`defang=True`:
reports and artifacts) URL schemes are defanged (`https[:]//…`) so not even an autolink is made. Knowledge files
keep their URLs readable for the agents that load them; their images and links are still broken.

Markdown the code writes around the quoted text (headings, tables, citations) is not passed through here.
"""

from __future__ import annotations

import re

_IMAGE = re.compile(r"!\s*\[")
_LINK = re.compile(r"\]\s*\(")
_REF_DEF = re.compile(r"^(\s{0,3})\[([^\]\n]+)\]:", re.M)
_SCHEME = re.compile(r"\b(https?|ftp|wss?|file|data|javascript|vbscript|mailto|smb)\s*:\s*(/*)", re.I)
_PROTOCOL_RELATIVE = re.compile(r"(?<![:\w/\]])//(?=[\w.-]+\.[a-z]{2,})", re.I)


def inert(text: str, *, defang: bool = True) -> str:
    """`text` as Markdown that renders as the same words and makes no request (see the module docstring)."""
    out = text.replace("<", "&lt;").replace(">", "&gt;")
    out = _IMAGE.sub(r"!\\[", out)
    out = _LINK.sub(r"]\\(", out)
    out = _REF_DEF.sub(r"\1\\[\2]:", out)
    if defang:
        out = _SCHEME.sub(lambda m: f"{m.group(1)}[:]{m.group(2)}", out)
        out = _PROTOCOL_RELATIVE.sub("/\u200b/", out)
    return out
