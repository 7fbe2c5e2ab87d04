"""Knowledge files a human saved in another encoding are left alone; temp files of a killed
write are cleaned up by the next writer, and one project's notes can be distilled alone."""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path

from chronicle.distill.knowledge import clean_workspace, sync_file
from chronicle.distill.sections import Item
from chronicle.redaction.redactor import Redactor

GBK_SOUL = "# 灵魂\n\n说话温和、简洁。这段是人手写的。\n".encode("gbk")

GATE = Redactor.build()  # the knowledge-file sink's own gate, built-in rules


def item(text: str, day: str = "2026-02-14") -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Item(f"{day}-{digest[:12]}", digest, text, day, f"{day}.md")


def test_a_gbk_file_is_left_byte_identical_with_a_clear_reason(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_bytes(GBK_SOUL)
    result = sync_file(tmp_path, "MEMORY.md", [item("会议改到周三")], keep=3, redactor=GATE)
    assert not result.changed and result.skipped and "not UTF-8" in result.skipped and "MEMORY.md" in result.skipped
    assert (tmp_path / "MEMORY.md").read_bytes() == GBK_SOUL
    # the others are still written
    assert sync_file(tmp_path, "USER.md", [item("喜欢喝美式")], keep=3, redactor=GATE).changed


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
    sync_file(tmp_path, "TOOLS.md", [item("port 8765")], keep=3, redactor=GATE)
    assert not (tmp_path / ".TOOLS.md.abc.tmp").exists()
    assert clean_workspace(tmp_path / "missing") == []


def test_distill_with_a_gbk_knowledge_file_writes_the_others_and_exits_0(distill_env: Path, notes_dir: Path,
                                                                         fake_llm, monkeypatch) -> None:
    """A human's GBK AGENTS.md used to make every distill exit 1 (and USER.md was never written)."""
    from typer.testing import CliRunner

    from chronicle.cli.main import app
    from chronicle.settings import Settings
    from tests.distill.conftest import ingest

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    # AGENTS.md is behind approval by default; the setting that relaxes it lets runs write it.
    monkeypatch.setenv("CHRONICLE_PROTECTED_FILES", '["SOUL.md", "IDENTITY.md"]')
    ws = Settings().workspace_dir
    ws.mkdir(parents=True)
    gbk = "# 行为规则\n\n人手写：发邮件前先确认。\n".encode("gbk")
    (ws / "AGENTS.md").write_bytes(gbk)
    (ws / ".MEMORY.md.stale1.tmp").write_text("half a file from a killed write", encoding="utf-8")
    ingest(notes_dir)
    out = CliRunner().invoke(app, ["distill", "--days", "11", "--until", "2026-02-24"])
    assert out.exit_code == 0, out.output
    assert (ws / "AGENTS.md").read_bytes() == gbk
    assert "王老师习惯早上 7:30" in (ws / "USER.md").read_text(encoding="utf-8")
    text = " ".join(out.output.split())
    assert "AGENTS.md is not UTF-8" in text and "left unchanged" in text
    assert not (ws / ".MEMORY.md.stale1.tmp").exists()


def test_distill_of_one_project(distill_env: Path, tmp_path: Path, fake_llm, monkeypatch) -> None:
    """`--project P` distills only P's notes (flow parameter and CLI option)."""
    from typer.testing import CliRunner

    from chronicle.cli.main import app
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    for project, line in (("alpha", "Decided: alpha ships on Friday 2026-03-06 at 18:00"),
                          ("beta", "Decided: beta moves its weekly sync to Tuesday 10:00")):
        folder = tmp_path / project / "memory"
        folder.mkdir(parents=True)
        (folder / "2026-03-02.md").write_text(f"# 2026-03-02\n\n- {line}\n", encoding="utf-8")
        ingest_logs([str(folder.parent)], project)

    only_alpha = distill_memory(days=1, until=date(2026, 3, 2), project="alpha")
    contents = [m.content for m in MemoryStore(Settings()).list(limit=10)]
    assert only_alpha.project == "alpha" and only_alpha.tally.entries == 1 and len(contents) == 1
    assert "alpha ships" in contents[0]
    out = CliRunner().invoke(app, ["distill", "--days", "1", "--until", "2026-03-02", "--project", "beta"])
    assert out.exit_code == 0, out.output
    assert ": 1 entries" in " ".join(out.output.split())
    assert len(MemoryStore(Settings()).list(limit=10)) == 2
