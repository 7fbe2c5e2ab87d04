"""Every operator mistake gets one clear answer and a non-zero status — never a traceback, never a
silent success. The cases are `tests/ops/mistakes.py`; docs/mistakes.md is rendered from them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.cli.main import app
from tests.deployments.conftest import write_jsonl
from tests.ops.mistakes import MISTAKES, Mistake

runner = CliRunner()


@pytest.fixture(scope="module")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One home with project ALPHA ingested and its weeks reported (offline engine), shared by the cases."""
    root = tmp_path_factory.mktemp("mistakes")
    write_jsonl(root / "logs" / "a.jsonl", "ALPHA", 40, "a")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHRONICLE_HOME", str(root / "home"))
        mp.chdir(root)
        assert runner.invoke(app, ["ingest", str(root / "logs")]).exit_code == 0
        done = runner.invoke(app, ["backfill", "--project", "ALPHA"])
        assert done.exit_code == 0, done.output
    yield root / "home"


@pytest.fixture()
def case_home(built_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(built_home, home)
    monkeypatch.setenv("CHRONICLE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.mark.parametrize("case", MISTAKES, ids=lambda c: c.command[:60])
def test_mistake_gets_its_answer(case: Mistake, case_home: Path, tmp_path: Path) -> None:
    for name, data in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "fix.md").write_text("a corrected report\n", encoding="utf-8")
    args = [a.replace("{tmp}", str(tmp_path)) for a in case.args]
    env = {k: v.replace("{tmp}", str(tmp_path)) for k, v in case.env.items()}
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, args, env=env)
    out = result.output
    assert result.exit_code == case.code, out
    assert case.answer in " ".join(out.split()), out
    assert "Traceback" not in out and not (result.exception and not isinstance(result.exception, SystemExit)), out
    if case.one_line:
        assert len(out.strip().splitlines()) == 1, out
    if "CHRONICLE_HOME" in case.env:
        assert sorted(p.name for p in tmp_path.iterdir()) == before, "a read command created a home"


def test_the_mistakes_page_is_current() -> None:
    from scripts.mistakes import PAGE, render

    assert PAGE.read_text(encoding="utf-8") == render(), "run `python -m scripts.mistakes --write`"
