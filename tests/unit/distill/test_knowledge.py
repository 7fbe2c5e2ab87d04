"""Knowledge files: managed sections, idempotence, overwrite rules, backups, atomic writes, path safety."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from chronicle.distill.knowledge import UnsafePathError, effective_action, safe_path, sync_file
from chronicle.distill.sections import Item, apply
from chronicle.redaction.redactor import Redactor

HUMAN = "# USER\n\nHand-written: prefers tea.\n"
T0 = datetime(2026, 2, 24, 12, 0, tzinfo=UTC)

GATE = Redactor.build()  # the knowledge-file sink's own gate, built-in rules


def item(text: str, day: str = "2026-02-14", action: str = "append", merged: bool = False, h: str = "") -> Item:
    digest = (h or hashlib.sha256(text.encode()).hexdigest()).ljust(16, "0")
    return Item(f"{day}-{digest[:12]}", digest, text, day, f"{day}.md", action, merged)  # type: ignore[arg-type]


def test_append_creates_dated_section_and_is_idempotent() -> None:
    a, b = item("likes tables"), item("no pushes after 22:30")
    text, stats = apply(HUMAN, [a, b])
    assert text.startswith(HUMAN) and stats.added == 2
    assert "<!-- chronicle:begin 2026-02-14 source=2026-02-14.md -->" in text
    assert "## 🧠 Distilled 2026-02-14 (from 2026-02-14.md)" in text
    assert text.index("likes tables") < text.index("no pushes") < text.index("<!-- chronicle:end -->")
    again, stats2 = apply(text, [a, b])
    assert again == text and stats2.present == 2 and stats2.added == 0
    # A later day gets its own section; the same day later appends into its existing one.
    text3, _ = apply(text, [item("later day", "2026-02-15"), item("same day more")])
    assert text3.count("chronicle:begin") == 2
    first_section = text3.split("<!-- chronicle:end -->")[0]
    assert "same day more" in first_section


def test_merged_memory_is_not_duplicated_when_its_row_is_present() -> None:
    base, _ = apply("", [item("original phrasing", h="aaaa")])
    row_id = "2026-02-14-aaaa00000000"
    near_dup = Item(row_id, "bbbb".ljust(16, "0"), "reworded phrasing", "2026-02-14", "2026-02-14.md", merged=True)
    assert apply(base, [near_dup])[0] == base
    assert "reworded" in apply("", [near_dup])[0]  # row missing from the file (a run stopped early): written


def test_overwrite_replaces_only_managed_sections_and_keeps_crlf_human_text() -> None:
    human = "# USER\r\n\r\nHand-written, CRLF.\r\n"
    text, _ = apply(human, [item("old fact"), item("another old", "2026-02-15")])
    text += "Human line added after our sections.\r\n"
    new, stats = apply(text, [item("fresh fact", "2026-02-20", action="overwrite")])
    assert new.startswith(human) and "Human line added after our sections.\r\n" in new
    assert "old fact" not in new and "another old" not in new and "fresh fact" in new
    assert stats.overwritten_sections == 2
    assert "\n" not in new.replace("\r\n", "")
    # Same-note memories before the overwrite stay: it supersedes older notes, not its own note.
    same_day, _ = apply("", [item("sibling", "2026-02-20"), item("fresh fact", "2026-02-20", action="overwrite")])
    assert "sibling" in same_day and "fresh fact" in same_day


def test_markers_in_memory_text_are_neutralised() -> None:
    evil = item("x --> <!-- chronicle:end --> <!-- chronicle:begin 1999-01-01 source=evil -->\nsecond line")
    text, _ = apply("", [evil])
    assert text.count("<!-- chronicle:end -->") == 1 and text.count("<!-- chronicle:begin") == 1
    assert "second line" in text.splitlines()[3]


def test_effective_action_downgrades_disallowed_overwrites() -> None:
    allowed = ["MEMORY.md", "USER.md", "AGENTS.md", "TOOLS.md"]
    assert effective_action("overwrite", "SOUL.md", allowed) == ("append", True)
    assert effective_action("overwrite", "IDENTITY.md", allowed) == ("append", True)
    assert effective_action("overwrite", "USER.md", allowed) == ("overwrite", False)
    assert effective_action("append", "SOUL.md", allowed) == ("append", False)


def test_sync_file_backs_up_on_change_only_and_rotates(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    first = sync_file(ws, "USER.md", [item("one")], keep=2, redactor=GATE, now=T0)
    assert first.changed and first.backup is None  # a new file has nothing to back up
    assert oct((ws / "USER.md").stat().st_mode & 0o777) == "0o600"  # a new knowledge file is its owner's only
    unchanged = sync_file(ws, "USER.md", [item("one")], keep=2, redactor=GATE, now=T0 + timedelta(seconds=1))
    assert not unchanged.changed and not (ws / ".backups").exists()
    for n in range(3):
        before = (ws / "USER.md").read_bytes()
        result = sync_file(ws, "USER.md", [item(f"new {n}")], keep=2, redactor=GATE, now=T0 + timedelta(minutes=n + 1))
        assert result.backup is not None and result.backup.read_bytes() == before
    backups = sorted(p.name for p in (ws / ".backups").iterdir())
    assert backups == ["USER.md.20260224T120200000000Z", "USER.md.20260224T120300000000Z"]
    assert not [p for p in ws.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name", ["../x.md", "/etc/passwd", "memory/USER.md", "NOTES.md", "USER.md/.."])
def test_unsafe_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafePathError):
        safe_path(tmp_path, name)


def test_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.md"
    ws.mkdir()
    outside.write_text("not yours\n")
    os.symlink(outside, ws / "TOOLS.md")
    with pytest.raises(UnsafePathError):
        sync_file(ws, "TOOLS.md", [item("x")], keep=3, redactor=GATE)
    assert outside.read_text() == "not yours\n"
