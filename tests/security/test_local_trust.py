"""Local trust boundaries: under umask 000 every file and folder a run creates is its owner's only, and the warm
runner serves only its own uid (peer credentials), whatever the socket's mode."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import pytest

from tests.fakellm import FakeLLMServer
from tests.security.canaries import write_inputs

ROOT = Path(__file__).resolve().parents[2]


def _loose(root: Path) -> list[str]:
    return [f"{p} {stat.filemode(p.lstat().st_mode)}" for p in [root, *root.rglob("*")]
            if not p.is_symlink() and p.lstat().st_mode & 0o077]


def test_everything_a_run_creates_is_private_under_umask_000(
        tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from tests.security.canaries import use_distill_engine

    home = tmp_path / "fresh" / "home"  # created by Chronicle, not by the test
    monkeypatch.setenv("CHRONICLE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    use_distill_engine(monkeypatch, fake_llm, "offline", target_file="MEMORY.md")
    inputs = write_inputs(tmp_path / "in")
    old = os.umask(0)
    try:
        ingest_logs([str(inputs)])
        distill_memory(days=3, until=date(2026, 3, 2))
        backfill_weeks(project_id="all")
    finally:
        os.umask(old)
    assert (home / "chronicle.duckdb").exists() and (home / "workspace").is_dir() and (home / "lancedb").is_dir()
    assert _loose(home) == []


def _start_runner(state: Path) -> subprocess.Popen:
    env = {**os.environ, "PREFECT_HOME": str(state), "CHRONICLE_WARM_IDLE_S": "120"}
    old = os.umask(0)
    try:
        return subprocess.Popen([sys.executable, "-m", "chronicle.cli.warm", "k-test"], cwd=str(ROOT), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    finally:
        os.umask(old)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second local user")
def test_the_warm_runner_refuses_another_uid() -> None:
    # pytest's tmp folders are 0700: the second user could not even reach the socket. A folder it can reach:
    tmp_path = Path(tempfile.mkdtemp(prefix="chronicle-trust-"))
    proc = _start_runner(tmp_path)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # one line when it serves (the imports take a while on a busy machine)
        assert "ready" in ready, ready
        sock_path = tmp_path / "chronicle" / "warm.sock"
        assert stat.S_IMODE(sock_path.parent.stat().st_mode) == 0o700
        assert _loose(tmp_path / "chronicle") == []  # socket, state file, log: owner only under umask 000
        # Even if someone opens the folder and the socket to everybody, the peer check decides.
        os.chmod(tmp_path, 0o755)
        os.chmod(sock_path.parent, 0o755)
        os.chmod(sock_path, 0o777)
        pid = os.fork()
        if pid == 0:  # the second, unprivileged user
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.settimeout(60)
                conn.connect(str(sock_path))
                request = json.dumps({"key": "k-test", "argv": ["status"], "env": {}, "cwd": "/"}).encode()
                try:  # the runner may close the connection as soon as it sees the peer: refused before a byte
                    socket.send_fds(conn, [struct.pack("!I", len(request))], [0, 1, 2])
                    conn.sendall(request)
                    code = 0 if conn.recv(1) == b"" else 3  # closed unread: nothing ran
                except (BrokenPipeError, ConnectionResetError):
                    code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert "refused a connection from uid 65534" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(tmp_path, ignore_errors=True)
