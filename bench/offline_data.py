"""A real dataset nobody here wrote, for the offline weekly bench: Debian package changelogs as log lines.

Every `/usr/share/doc/*/changelog.Debian.gz` of this machine is a dated record of uploads, written by
hundreds of maintainers over decades. Each upload becomes one JSONL log line of project `debian`:

- `ts`: the upload's trailer date (`Mon, 02 Jan 2023 13:06:21 +0100`, with its offset);
- `actor`: the maintainer as written, `Name <e-mail>` (the e-mail is what the redactor must hide);
- `content`: `package (version): change; change; …` (the bullets, whitespace folded, at most 600 chars);
- `type`, by a fixed rule so that every focus of the weekly engine is exercised: a CVE or security fix
  → `ae`; `urgency=high|critical|emergency` → `sae`; a non-maintainer upload → `deviation`; a new
  upstream release → `enrollment`; a team upload → `decision`; anything else → `message`.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

DOCS = Path("/usr/share/doc")
_HEAD = re.compile(r"^(\S+) \(([^)]+)\) [^;]*;(.*)$")
_TRAILER = re.compile(r"^ -- (.+?)  (\S.*)$")
_URGENT = re.compile(r"urgency\s*=\s*(high|critical|emergency)", re.I)


def _kind(head_rest: str, text: str) -> str:
    low = text.lower()
    if "cve-" in low or "security" in low:
        return "ae"
    if _URGENT.search(head_rest):
        return "sae"
    if "non-maintainer upload" in low:
        return "deviation"
    if "new upstream" in low:
        return "enrollment"
    if "team upload" in low:
        return "decision"
    return "message"


def uploads(path: Path) -> Iterator[dict]:
    """The uploads of one changelog as log records (unparseable blocks are skipped: this is a bench input)."""
    try:
        lines = gzip.decompress(path.read_bytes()).decode("utf-8", "replace").splitlines()
    except (OSError, EOFError):
        return
    head: re.Match[str] | None = None
    bullets: list[str] = []
    for line in lines:
        if m := _HEAD.match(line):
            head, bullets = m, []
        elif (m := _TRAILER.match(line)) and head:
            try:
                when = parsedate_to_datetime(m.group(2).strip())
            except (TypeError, ValueError):
                head = None
                continue
            if when.tzinfo is None:
                head = None
                continue
            body = " ".join(" ".join(bullets).split())
            content = f"{head.group(1)} ({head.group(2)}): {body}"[:600]
            yield {"project_id": "debian", "ts": when.isoformat(), "actor": m.group(1).strip(),
                   "type": _kind(head.group(3), body), "content": content, "package": head.group(1)}
            head = None
        elif head and line.strip():
            bullets.append(line.strip().lstrip("*-+ ").strip())


def write_jsonl(out: Path, start: datetime, end: datetime) -> tuple[int, int]:
    """Uploads dated in [start, end) into `out`, in time order; returns (lines, changelog files read)."""
    files = sorted(DOCS.glob("*/changelog.Debian.gz"))
    records = [r for f in files for r in uploads(f)
               if start <= datetime.fromisoformat(r["ts"]).replace(tzinfo=None) < end]
    records.sort(key=lambda r: (datetime.fromisoformat(r["ts"]), r["package"], r["content"]))
    with out.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(records), len(files)
