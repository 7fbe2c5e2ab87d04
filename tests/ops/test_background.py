"""Commands start fast and never die of Prefect's start-up: Chronicle's background Prefect server
and the warm command runner, found, reused and stopped; a configured API always wins; one clear line when
no API answers. Real processes, a real Prefect server in a private PREFECT_HOME, the real `chronicle` command."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.deployments.conftest import CHRONICLE, write_jsonl
from tests.holder import DuckDBHolder

NOISE = ("Traceback", "CancelledError", "Error flushing")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return {**env, "PREFECT_HOME": str(tmp_path / "prefect"), "CHRONICLE_HOME": str(tmp_path / "home"),
            "CHRONICLE_WARM": "1", "CHRONICLE_WARM_IDLE_S": "300"}


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHRONICLE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def _state(tmp_path: Path, name: str) -> dict:
    return json.loads((tmp_path / "prefect" / "chronicle" / name).read_text())


def _gone(pid: int, timeout: float = 60) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout)
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
def test_background_server_and_warm_runner_are_started_once_reused_and_stopped(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for i in range(3):
        write_jsonl(tmp_path / f"f{i}.jsonl", "P", 50, f"f{i}")
    try:
        first = _run(env, tmp_path, "ingest", str(tmp_path / "f0.jsonl"))
        assert first.returncode == 0, first.stderr
        assert "entries added: 50" in first.stdout and not any(n in first.stderr for n in NOISE), first.stderr
        server, runner = _state(tmp_path, "server.json"), _state(tmp_path, "warm.json")
        assert psutil.pid_exists(server["pid"]) and psutil.pid_exists(runner["pid"])

        second = _run(env, tmp_path, "ingest", str(tmp_path / "f1.jsonl"))
        assert second.returncode == 0 and "entries added: 50" in second.stdout, second.stderr
        assert not any(n in second.stderr for n in NOISE), second.stderr
        assert (_state(tmp_path, "server.json")["pid"], _state(tmp_path, "warm.json")["pid"]) == (
            server["pid"], runner["pid"])  # reused, not started again

        listed = _run(env, tmp_path, "runs", "--format", "json")  # stdout is data only, through the runner
        assert listed.returncode == 0, listed.stderr
        assert [r["state"] for r in json.loads(listed.stdout)] == ["COMPLETED", "COMPLETED"]
        refused = _run(env, tmp_path, "backfill", "--project", "NOPE")  # exit status and stderr come through
        assert refused.returncode == 2 and "unknown project 'NOPE'; known projects: P" in refused.stderr
        assert refused.stdout == "" and "Traceback" not in refused.stderr

        # The runs are in the server's UI at once (it is the API the commands used).
        import urllib.request

        body = json.dumps({"limit": 10}).encode()
        req = urllib.request.Request(f"{server['url']}/flow_runs/filter", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            names = sorted(r["name"] for r in json.loads(resp.read()))
        assert names == ["ingest-all-f0.jsonl", "ingest-all-f1.jsonl"], names

        # The caller killed with -9 takes its command with it; Ctrl-C reaches the command.
        db = tmp_path / "home" / "chronicle.duckdb"
        for how in (signal.SIGKILL, signal.SIGINT):
            with DuckDBHolder(db) as holder:  # keeps the command waiting inside its flow
                proc = subprocess.Popen([CHRONICLE, "ingest", str(tmp_path / "f2.jsonl")], env=env, cwd=tmp_path,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                assert proc.stderr is not None
                for line in proc.stderr:
                    if "is held by" in line:
                        break
                children = psutil.Process(runner["pid"]).children()
                assert len(children) == 1, children  # the forked child running this command
                proc.send_signal(how)
                if how == signal.SIGINT:
                    holder.release()  # the interrupted run records how it ended: it needs the file for that
                proc.wait(timeout=120)
                assert _gone(children[0].pid), f"the command outlived its caller ({how.name})"
            if how == signal.SIGINT:
                assert proc.returncode != 0
        # The run killed with its caller died waiting to record its start: no row. The interrupted one says so.
        listed = json.loads(_run(env, tmp_path, "runs", "--format", "json").stdout)
        assert next((r["state"], r["message"]) for r in listed) == (
            "CRASHED", "Execution was aborted by an interrupt signal."), listed
        assert sorted(r["state"] for r in listed) == ["COMPLETED", "COMPLETED", "CRASHED"], listed

        status = _run(env, tmp_path, "server", "status")
        assert f"pid {server['pid']}" in status.stdout and f"pid {runner['pid']}" in status.stdout, status.stdout
    finally:
        stopped = _run(env, tmp_path, "server", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert _gone(server["pid"]) and _gone(runner["pid"])
    assert not (tmp_path / "prefect" / "chronicle" / "server.json").exists()
    assert "not running" in _run(env, tmp_path, "server", "status").stdout


def test_a_configured_api_wins_and_an_unreachable_one_is_one_line(tmp_path: Path, api_url: str) -> None:
    env = {**_env(tmp_path), "CHRONICLE_WARM": "0"}
    write_jsonl(tmp_path / "a.jsonl", "P", 5, "a")
    done = _run({**env, "PREFECT_API_URL": api_url}, tmp_path, "ingest", str(tmp_path / "a.jsonl"))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "prefect" / "chronicle" / "server.json").exists()  # no background server started

    started = time.monotonic()
    down = _run({**env, "PREFECT_API_URL": "http://127.0.0.1:9/api"}, tmp_path, "ingest", str(tmp_path / "a.jsonl"))
    assert down.returncode == 1, down.stderr
    assert down.stderr.strip().splitlines() == [
        "the Prefect API at http://127.0.0.1:9/api (PREFECT_API_URL) does not answer; start that server, or unset "
        "PREFECT_API_URL to let Chronicle run its own local one"], down.stderr
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_two_homes_starting_their_servers_at_once_get_one_each(tmp_path: Path) -> None:
    """Two homes' background servers started at the same moment both see port 4200 free; the one that loses the
    bind must not take the other's server (an answer on the port) for its own: each home ends with its own."""
    homes = [tmp_path / "one", tmp_path / "two"]
    envs = [{**_env(home), "CHRONICLE_WARM": "0"} for home in homes]
    try:
        procs = [subprocess.Popen([CHRONICLE, "server", "start"], env=env, cwd=home.parent, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for env, home in zip(envs, homes, strict=True)]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        states = [_state(home, "server.json") for home in homes]
        assert states[0]["url"] != states[1]["url"], states
        for state in states:
            port = int(state["url"].rsplit(":", 1)[1].split("/")[0])
            tree = [psutil.Process(state["pid"]), *psutil.Process(state["pid"]).children(recursive=True)]
            assert any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
                       for p in tree for c in p.net_connections("tcp")), f"{state} does not serve its own url"
    finally:
        for env, home in zip(envs, homes, strict=True):
            _run(env, home.parent, "server", "stop")
