"""Flow parameters that name input are confined to the input roots: a run started through the API (by anyone who
can reach it) cannot read `/root/...` as the worker's user. Outside = a Failed run with one line; inside (the
home, the working directory, `source_paths`, CHRONICLE_INPUT_ROOTS) = ingested as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture
def only_default_roots(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHRONICLE_INPUT_ROOTS", "[]")
    return home


def _secret(folder: Path, ts: str = "2026-03-02T10:00:00") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "app.jsonl"
    path.write_text(json.dumps({"ts": ts, "project_id": "P", "actor": "a", "type": "message",
                                "content": "root-only canary Zebra-4471"}) + "\n", encoding="utf-8")
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize("how", ["outside", "symlink", "dotdot"])
def test_a_path_outside_the_roots_is_a_failed_run_with_one_line(
        only_default_roots: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, how: str) -> None:
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.param_checks import ParameterError
    from chronicle.services.run_history import list_runs
    from chronicle.settings import Settings

    secret = _secret(tmp_path_factory.mktemp("elsewhere") / "private")  # not under the home nor the cwd
    given = {"outside": secret, "symlink": tmp_path / "link.jsonl",
             "dotdot": Path(f"{tmp_path}/../{secret.parent.parent.name}/private/app.jsonl")}[how]
    if how == "symlink":
        given.symlink_to(secret)  # inside the cwd by name, outside once resolved
    if how == "dotdot":
        given = Path(os.path.relpath(secret, tmp_path))
    with pytest.raises(ParameterError, match="outside the input roots") as caught:
        ingest_logs([str(given)])
    assert "\n" not in str(caught.value) and "CHRONICLE_INPUT_ROOTS" in str(caught.value)
    [run] = [r for r in list_runs(Settings()) if r.flow_name == "ingest-logs"]
    assert run.state == "FAILED" and "outside the input roots" in (run.message or "")
    db = Settings().db_path
    assert not db.exists() or b"Zebra-4471" not in db.read_bytes()


def test_paths_inside_the_roots_are_ingested(only_default_roots: Path, tmp_path: Path,
                                             tmp_path_factory: pytest.TempPathFactory,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.ingest_logs import ingest_logs

    local = _secret(tmp_path / "logs")  # under the working directory
    assert ingest_logs([str(local)]).entries_added == 1
    # Another file (the same bytes would be the file already known, whatever its path).
    configured = _secret(tmp_path_factory.mktemp("configured") / "logs", ts="2026-03-03T10:00:00")
    monkeypatch.setenv("CHRONICLE_INPUT_ROOTS", json.dumps([str(configured.parent.parent)]))
    assert ingest_logs([str(configured)]).entries_added == 1
