"""`chronicle status` with the lake's catalog unreachable: one line naming it (password masked), exit status 2."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


def test_status_says_the_catalog_is_unreachable(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CHRONICLE_CATALOG", f"ducklake:postgres:host=127.0.0.1 port={port} dbname=chronicle "
                                            "user=chronicle password=sekret")
    monkeypatch.setenv("CHRONICLE_DATA_PATH", str(tmp_path / "data"))
    result = CliRunner().invoke(app, ["status"])
    assert result.exit_code == 2, result.output
    assert "cannot read the pipeline database" in result.output and "Connection refused" in result.output
    assert "sekret" not in result.output and "Traceback" not in result.output
