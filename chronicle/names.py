"""Names derived from ids and paths — file names, artifact keys, flow/task-run names: bounded and hashed (pure).

Ids come from data (a `project_id` of 300 characters, a CJK project name, a file name holding a phone number),
while file systems cap a name at 255 bytes and Prefect keys allow `[a-z0-9-]` only. Every such name is built
here, by one rule:

- a name that is already safe and short is used as is (`XH201_enrolment.png`, `report-xh201-2026w05`);
- otherwise the unsafe characters are replaced, the result is cut to the limit, and a short hash of the
  *whole* original is appended — so two ids that differ only beyond the cut, or only in replaced characters
  (`a b` / `a-b`, `试验` / `实验`), never share a name, and the same id always gets the same one.
"""

from __future__ import annotations

import hashlib
import re

HASH_CHARS = 10
_SAFE = re.compile(r"[A-Za-z0-9_-]")
_KEY_SAFE = re.compile(r"[a-z0-9]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def bounded_name(value: str, *, limit: int = 64, lower: bool = False, fill: str = "_") -> str:
    """`value` as a name of at most `limit` ASCII characters `[A-Za-z0-9_-]` (`[a-z0-9-]` when `lower`).

    `lower=True` is the Prefect artifact-key alphabet (case folding alone does not add a hash, so existing
    keys such as `charts-xh201` stay as they were). Never empty, never starts with a dot.
    """
    limit = max(limit, HASH_CHARS + 2)
    text = value.lower() if lower else value
    safe = _KEY_SAFE if lower else _SAFE
    fill = "-" if lower else fill
    out = "".join(ch if safe.fullmatch(ch) else fill for ch in text)
    out = re.sub(re.escape(fill) + "{2,}", fill, out).strip(fill + "-")
    if out and out == text and len(out) <= limit:
        return out
    head = out[: limit - HASH_CHARS - 1].rstrip(fill + "-")
    return f"{head}{fill}{_digest(value)}" if head else _digest(value)


def bounded_label(value: str, *, limit: int = 80) -> str:
    """Free text (a flow/task-run name part) cut to `limit` characters, with the hash when cut.

    Control characters become spaces; everything else is kept, since run names are shown, not used as paths.
    """
    text = _CONTROL.sub(" ", value)
    if len(text) <= limit and text == value:
        return text
    limit = max(limit, HASH_CHARS + 2)
    return f"{text[: limit - HASH_CHARS - 1]}~{_digest(value)}"
