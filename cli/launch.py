"""Commands that start fast: the `chronicle` command hands its arguments to a warm process and only waits.

Importing Prefect, the flows and their libraries costs a `chronicle` process 2–3 s of CPU (far more on a busy
machine) before it does any work. So the first flow command starts a *warm runner* in the background: one
process that has imported all that once and then, for every command, forks a child that runs the command
exactly as `chronicle` would — same arguments, environment, working directory, and the caller's own
terminal (its stdin/stdout/stderr are passed over a Unix socket), so progress bars, colours, pipes and exit
codes are unchanged. The caller relays Ctrl-C to the child and exits with the child's status; if the caller
is killed, the child is killed too.

When it is not used: `CHRONICLE_WARM=0` (the test suite sets it), a non-Linux system, `chronicle serve` and
`chronicle server ...` (long-running or managing the runner itself), `chronicle report edit` (it opens an
editor), or whenever the runner cannot be reached — the command then runs in its own process as before.
Only flow commands (ingest, backfill, weekly, distill, demo) start a runner; others use one that is running.

The runner is keyed by the code (file times of the packages), the interpreter and the environment Prefect and
the model libraries read at import: a change to any of them starts a new runner, and the old one exits. It
exits by itself after `CHRONICLE_WARM_IDLE_S` (1800) seconds without a command; `chronicle server stop` stops
it. Its files: `$PREFECT_HOME/chronicle/warm.json`, `warm.sock`, `warm.log`.

This module imports only the standard library: it runs before anything else in every `chronicle` command.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

FLOW_COMMANDS = {"ingest", "backfill", "weekly", "distill", "demo"}
NEVER = {"serve", "server"}
KEY_ENV_PREFIXES = ("PREFECT_", "HF_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_", "PYTHON")
# What the CLI sets for itself (cli.common); the runner must import Prefect under the same values.
CLI_DEFAULTS = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
PACKAGES = ("chronicle", "cli", "services", "flows", "tasks", "storage", "deployments")
ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180.0
CHILD_ENV = "CHRONICLE_WARM_CHILD"


def state_dir() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser() / "chronicle"


def _files() -> tuple[Path, Path, Path]:
    d = state_dir()
    return d / "warm.json", d / "warm.sock", d / "warm.log"


# --- which commands -------------------------------------------------------------------------------------------


def _command(argv: list[str]) -> list[str]:
    """The command words (`["report", "edit"]`), skipping options."""
    return [a for a in argv if not a.startswith("-")][:2]


def wanted(argv: list[str], env: dict[str, str]) -> str | None:
    """`start` (use the runner, starting it if needed), `use` (only if one runs) or None (run in-process)."""
    if env.get("CHRONICLE_WARM", "1").lower() in ("0", "false", "no", "off") or env.get(CHILD_ENV):
        return None
    if not sys.platform.startswith("linux"):
        return None
    words = _command(argv)
    if not words or words[0] in NEVER or words[:2] == ["report", "edit"]:
        return None
    return "start" if words[0] in FLOW_COMMANDS else "use"


# --- identity -------------------------------------------------------------------------------------------------


def _code_version() -> list[tuple[str, int, int]]:
    out = []
    for package in PACKAGES:
        for folder, _, names in os.walk(ROOT / package):
            for name in names:
                if name.endswith((".py", ".sql")):
                    path = os.path.join(folder, name)
                    st = os.stat(path)
                    out.append((path, st.st_mtime_ns, st.st_size))
    return sorted(out)


def runner_env(env: dict[str, str]) -> dict[str, str]:
    return {**CLI_DEFAULTS, **env}


def runner_key(env: dict[str, str]) -> str:
    """What the runner's imports depend on: code, interpreter, and the environment read at import time."""
    relevant = sorted((k, v) for k, v in runner_env(env).items() if k.startswith(KEY_ENV_PREFIXES))
    home = Path(env.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    profiles = Path(env.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    try:
        profile_stamp = profiles.stat().st_mtime_ns
    except OSError:
        profile_stamp = 0
    blob = json.dumps([sys.executable, str(ROOT), _code_version(), relevant, str(profiles), profile_stamp])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- the caller -----------------------------------------------------------------------------------------------


def _read_state() -> dict[str, Any] | None:
    try:
        return json.loads(_files()[0].read_text())
    except (OSError, ValueError):
        return None


def _connect(sock_path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(sock_path))
        return conn
    except OSError:
        conn.close()
        return None


def _stop_pid(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)


def _start_runner(key: str, env: dict[str, str]) -> subprocess.Popen:
    state, _, log = _files()
    state.parent.mkdir(parents=True, exist_ok=True)
    old = _read_state()
    if old and old.get("key") != key:
        _stop_pid(int(old.get("pid", 0)))
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "cli.launch", "--serve", key], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=runner_env(env), start_new_session=True,
                                close_fds=True, cwd=str(ROOT))


def _runner(key: str, env: dict[str, str], start: bool) -> socket.socket | None:
    """A connection to a runner with this key, starting one (and waiting for it) when `start`."""
    state, sock_path, _ = _files()
    current = _read_state()
    if current and current.get("key") == key and (conn := _connect(sock_path)):
        return conn
    if not start:
        return None
    lock_path = state.parent / "warm.lock"
    state.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as lock:
        import fcntl

        fcntl.flock(lock, fcntl.LOCK_EX)  # two commands starting at once start one runner
        current = _read_state()
        if not (current and current.get("key") == key and _connect_ok(sock_path)):
            proc = _start_runner(key, env)
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                current = _read_state()
                if current and current.get("pid") == proc.pid and current.get("ready") and _connect_ok(sock_path):
                    break
                if proc.poll() is not None:  # it could not start (see warm.log): run in-process
                    return None
                time.sleep(0.05)
            else:
                return None
    return _connect(sock_path)


def _connect_ok(sock_path: Path) -> bool:
    conn = _connect(sock_path)
    if conn is None:
        return False
    conn.close()
    return True


def _lines(conn: socket.socket):
    buf = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)


def run_warm(argv: list[str], start: bool) -> int | None:
    """Run `chronicle argv` in the warm runner; its exit status, or None when it could not be used."""
    env = dict(os.environ)
    key = runner_key(env)
    try:
        conn = _runner(key, env, start)
    except OSError:
        return None
    if conn is None:
        return None
    request = json.dumps({"key": key, "argv": ["chronicle", *argv], "env": env, "cwd": os.getcwd()}).encode()
    try:
        socket.send_fds(conn, [struct.pack("!I", len(request))], [0, 1, 2])
        conn.sendall(request)
    except OSError:
        conn.close()
        return None
    child = 0

    def relay(signum: int, _frame: Any) -> None:
        if child:
            with contextlib.suppress(OSError):
                os.kill(child, signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, relay)
    try:
        for message in _lines(conn):
            if "error" in message:  # a runner of other code (a stale key): it exits; run in-process
                return None
            if "pid" in message:
                child = int(message["pid"])
            if "exit" in message:
                return int(message["exit"])
    except OSError:
        pass
    finally:
        conn.close()
    if child == 0:
        return None  # never started: run in-process
    sys.stderr.write("chronicle: the command's process ended without an exit status (killed?)\n")
    return 1


def delegate_if_console_script() -> None:
    """Called first thing by `cli.main` when the `chronicle` script imports it: hand the command to the warm
    runner and exit with its status. Returns (and the command runs in this process) when it is not used."""
    main = sys.modules.get("__main__")
    script = os.path.basename(getattr(main, "__file__", "") or "")
    if script != "chronicle" or os.path.basename(sys.argv[0]) != "chronicle":
        return
    how = wanted(sys.argv[1:], dict(os.environ))
    if how is None:
        return
    code = run_warm(sys.argv[1:], start=how == "start")
    if code is not None:
        sys.stdout.flush()
        os._exit(code)  # nothing of ours to flush or tear down: this process only waited


# --- the runner -----------------------------------------------------------------------------------------------

WARM_IMPORTS = (
    # Not the distill flow: LanceDB starts a background thread at import, and a forked child would inherit
    # its objects without the thread. Nothing here may start a thread (checked after the imports).
    "prefect", "prefect.flows", "prefect.tasks", "prefect.artifacts", "prefect.client.orchestration",
    "prefect.task_runners", "prefect.states", "prefect.settings", "prefect.logging.configuration",
    "flows.ingest_logs", "flows.backfill_weeks", "flows.weekly_chronicle", "flows.summarize_week",
    "services.validate", "services.run_history", "deployments.local_api", "typer", "click", "rich.console",
    "rich.table", "rich.progress", "rich.markup", "pydantic_settings", "duckdb", "psutil", "filelock",
)


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("caller went away")
        data += chunk
    return data


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _child(conn: socket.socket, server: socket.socket, fds: list[int], request: dict[str, Any],
           no_api_configured: bool) -> None:
    """In the forked child: become the caller's `chronicle` process, run the command, report its status."""
    os.setsid()
    server.close()
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(runner_env(request["env"]))  # the CLI's own defaults too, as cli.common would set them
    os.environ[CHILD_ENV] = "1"
    os.chdir(request["cwd"])
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  line_buffering=os.isatty(1), write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    sys.argv = list(request["argv"])
    finished = threading.Event()

    def watch() -> None:  # the caller died (kill -9): so does the command, as it would have
        with contextlib.suppress(OSError):
            while conn.recv(1):
                pass
        if not finished.is_set():
            os.killpg(0, signal.SIGKILL)

    _send(conn, {"pid": os.getpid()})
    threading.Thread(target=watch, daemon=True).start()
    from prefect.context import refresh_global_settings_context
    from prefect.logging.configuration import setup_logging

    if no_api_configured:  # point Prefect at the background server now: one settings build, not two
        from deployments import local_api

        if state := local_api.running():
            os.environ["PREFECT_API_URL"] = state.url
            os.environ["CHRONICLE_PREFECT_API_SOURCE"] = "background"
    refresh_global_settings_context()  # Prefect also reads `.env` / `prefect.toml` of the working directory
    setup_logging(incremental=False)  # Prefect's console handler on this caller's stderr (colours if a terminal)
    code = 0
    try:
        from cli.main import app

        app(args=sys.argv[1:], prog_name="chronicle")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    finished.set()
    # Let the caller go now; Prefect's shutdown (flushing events to the API) goes on here, silently.
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    with contextlib.suppress(OSError):
        _send(conn, {"exit": code})
    conn.close()
    # What interpreter shutdown would do (this stack must never unwind into the runner's loop).
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]  # join non-daemon threads
    import atexit

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    os._exit(code)


def _reap(_signum: int, _frame: Any) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def serve(key: str) -> None:
    """The runner's main loop: warm imports once, then one forked child per command, until idle."""
    state, sock_path, _ = _files()
    me = {"pid": os.getpid(), "key": key, "started": time.time(), "socket": str(sock_path)}
    state.write_text(json.dumps(me))
    sys.path.insert(0, str(ROOT))
    import importlib

    started = time.monotonic()
    for name in WARM_IMPORTS:
        importlib.import_module(name)
    from deployments.local_api import configured_url

    no_api_configured = configured_url() is None  # as every child will see it: same environment (the key)
    if threading.active_count() != 1:
        names = [t.name for t in threading.enumerate()]
        state.write_text(json.dumps(me | {"failed": f"threads after imports: {names}"}))
        print(f"not serving: imports started threads {names}", flush=True)
        return
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(32)
    signal.signal(signal.SIGCHLD, _reap)
    idle_s = float(os.environ.get("CHRONICLE_WARM_IDLE_S", "1800"))
    server.settimeout(idle_s)
    state.write_text(json.dumps(me | {"ready": True, "warmup_s": round(time.monotonic() - started, 2)}))
    print(f"warm runner {key} ready in {time.monotonic() - started:.1f}s (pid {os.getpid()})", flush=True)
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                print("idle: exiting", flush=True)
                return
            except InterruptedError:
                continue
            try:
                conn.settimeout(30)
                head, fds, _, _ = socket.recv_fds(conn, 4, 3)
                request = json.loads(_recv_exact(conn, struct.unpack("!I", head)[0]))
                conn.settimeout(None)
            except (OSError, ValueError, struct.error):
                conn.close()
                continue
            if request.get("key") != key or len(fds) != 3:
                _send(conn, {"error": "stale runner"})
                for fd in fds:
                    os.close(fd)
                conn.close()
                if request.get("key") != key:
                    print("a newer runner is wanted: exiting", flush=True)
                    return
                continue
            if os.fork() == 0:
                try:
                    _child(conn, server, fds, request, no_api_configured)
                finally:
                    os._exit(1)  # never back into the runner's loop
            for fd in fds:
                os.close(fd)
            conn.close()
    finally:
        if _read_state() and _read_state().get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                sock_path.unlink()
            state.unlink(missing_ok=True)


def stop() -> dict[str, Any] | None:
    """Stop the warm runner, if one runs (`chronicle server stop`)."""
    current = _read_state()
    if not current:
        return None
    _stop_pid(int(current.get("pid", 0)))
    _files()[0].unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        _files()[1].unlink()
    return current


def status() -> dict[str, Any] | None:
    current = _read_state()
    if current and _connect_ok(_files()[1]):
        return current
    return None


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serve(sys.argv[2])
