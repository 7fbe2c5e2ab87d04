"""Which commands go to the warm runner, and what makes a runner stale (cli/launch.py)."""

from __future__ import annotations

import pytest

from chronicle.cli.launch import runner_key, wanted


@pytest.mark.parametrize(("argv", "how"), [
    (["ingest", "logs/"], "start"), (["backfill", "--all"], "start"), (["demo"], "start"),
    (["runs", "--format", "json"], "use"), (["report", "show", "-p", "X", "-w", "2026-W05"], "use"),
    (["serve"], None), (["server", "stop"], None), (["report", "edit", "-p", "X"], None), ([], None),
    (["--help"], None),
])
def test_which_commands_use_the_runner(argv: list[str], how: str | None) -> None:
    assert wanted(argv, {}) == how


def test_the_runner_can_be_turned_off_and_never_recurses() -> None:
    assert wanted(["ingest", "x"], {"CHRONICLE_WARM": "0"}) is None
    assert wanted(["ingest", "x"], {"CHRONICLE_WARM_CHILD": "1"}) is None


def test_the_key_follows_what_imports_read() -> None:
    base = {"HOME": "/root", "PREFECT_HOME": "/tmp/p"}
    assert runner_key(base) == runner_key({**base, "CHRONICLE_HOME": "/elsewhere", "LLM_URL": "http://x"})
    assert runner_key(base) != runner_key({**base, "PREFECT_API_URL": "http://127.0.0.1:4200/api"})
    assert runner_key(base) != runner_key({**base, "HF_HUB_OFFLINE": "0"})
    assert runner_key(base) == runner_key({**base, "PREFECT_LOGGING_LEVEL": "INFO"})  # the CLI's own default
