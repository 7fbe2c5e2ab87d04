"""Paths cannot escape the workspace: not through settings, a `targetFile` with `..`, or symlinks (and hard
links) planted inside the workspace."""

from __future__ import annotations

import hashlib
import os
from datetime import date
from pathlib import Path

import pytest

from chronicle.distill.knowledge import UnsafePathError, sync_file
from chronicle.distill.sections import Item
from chronicle.redaction.redactor import Redactor
from tests.fakellm import FakeLLMServer
from tests.security.canaries import write_inputs

UNTIL = date(2026, 3, 2)
VICTIM = b"outside the workspace: must never change\n"


def _item(text: str = "a distilled fact") -> Item:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Item(f"2026-03-02-{digest[:12]}", digest, text, "2026-03-02", "2026-03-02.md")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def spaces(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, an outside folder holding a victim file)."""
    ws, out = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "victim.md").write_bytes(VICTIM)
    return ws, out


@pytest.mark.parametrize("name", ["../x.md", "../outside/victim.md", "/etc/passwd", "/tmp/x.md", "memory/USER.md",
                                  "SOUL.md/..", "./MEMORY.md", "MEMORY.md\x00", "..", "", "NOTES.md"])
def test_only_the_six_names_are_writable(spaces: tuple[Path, Path], name: str) -> None:
    ws, out = spaces
    passwd = Path("/etc/passwd").read_bytes()
    with pytest.raises(UnsafePathError):
        sync_file(ws, name, [_item()], keep=2, redactor=Redactor.build())
    assert _tree(out) == {"victim.md": VICTIM} and _tree(ws) == {}
    assert not (ws.parent / "x.md").exists() and not Path("/tmp/x.md").exists()
    assert Path("/etc/passwd").read_bytes() == passwd


def test_symlinked_knowledge_file_pointing_outside_is_refused(spaces: tuple[Path, Path]) -> None:
    ws, out = spaces
    (ws / "MEMORY.md").symlink_to(out / "victim.md")
    (ws / "USER.md").symlink_to(Path("..") / "outside" / "victim.md")  # relative link, same escape
    for name in ("MEMORY.md", "USER.md"):
        with pytest.raises(UnsafePathError, match="outside the workspace"):
            sync_file(ws, name, [_item()], keep=2, redactor=Redactor.build())
    assert _tree(out) == {"victim.md": VICTIM}
    assert not (ws / ".backups").exists()


def test_symlinked_backup_folder_pointing_outside_is_refused(spaces: tuple[Path, Path]) -> None:
    ws, out = spaces
    (ws / "MEMORY.md").write_text("# MEMORY\n\nby hand\n", encoding="utf-8")  # so a backup is due
    (ws / ".backups").symlink_to(out, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="outside the workspace"):
        sync_file(ws, "MEMORY.md", [_item()], keep=2, redactor=Redactor.build())
    assert _tree(out) == {"victim.md": VICTIM}
    assert (ws / "MEMORY.md").read_text(encoding="utf-8") == "# MEMORY\n\nby hand\n"


def test_symlinked_lock_file_is_not_followed(spaces: tuple[Path, Path]) -> None:
    ws, out = spaces
    (ws / ".chronicle-knowledge.lock").symlink_to(out / "victim.md")  # opening it O_TRUNC would empty the victim
    with pytest.raises(OSError):
        sync_file(ws, "MEMORY.md", [_item()], keep=2, redactor=Redactor.build())
    assert _tree(out) == {"victim.md": VICTIM}


def test_hard_linked_knowledge_file_is_replaced_not_written_through(spaces: tuple[Path, Path]) -> None:
    ws, out = spaces
    os.link(out / "victim.md", ws / "MEMORY.md")
    result = sync_file(ws, "MEMORY.md", [_item()], keep=2, redactor=Redactor.build())
    assert result.changed and b"a distilled fact" in (ws / "MEMORY.md").read_bytes()
    assert (out / "victim.md").read_bytes() == VICTIM  # the write replaced the link; the outside inode is intact
    assert (ws / ".backups").exists() and _tree(out) == {"victim.md": VICTIM}


def test_workspace_setting_decides_where_files_go_and_nothing_lands_elsewhere(
        home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings

    elsewhere = tmp_path / "elsewhere"
    # A configured workspace with `..` in it resolves once, and every write stays inside what it resolves to.
    monkeypatch.setenv("CHRONICLE_WORKSPACE", str(home / ".." / "elsewhere" / "ws"))
    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    assert Settings().workspace_dir == (elsewhere / "ws").resolve()
    inputs = write_inputs(tmp_path / "in")
    before = _tree(tmp_path)
    ingest_logs([str(inputs)])
    summary = distill_memory(days=3, until=UNTIL)

    assert summary.tally.memories > 3
    changed = {k for k, v in _tree(tmp_path).items() if before.get(k) != v}
    assert {k for k in changed if not k.startswith("home/")} == {
        f"elsewhere/ws/{name}" for name in summary.tally.files} | {"elsewhere/ws/.chronicle-knowledge.lock"}
    assert not (home / "workspace").exists()


def test_flow_refuses_a_symlink_out_of_the_workspace(
        home: Path, tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: a distillation meeting a planted symlink fails loudly instead of writing through it, and a
    rerun after the link is removed completes (nothing was recorded as done)."""
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.settings import Settings

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    ws = Settings().workspace_dir
    ws.mkdir(parents=True)
    victim = tmp_path / "victim.md"
    victim.write_bytes(VICTIM)
    (ws / "USER.md").symlink_to(victim)
    ingest_logs([str(write_inputs(tmp_path / "in"))])

    with pytest.raises(UnsafePathError, match=r"USER\.md resolves outside the workspace"):
        distill_memory(days=3, until=UNTIL)
    assert victim.read_bytes() == VICTIM
    (ws / "USER.md").unlink()
    summary = distill_memory(days=3, until=UNTIL)
    assert summary.tally.cached == 0 and summary.tally.files["USER.md"]["changed"]
    assert victim.read_bytes() == VICTIM
