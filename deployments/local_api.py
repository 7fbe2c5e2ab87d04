"""Which Prefect API a command talks to: the configured one, or a local server Chronicle starts once in the
background and every later command reuses (so its runs also appear in the UI at once).

Precedence, first match wins:

1. `PREFECT_API_URL` — from the environment, the active Prefect profile (`prefect config set`), or a test
   harness's temporary setting. It must answer; if it does not, the command says so and exits non-zero.
   Chronicle never starts a server when one is configured (tests and CI configure theirs).
2. `CHRONICLE_PREFECT_SERVER=ephemeral` — Prefect's own throw-away server inside each command (slow start).
3. Otherwise Chronicle's background server: found through its state file, checked (pid alive, `/health`
   answers), else started (port 4200 when free, another free port if not) — under a file lock, so two
   commands starting at once start one server.

Files, all under `$PREFECT_HOME/chronicle/` (`~/.prefect/chronicle/` by default; the server's database is
Prefect's usual `$PREFECT_HOME/prefect.db`): `server.json` (pid, url, start time), `server.log`, `server.lock`.
`chronicle server status|start|stop` show and manage it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
from filelock import FileLock

DEFAULT_PORT = 4200
LEASE_STORAGE = "prefect.server.concurrency.lease_storage.filesystem"
START_TIMEOUT_S = 180.0


class ApiUnavailable(RuntimeError):
    """No Prefect API can be reached; the message says which one and what to do."""


@dataclass(frozen=True)
class ServerState:
    """What `server.json` holds about the background server."""

    pid: int
    url: str
    started: float
    """The process's start time (epoch s): a pid reused by another process is not our server."""
    prefect_home: str

    @property
    def ui(self) -> str:
        return self.url.removesuffix("/api")


@dataclass(frozen=True)
class Api:
    """The API a command uses: its URL (None = Prefect's ephemeral server) and where that choice came from."""

    url: str | None
    source: str  # configured | background | ephemeral


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_dir() -> Path:
    return prefect_home() / "chronicle"


def _state_file() -> Path:
    return state_dir() / "server.json"


def log_file() -> Path:
    return state_dir() / "server.log"


def configured_url() -> str | None:
    """PREFECT_API_URL as Prefect resolves it (environment, profile, temporary settings), or None."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def read_state() -> ServerState | None:
    try:
        return ServerState(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _alive(state: ServerState) -> bool:
    try:
        proc = psutil.Process(state.pid)
        return proc.status() != psutil.STATUS_ZOMBIE and abs(proc.create_time() - state.started) < 1.0
    except psutil.Error:
        return False


def running() -> ServerState | None:
    """The background server, if its process lives and its API answers."""
    state = read_state()
    return state if state and _alive(state) and healthy(state.url) else None


def _free_port(preferred: int | None = DEFAULT_PORT) -> int:
    if preferred:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", preferred))
                return preferred
            except OSError:
                pass
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listens(pid: int, port: int) -> bool:
    """Whether the server started as `pid` (or a process it started) is the one listening on `port`."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return False
    for proc in tree:
        with contextlib.suppress(psutil.Error):
            if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in proc.net_connections("tcp")):
                return True
    return False


def _log_tail(lines: int = 15) -> str:
    try:
        return "\n".join(log_file().read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start(timeout: float = START_TIMEOUT_S) -> ServerState:
    """Start the background server (detached: it outlives this command) and wait until its API answers.

    A port seen free can be taken before the server binds it — by another home's background server starting
    at the same moment, both having seen 4200 free. An answer on the port proves nothing then: the server
    counts as started only when its own process listens there; if it lost the port, it is started again on
    another free one."""
    state_dir().mkdir(parents=True, exist_ok=True)
    try:
        return _start_on(_free_port(), timeout)
    except _PortTaken:
        return _start_on(_free_port(preferred=None), timeout)


class _PortTaken(Exception):
    """Another process took the port between the probe and the server's bind."""


def _start_on(port: int, timeout: float) -> ServerState:
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Concurrency leases on disk (under PREFECT_HOME), not in the server's memory: a server killed while runs hold
    # `llm` slots finds their leases again when it restarts, and its repossessor frees the expired ones. In
    # memory they were lost and the slots stayed taken for ever.
    env.setdefault("PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE", LEASE_STORAGE)
    env["PREFECT_UI_API_URL"] = url
    with log_file().open("ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                 "--port", str(port)], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, close_fds=True)
    state = ServerState(proc.pid, url, psutil.Process(proc.pid).create_time(), str(prefect_home()))
    _state_file().write_text(json.dumps(asdict(state)))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answers = healthy(url, timeout=1.0)
        if answers and _listens(proc.pid, port):
            return state
        if answers:  # another process has the port: ours can never bind it
            stop()
            raise _PortTaken(port)
        if proc.poll() is not None:
            raise ApiUnavailable(f"the local Prefect server exited with status {proc.returncode} while starting; "
                                 f"its log ({log_file()}) ends with:\n{_log_tail()}")
        time.sleep(0.2)
    stop()
    raise ApiUnavailable(f"the local Prefect server did not answer within {timeout:.0f}s; see {log_file()}")


def ensure(start_timeout: float = START_TIMEOUT_S) -> Api:
    """The API this command should use (module docstring), starting the background server if needed."""
    url = configured_url()
    if url and os.environ.get("CHRONICLE_PREFECT_API_SOURCE") == "background":
        # Set by the warm runner (cli/launch.py) from the background server's state; recheck it like any other.
        state = running()
        if state and state.url == url:
            return Api(url, "background")
    elif url:
        if healthy(url) or healthy(url, timeout=10.0):  # a second, patient try: a busy machine answers late
            return Api(url, "configured")
        raise ApiUnavailable(f"the Prefect API at {url} (PREFECT_API_URL) does not answer; start that server, "
                             "or unset PREFECT_API_URL to let Chronicle run its own local one")
    if os.environ.get("CHRONICLE_PREFECT_SERVER", "").lower() == "ephemeral":
        return Api(None, "ephemeral")
    if state := running():
        return Api(state.url, "background")
    state_dir().mkdir(parents=True, exist_ok=True)
    with FileLock(str(state_dir() / "server.lock"), timeout=start_timeout + 30):
        state = read_state()
        if state is not None and _alive(state):
            # One server per home: a live server slow to answer (a busy machine, a long migration) is waited
            # for, never replaced by a second one on the same database, beyond `chronicle server stop`.
            if not _answers_within(state.url, start_timeout):
                raise ApiUnavailable(f"the background Prefect server (pid {state.pid}, {state.url}) is running but "
                                     f"did not answer within {start_timeout:.0f}s; see {log_file()}, or stop it "
                                     "with `chronicle server stop`")
        else:
            state = start(start_timeout)
    return Api(state.url, "background")


def _answers_within(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if healthy(url, timeout=max(1.0, min(10.0, left))):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def stop(timeout: float = 30.0) -> ServerState | None:
    """Stop the background server (its whole process group) and forget it; the stopped state, or None."""
    state = read_state()
    if state is not None and _alive(state):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(state.pid, signal.SIGTERM)
        try:
            psutil.Process(state.pid).wait(timeout)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            os.killpg(state.pid, signal.SIGKILL)
    _state_file().unlink(missing_ok=True)
    return state


WATCH_EVERY_S = 2.0
STOP_GRACE_S = 15.0


def watch(url: str, then: str, *, until: threading.Event | None = None) -> threading.Event:
    """End this process (a `chronicle serve`, a flow command) when the background server at `url` is gone:
    stopped, killed or replaced. Served against a dead address, deployments turn "Not Ready", runs go Late with
    nobody to raise an alert, and Prefect's own shutdown (Ctrl-C) hangs on the dead API; a flow command retries
    its state updates for minutes, or talks to whichever server takes the port next. The process is told why
    (`then`: what happens now), interrupted like Ctrl-C, and ended outright (exit 1) if that has not stopped it
    `STOP_GRACE_S` later. The event returned is set once the server is found gone, so a command that Prefect did
    stop in time still exits as a failure. Setting `until` ends the watch (the command finished)."""
    gone, until = threading.Event(), until or threading.Event()

    def loop() -> None:
        while not until.wait(WATCH_EVERY_S):
            state = read_state()
            if state is not None and state.url == url and _alive(state):
                continue
            gone.set()
            sys.stderr.write(f"the background Prefect server at {url} is gone (stopped or killed): {then}\n")
            sys.stderr.flush()
            # What Prefect logs from now on is about the dead address (its failed calls, with tracebacks): the
            # line above says why, once.
            logging.getLogger("prefect").setLevel(logging.CRITICAL + 1)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(STOP_GRACE_S)
            os._exit(1)

    threading.Thread(target=loop, name="chronicle-server-watch", daemon=True).start()
    return gone
