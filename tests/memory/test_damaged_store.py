"""A damaged LanceDB folder — an unreadable newest manifest, a missing data file — makes `memory list`, `memory
search` and `distill` answer in one line with the repair, never a Python or Rust traceback."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.memory.model import Memory
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.settings import MINILM_EMBEDDING_MODEL


def _memories(store, n: int) -> None:
    for i in range(n):  # one commit each: several versions and data files
        m = Memory(content=f"CRC 张三 prefers morning visits, note {i}", summary=f"note {i}", importance=0.5,
                   target_file="MEMORY.md")
        store.upsert([redact_memory(m, Redactor.build())], created=datetime(2026, 3, 23, 9, i), flow_run_id=None)


def _run(args: list[str]):
    from chronicle.cli.main import app

    return CliRunner().invoke(app, args)


@pytest.fixture()
def damaged(store, settings, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_EMBEDDING_MODEL)
    monkeypatch.setenv("CHRONICLE_EMBEDDING_MODEL", MINILM_EMBEDDING_MODEL)
    _memories(store, 3)
    return Path(settings.lance_uri) / "memories.lance"


def _newest_manifest(folder: Path) -> Path:
    return min((folder / "_versions").glob("*.manifest"), key=lambda p: int(p.stem))


def _assert_one_line(result, *needles: str) -> None:
    text = result.output.strip()
    assert result.exit_code == 1, text
    assert "Traceback" not in text and "lance error" not in text and "rustc" not in text, text
    assert "damaged" in text and "Repair" in text and "chronicle memory reindex" in text
    for needle in needles:
        assert needle in text, text


def test_an_unreadable_manifest_is_one_line_and_the_previous_version_repairs_it(damaged: Path) -> None:
    newest = _newest_manifest(damaged)
    newest.write_bytes(b"\x00garbage")  # a commit cut short by a full disk
    for args in (["memory", "list"], ["memory", "search", "morning visits"], ["distill", "--days", "3"]):
        _assert_one_line(_run(args), "manifest", newest.name)
    newest.rename(damaged.parent / newest.name)  # the repair the line names
    result = _run(["memory", "list"])
    assert result.exit_code == 0, result.output
    assert "note 1" in result.output


def test_a_missing_data_file_is_one_line(damaged: Path) -> None:
    data = sorted((damaged / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime)
    data[0].unlink()
    for args in (["memory", "list"], ["memory", "search", "morning visits"], ["distill", "--days", "3"]):
        _assert_one_line(_run(args), data[0].name)
