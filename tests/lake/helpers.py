"""Helpers for the lake tests: child processes that start together, and the two topologies' settings."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def child_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A child's environment: its own working folder (CHRONICLE_HOME), this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONICLE_")}
    env.update({"CHRONICLE_HOME": str(home), "PYTHONUNBUFFERED": "1", "PREFECT_LOGGING_LEVEL": "WARNING",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    env.update(extra or {})
    return env


def start_together(script: str, args_per_child: list[list[str]], envs: list[dict[str, str]], go: Path,
                   cwd: Path, stdin: bool = False) -> list[subprocess.Popen]:
    """Start one child per argument list; each prints READY, then waits for the file `go` (no sleeps in the
    test: the race starts when every child is ready, on an event). With `stdin`, each child's stdin is a pipe
    that `finish` closes (a child that reads it to the end lives until then)."""
    procs = [subprocess.Popen([sys.executable, "-c", script, str(go), *args], env=env, cwd=cwd,
                              stdin=subprocess.PIPE if stdin else None,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args, env in zip(args_per_child, envs, strict=True)]
    for p in procs:
        assert p.stdout is not None
        line = p.stdout.readline()
        if line.strip() != "READY":
            p.wait()
            raise AssertionError(f"child did not start: {line!r} {p.stderr.read() if p.stderr else ''}")
    go.write_text("go")
    return procs


# Prepended to child scripts: wait for the go-file, polling (the children wait, not the test). A script can
# wait for another file of the test's with `wait_for(path)`.
WAIT_FOR_GO = """
import sys, time
from pathlib import Path
def wait_for(path):
    while not Path(path).exists():
        time.sleep(0.002)
print("READY", flush=True)
wait_for(sys.argv[1])
"""


def finish(procs: list[subprocess.Popen], timeout: float = 300) -> list[str]:
    outs = []
    deadline = time.monotonic() + timeout
    for p in procs:
        out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert p.returncode == 0, f"child failed ({p.returncode}): {err[-3000:]}"
        outs.append(out)
    return outs


def settings_for(home: Path, env: dict[str, str]):
    """Settings of this process for a topology's variables (CHRONICLE_X -> field x; AWS_* are aliases)."""
    from chronicle.settings import Settings

    kwargs = {(k.removeprefix("CHRONICLE_").lower() if k.startswith("CHRONICLE_") else k): v for k, v in env.items()}
    settings = Settings(home=home, **kwargs)
    assert settings.lake.enabled == ("CHRONICLE_CATALOG" in env)
    return settings
