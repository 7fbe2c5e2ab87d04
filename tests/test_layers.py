"""The test layers: tests/unit needs no Prefect, no database, no subprocess; the quick layer is
most of the suite; the Prefect server starts only for tests that ask for it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What a unit test of the pure core may not reach: the layers above it, the servers and other processes.
NOT_IN_UNIT = ("prefect", "duckdb", "lancedb", "subprocess", "flows", "tasks", "deployments", "services", "storage",
               "chronicle.flows", "chronicle.tasks", "chronicle.deployments", "chronicle.services",
               "chronicle.storage", "tests.deployments", "tests.lake", "tests.reliability")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_unit_tests_import_nothing_above_the_core() -> None:
    bad = {}
    for path in sorted((REPO / "tests" / "unit").rglob("*.py")):
        hits = sorted(n for n in _imports(path) if n.startswith(NOT_IN_UNIT) and n.split(".")[0] != "cli"
                      and any(n == p or n.startswith(p + ".") for p in NOT_IN_UNIT))
        if hits:
            bad[str(path.relative_to(REPO))] = hits
    assert bad == {}


def _pytest(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_no_prefect_server_for_the_unit_tests() -> None:
    """`prefect_api` (the session server, ~13 s to start) is opt-in: the unit tests' plan has no such fixture,
    a flow test's has — by its folder (tests/conftest.py RUN_FLOWS), whatever its own fixtures."""
    assert "prefect_api" not in _pytest("--setup-plan", "-q", "tests/unit/test_weeks.py")
    plan = _pytest("--setup-plan", "-q", "tests/weekly/test_thinking_model.py", "tests/security/test_sql_params.py")
    tests = [line for line in plan.splitlines() if line.strip().startswith("tests/")]
    assert tests and all("prefect_api" in line for line in tests), plan[-3000:]


def _collected(*args: str) -> tuple[set[str], int]:
    """The test ids a collection selects, and how many it collected before `-m` deselected any."""
    out = _pytest("--collect-only", "-q", *args)
    found = re.search(r"(?:(\d+)/)?(\d+) tests? collected", out)
    assert found, out[-3000:]
    return {line for line in out.splitlines() if "::" in line}, int(found.group(2))


@pytest.mark.slow  # two collections of the whole suite
def test_the_quick_layer_is_most_of_the_suite_and_skipping_files_loses_none_of_it() -> None:
    """The quick layer leaves the files it would deselect whole uncollected (tests/conftest.py
    `pytest_ignore_collect`): it must still be exactly the tests that are neither slow nor flows. The collection of
    those skips no file, so it also counts the whole suite: the quick layer is the rest when the two share no test
    and together make that count."""
    others, everything = _collected("-m", "slow or flows")
    quick, _ = _collected("-m", "not slow and not flows")
    assert not quick & others and len(quick) + len(others) == everything, (len(quick), len(others), everything)
    assert len(quick) >= 0.6 * everything, (len(quick), everything)
