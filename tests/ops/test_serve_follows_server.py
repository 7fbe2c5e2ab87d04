"""`chronicle serve` against the background Prefect server ends when that server is stopped, saying why, instead
of serving a dead address (deployments "Not Ready", runs Late with no alert, a Ctrl-C that hangs)."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.deployments.conftest import CHRONICLE


def _lines(stream, into: queue.Queue) -> None:  # type: ignore[no-untyped-def]
    for line in stream:
        into.put(line)


@pytest.mark.slow
def test_serve_stops_with_a_reason_when_the_background_server_is_stopped(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "CHRONICLE_HOME": str(tmp_path / "home"),
            "CHRONICLE_WARM": "0"}
    serve = None
    try:
        started = subprocess.run([CHRONICLE, "server", "start"], env=env, capture_output=True, text=True,
                                 timeout=400)
        assert started.returncode == 0, started.stderr
        serve = subprocess.Popen([CHRONICLE, "serve"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        out: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_lines, args=(serve.stdout, out), daemon=True).start()
        seen: list[str] = []
        deadline = time.monotonic() + 300
        while not any("being served" in line for line in seen):  # Prefect's own line once it polls
            assert time.monotonic() < deadline and serve.poll() is None, "".join(seen)
            with contextlib.suppress(queue.Empty):
                seen.append(out.get(timeout=1))
        stopped = subprocess.run([CHRONICLE, "server", "stop"], env=env, capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert serve.wait(120) != 0
        while not out.empty():
            seen.append(out.get())
        said = "".join(seen)
        assert "background Prefect server" in said and "is gone" in said and "serving stops" in said, said
    finally:
        if serve is not None and serve.poll() is None:
            serve.kill()
        subprocess.run([CHRONICLE, "server", "stop"], env=env, capture_output=True, timeout=120)
