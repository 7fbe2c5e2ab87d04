"""docs/deploy.md's commands as scripts/deploy_doc.py reads them (the slow test runs them)."""

from __future__ import annotations

from pathlib import Path

from scripts.deploy_doc import _strip_comment, commands, script


def test_commands_are_read_in_order_without_comments() -> None:
    cmds = [c.text for c in commands()]
    assert cmds.index("chronicle setup") < cmds.index("chronicle serve")
    assert "prefect deploy --all" in cmds
    assert not any(c.startswith("#") or c.endswith("\\") for c in cmds)
    assert any(c.startswith("prefect worker start") and "--name" in c for c in cmds)


def test_comment_stripping_keeps_quoted_hashes() -> None:
    assert _strip_comment("chronicle setup   # comment").strip() == "chronicle setup"
    assert _strip_comment("echo '#x' \"a # b\" $(echo '#')").strip() == "echo '#x' \"a # b\" $(echo '#')"


def test_only_local_sections_by_default(tmp_path: Path) -> None:
    text = script(commands(), tmp_path)
    assert "chronicle runs --prefect" in text and "sudo" not in text and "pg.internal" not in text
    assert "setsid chronicle serve" in text and "\nprefect server start --host 127.0.0.1 --port 4300" not in text
