"""SIGTERM and Ctrl-C stop any command within seconds — in its own process and in the warm runner's
child — even when its work is stuck (here: an LLM endpoint that accepts and never answers, with a 600 s
timeout). Before, the command caught SIGTERM and kept waiting for its task threads (`timeout 120 chronicle
backfill --all` still running eight minutes later). And a command that inherited SIGINT ignored (started with
`&` by a script: a shell without job control does that) did not stop on SIGINT at all."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.deployments.conftest import CHRONICLE, write_jsonl
from tests.lake.servers import with_sigint


@pytest.fixture()
def silent_llm() -> Iterator[tuple[str, threading.Event]]:
    """An endpoint that accepts connections, reads, and never answers; the event is set at the first request."""
    server = socket.create_server(("127.0.0.1", 0))
    asked = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                held.append(conn)
                conn.recv(65536)
                asked.set()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", asked
    server.close()
    for conn in held:
        conn.close()


@pytest.fixture()
def llm_limit_freed() -> Iterator[None]:
    """A killed run leaves its `llm` slots leased (300 s), as a kill does: free them for the session's next tests
    (the limit is made again, empty, by the next run that needs it)."""
    yield
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client, contextlib.suppress(Exception):
        client.delete_global_concurrency_limit_by_name("llm")


def _stop_within(proc: subprocess.Popen, sig: int, seconds: float) -> float:
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()
        pytest.fail(f"still running {seconds:.0f} s after {signal.Signals(sig).name}")
    return time.monotonic() - started


# The command's inherited SIGINT, set explicitly so that the test does not depend on how pytest itself was started:
# a terminal's foreground command has it at its default; a shell without job control (a script's `cmd &`, a CI
# step, a test run started with `&`) starts its background commands with SIGINT ignored, and Python keeps that.
@pytest.mark.slow
@pytest.mark.parametrize(("sig", "sigint"), [(signal.SIGTERM, "SIG_DFL"), (signal.SIGINT, "SIG_DFL"),
                                           (signal.SIGINT, "SIG_IGN")],
                         ids=["SIGTERM", "SIGINT", "SIGINT-inherited-ignored"])
def test_a_stuck_backfill_stops_within_seconds(sig: int, sigint: str, proc_env: dict[str, str], tmp_path: Path,
                                               silent_llm: tuple[str, threading.Event],
                                               llm_limit_freed: None) -> None:
    url, asked = silent_llm
    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    env = {**proc_env, "CHRONICLE_WARM": "0", "LLM_URL": url, "CHRONICLE_LLM_TIMEOUT_S": "600",
           "CHRONICLE_STOP_GRACE_S": "3"}
    assert subprocess.run([CHRONICLE, "ingest", str(tmp_path / "logs")], env=env, capture_output=True,
                          timeout=300).returncode == 0
    proc = subprocess.Popen(with_sigint([CHRONICLE, "backfill", "--project", "ALPHA"], sigint), env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert asked.wait(300), "the backfill never called the LLM"
        took = _stop_within(proc, sig, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert took < 30, took


@pytest.mark.slow
def test_the_warm_runners_child_stops_with_its_caller(tmp_path: Path, silent_llm: tuple[str, threading.Event]) -> None:
    """Through the warm runner: SIGTERM to the `chronicle` caller ends the child doing the work too."""
    url, asked = silent_llm
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "CHRONICLE_HOME": str(tmp_path / "home"),
            "CHRONICLE_WARM": "1", "CHRONICLE_WARM_IDLE_S": "300", "LLM_URL": url,
            "CHRONICLE_LLM_TIMEOUT_S": "600", "CHRONICLE_STOP_GRACE_S": "3"}
    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    try:
        assert subprocess.run([CHRONICLE, "ingest", str(tmp_path / "logs")], env=env, cwd=tmp_path,
                              capture_output=True, timeout=600).returncode == 0
        proc = subprocess.Popen([CHRONICLE, "backfill", "--project", "ALPHA"], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert asked.wait(300), "the backfill never called the LLM"
        runner = psutil.Process(int(__import__("json").loads(
            (tmp_path / "prefect" / "chronicle" / "warm.json").read_text())["pid"]))
        workers = [c for c in runner.children() if c.pid != proc.pid]
        assert workers, "no child of the warm runner runs the command"
        _stop_within(proc, signal.SIGTERM, 30)
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.wait(15)
            assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE, "the child kept working"
    finally:
        subprocess.run([CHRONICLE, "server", "stop"], env=env, cwd=tmp_path, capture_output=True, timeout=120)


# A process that stops on signals as a `chronicle` command does, with a handler for a signal that is not a stop
# request (as a library's SIGALRM timeout would be): that signal must not start the stop's grace.
_OTHER_SIGNAL = """
import signal, sys, threading, time
from chronicle.cli.launch import stop_on_signals
stop_on_signals()
seen = threading.Event()
signal.signal(signal.SIGUSR1, lambda *_: seen.set())
print("READY", flush=True)
seen.wait()
time.sleep(1.5)  # three times the grace: a stop would have ended the process by now
print("STILL HERE", flush=True)
sys.stdin.read()
"""


def test_a_signal_that_is_not_a_stop_request_does_not_end_the_command(proc_env: dict[str, str]) -> None:
    env = {**proc_env, "CHRONICLE_STOP_GRACE_S": "0.5"}
    with subprocess.Popen([sys.executable, "-c", _OTHER_SIGNAL], env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "READY"
        proc.send_signal(signal.SIGUSR1)
        assert proc.stdout.readline().strip() == "STILL HERE", f"ended with {proc.wait()}"
        proc.send_signal(signal.SIGTERM)  # a stop request: no Python handler here, so it ends the process itself
        assert proc.wait(timeout=30) == -signal.SIGTERM
