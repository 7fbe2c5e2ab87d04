"""LoCoMo conversations written as an assistant's daily notes (`memory/YYYY-MM-DD.md`), one bullet per turn.

The knowledge files were measured on conversations conv-26 and conv-30 (788 turns over 38 days) written
this way; the tests use the same layout: a file per session date, a heading per session, and each turn as
`- Speaker: text` (a shared photo's caption appended as `[shares a photo of …]`). `note_file_entries` reads any
daily note back as the distiller's entries.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path

from chronicle.distill.chunks import NoteEntry
from chronicle.ingest.notes import parse_note

LOCOMO = Path(__file__).parents[1] / "data" / "locomo" / "locomo10.json"
_SESSION = re.compile(r"session_(\d+)$")


def session_time(text: str) -> datetime:
    """LoCoMo session stamps look like "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.replace(",", "").strip(), "%I:%M %p on %d %B %Y")


def write_locomo_notes(out: Path, sample_ids: tuple[str, ...] = ("conv-26", "conv-30")) -> int:
    """Write the conversations' sessions under `out/memory/`; returns the number of turns written."""
    samples = {s["sample_id"]: s for s in json.loads(LOCOMO.read_text(encoding="utf-8"))}
    days: dict[str, list[str]] = {}
    turns = 0
    for sample_id in sample_ids:
        conv = samples[sample_id]["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
        for n in numbers:
            when = session_time(conv[f"session_{n}_date_time"])
            lines = [f"## {sample_id} session {n} ({when:%H:%M})", ""]
            for turn in conv[f"session_{n}"]:
                caption = f" [shares a photo of {turn['blip_caption']}]" if turn.get("blip_caption") else ""
                lines.append(f"- {turn['speaker']}: {' '.join(turn['text'].split())}{caption}")
                turns += 1
            days.setdefault(when.date().isoformat(), []).extend([*lines, ""])
    folder = out / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for day, lines in days.items():
        (folder / f"{day}.md").write_text(f"# {day}\n\n" + "\n".join(lines), encoding="utf-8")
    return turns


def note_file_entries(path: Path, project_id: str = "assistant") -> list[NoteEntry]:
    """The entries of one daily note file (`YYYY-MM-DD.md`) as the distiller reads them, dated by its name."""
    day = date.fromisoformat(path.stem[:10])
    return [NoteEntry(f"{path.name}:{b.line_no}", project_id, day, str(path), b.line_no, b.kind, b.text,
                      tuple(b.heading_path), b.parent) for b in parse_note(path.read_text(encoding="utf-8"))]
