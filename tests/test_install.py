"""The wheel keeps to its namespace: nothing but `chronicle` (and its dist-info) at the top of site-packages,
with every module of the layer folders inside it (the mapping is pyproject's package-dir)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "desk", "deployments", "flows", "tasks", "services", "storage")
pytestmark = pytest.mark.slow


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _source_copy(dest: Path) -> Path:
    """What a build reads, copied (a build writes build/ and *.egg-info beside the sources)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = {".git", ".venv", "tests", "bench", "build", ".chronicle"} if Path(folder) == REPO else set()
        return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}

    shutil.copytree(REPO, dest, ignore=ignore)
    return dest


def test_the_wheel_installs_only_chronicle_at_the_top(tmp_path: Path) -> None:
    # No PYTHONPATH: the checkout on it would look like an installed chronicle to pip.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    src = _source_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, timeout=600, env=env, cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("chronicle-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"chronicle/{layer}/{p.relative_to(REPO / layer).as_posix()}"
                for layer in LAYERS for p in (REPO / layer).rglob("*.py") if "__pycache__" not in p.parts}
    assert not expected - names, f"modules missing from the wheel (pyproject packages): {sorted(expected - names)}"
    assert any(n.startswith("chronicle/storage/migrations/") and n.endswith(".sql") for n in names)
    # The desk's pages and assets travel in the package (it works offline: no CDN).
    assert {"chronicle/desk/templates/week.html", "chronicle/desk/static/desk.css",
            "chronicle/desk/static/desk.js"} <= names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300, env=env)
    before = {p.name for p in _site_packages(venv).iterdir()}
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300, env=env, cwd=tmp_path)
    added = {p.name for p in _site_packages(venv).iterdir()} - before
    assert {n for n in added if not n.endswith(".dist-info")} == {"chronicle"}, sorted(added)
    entry = (next(_site_packages(venv).glob("chronicle-*.dist-info")) / "entry_points.txt").read_text()
    assert "chronicle = chronicle.cli.main:app" in entry
