"""`chronicle serve` and a flow command running against the background Prefect server end when that server is
stopped, saying why, instead of serving a dead address (deployments "Not Ready", runs Late with no alert, a Ctrl-C
that hangs) or retrying a run's state updates for minutes against it (or another home's server on its port)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.deployments.conftest import CHRONICLE
from tests.fakellm import FakeLLMServer
from tests.fakellm.replies import default_responder


def _lines(stream, into: queue.Queue) -> None:  # type: ignore[no-untyped-def]
    for line in stream:
        into.put(line)


@pytest.mark.slow
def test_serve_and_a_running_flow_stop_with_a_reason_when_the_background_server_is_stopped(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "CHRONICLE_HOME": str(tmp_path / "home"),
            "CHRONICLE_WARM": "0", "LLM_URL": fake_llm.base_url, "CHRONICLE_LLM_MAX_ATTEMPTS": "1"}
    asked, answer = threading.Event(), threading.Event()

    def held(request: dict) -> str:  # type: ignore[type-arg]
        asked.set()
        answer.wait(300)
        return default_responder(request)

    fake_llm.responder = held
    log = tmp_path / "logs" / "ops.jsonl"
    log.parent.mkdir()
    log.write_text(json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00+08:00", "type": "message",
                               "content": "visit"}) + "\n")
    serve = backfill = None
    try:
        started = subprocess.run([CHRONICLE, "server", "start"], env=env, capture_output=True, text=True,
                                 timeout=400)
        assert started.returncode == 0, started.stderr
        ingested = subprocess.run([CHRONICLE, "ingest", str(log)], env=env, capture_output=True, text=True,
                                  timeout=400)
        assert ingested.returncode == 0, ingested.stderr
        backfill = subprocess.Popen([CHRONICLE, "backfill", "-p", "P"], env=env, cwd=tmp_path,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
        assert asked.wait(300), "the backfill never asked the model"  # the run is in flight, waiting on it
        stopped = subprocess.run([CHRONICLE, "server", "stop"], env=env, capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert serve.wait(120) != 0
        while not out.empty():
            seen.append(out.get())
        said = "".join(seen)
        assert "background Prefect server" in said and "is gone" in said and "serving stops" in said, said
        # The backfill, its model call still unanswered, ends within the watch's grace, saying why in one line.
        ran, _ = backfill.communicate(timeout=120)
        assert backfill.returncode != 0 and "is gone" in ran and "the run stops" in ran, ran
        assert "Traceback" not in ran, ran
    finally:
        answer.set()
        for proc in (serve, backfill):
            if proc is not None and proc.poll() is None:
                proc.kill()
        subprocess.run([CHRONICLE, "server", "stop"], env=env, capture_output=True, timeout=120)
