"""Daily-note parsing: one entry per bullet or paragraph, with heading paths."""

from __future__ import annotations

from pathlib import Path

from chronicle.ingest.detect import detect_format, note_date
from chronicle.ingest.notes import parse_note

NOTE = """# Session Log - 2026-02-14

## Tools

- Switched the embedding endpoint to Ollama
  because the old one timed out
- [x] Rotated the API key
    - nested detail

A paragraph that spans
two lines.

```
code block
```

| a | b |
|---|---|
| 1 | 2 |
---
### Deep
1. numbered item
"""


def test_blocks_and_heading_paths() -> None:
    blocks = parse_note(NOTE)
    texts = [b.text for b in blocks]
    assert texts[0] == "Switched the embedding endpoint to Ollama because the old one timed out"
    assert "Rotated the API key" in texts
    nested = next(b for b in blocks if b.text == "nested detail")
    assert nested.parent == "Rotated the API key"
    assert "A paragraph that spans\ntwo lines." in texts
    assert "code block" in texts
    assert any(t.startswith("| a | b |") for t in texts)
    deep = next(b for b in blocks if b.text == "numbered item")
    assert deep.heading_path == ["Session Log - 2026-02-14", "Tools", "Deep"]
    assert blocks[0].heading_path == ["Session Log - 2026-02-14", "Tools"]
    assert blocks[0].line_no == 5


def test_note_names(tmp_path: Path) -> None:
    assert note_date(Path("memory/2026-02-14.md")).isoformat() == "2026-02-14"
    assert note_date(Path("memory/2026-02-14-standup.md")).isoformat() == "2026-02-14"
    for name, fmt in [("2026-02-14.md", "note"), ("README.md", "unsupported"), ("x.jsonl", "jsonl"),
                      ("x.ndjson", "jsonl"), ("x.csv", "csv")]:
        p = tmp_path / name
        p.write_text("{}")
        assert detect_format(p) == fmt
