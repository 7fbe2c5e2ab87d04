"""Knowledge files a human saved in another encoding are left alone (issue 12.3), and temp files of a killed
write are cleaned up by the next writer (issue 13.6)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from chronicle.distill.knowledge import clean_workspace, sync_file
from chronicle.distill.sections import Item

GBK_SOUL = "# 灵魂\n\n说话温和、简洁。这段是人手写的。\n".encode("gbk")


def item(text: str, day: str = "2026-02-14") -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Item(f"{day}-{digest[:12]}", digest, text, day, f"{day}.md")


def test_a_gbk_file_is_left_byte_identical_with_a_clear_reason(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_bytes(GBK_SOUL)
    result = sync_file(tmp_path, "MEMORY.md", [item("会议改到周三")], keep=3)
    assert not result.changed and result.skipped and "not UTF-8" in result.skipped and "MEMORY.md" in result.skipped
    assert (tmp_path / "MEMORY.md").read_bytes() == GBK_SOUL
    assert sync_file(tmp_path, "USER.md", [item("喜欢喝美式")], keep=3).changed  # the others are still written


def test_stale_temp_files_of_a_killed_write_are_removed(tmp_path: Path) -> None:
    backups = tmp_path / ".backups"
    backups.mkdir()
    stale = [tmp_path / ".MEMORY.md.k2j3h4.tmp", tmp_path / ".USER.md.zz9.tmp",
             backups / ".MEMORY.md.20260101T000000000000Z.tmp"]
    keep = [tmp_path / "MEMORY.md", tmp_path / ".notes.tmp", tmp_path / "draft.tmp", backups / "MEMORY.md.20260101Z"]
    for path in stale + keep:
        path.write_text("x", encoding="utf-8")
    assert sorted(clean_workspace(tmp_path)) == sorted(p.name for p in stale)
    assert not any(p.exists() for p in stale) and all(p.exists() for p in keep)
    # The writer does it too, for the file it writes.
    (tmp_path / ".TOOLS.md.abc.tmp").write_text("half", encoding="utf-8")
    sync_file(tmp_path, "TOOLS.md", [item("port 8765")], keep=3)
    assert not (tmp_path / ".TOOLS.md.abc.tmp").exists()
    assert clean_workspace(tmp_path / "missing") == []
