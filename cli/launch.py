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
This module is the caller's side; the runner is `cli/warm.py`.

The runner is keyed by the code (file times of the packages), the interpreter and the environment Prefect and
the model libraries read at import: a change to any of them starts a new runner, and the old one exits. It
exits by itself after `CHRONICLE_WARM_IDLE_S` (1800) seconds without a command; `chronicle server stop` stops
it. Its files: `$PREFECT_HOME/chronicle/warm.json`, `warm.sock`, `warm.log`.

This module imports only the standard library: it runs before anything else in every `chronicle` command.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FLOW_COMMANDS = {"ingest", "backfill", "weekly", "distill", "demo"}
NEVER = {"serve", "server"}
KEY_ENV_PREFIXES = ("PREFECT_", "HF_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_", "PYTHON")
# What the CLI sets for itself (chronicle.cli.common sets them); the runner imports Prefect under the same values.
# Runs log at INFO so a run started from a terminal has its one-line summary on its page in the Prefect UI, as a
# deployment's run has; the terminal shows warnings only (it prints its own summary).
CLI_DEFAULTS = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "INFO",
                "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
PACKAGES = ("chronicle", "cli", "services", "flows", "tasks", "storage", "deployments")
ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180.0
CHILD_ENV = "CHRONICLE_WARM_CHILD"


def stop_grace_s(env: dict[str, str] | None = None) -> float:
    """Seconds a stopped command gets to end by itself before it is ended like a kill (CHRONICLE_STOP_GRACE_S)."""
    try:
        return max(0.0, float((env or os.environ).get("CHRONICLE_STOP_GRACE_S", "5")))
    except ValueError:
        return 5.0


def _hang_up(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # the terminal closed: stop as Ctrl-C would (within the grace, see stop_on_signals)


def stop_on_signals() -> None:
    """Make SIGTERM, SIGINT (Ctrl-C) and SIGHUP end this command within seconds, whatever it is doing.

    Python runs signal handlers in the main thread, and during a flow run Prefect's own SIGTERM handler raises
    there; the main thread then waits for the task threads to finish their work (a backfill's thousands of
    weeks, an LLM call with a 60 s timeout and retries) before the process can end — observed: still running
    eight minutes after `timeout 120`. So every signal that reaches a Python handler (ours, Prefect's, Ctrl-C's
    KeyboardInterrupt) is also written by the interpreter to a wakeup socket that a thread of ours reads: the
    handler runs as before (the run is marked as it would be), and `stop_grace_s()` later — or at a second
    signal — the process ends at once with 128 + the signal's number, leaving what a kill leaves (the run's row
    is reaped as CRASHED by the next reader: the same liveness rule). A signal with no Python handler (SIGTERM
    outside a flow run) ends the process by itself. No signal mask is touched, so processes the command starts
    (the background Prefect server) keep their own signals. Called first thing in a `chronicle` process that
    runs a command (and in a warm runner's child); never in a test process, whose Ctrl-C stays pytest's.

    An inherited *ignored* SIGINT or SIGTERM is undone: a shell without job control (a script, `ssh host 'cmd &'`,
    a CI step) starts its background commands with SIGINT ignored, Python keeps it ignored, and a SIGINT then
    did nothing at all — no handler, so no byte for the thread either (a test run started with `&`: a stuck
    backfill still running 30 s after SIGINT). Through the warm runner the caller relays SIGINT and SIGTERM
    whatever it inherited, so a command stops on them either way. An ignored SIGHUP (`nohup`) is kept.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    grace = stop_grace_s()
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C's own handler, as Python installs it
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    if signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGHUP, _hang_up)

    # The wakeup socket carries every signal that has a Python handler (a SIGALRM of a library's timeout, too):
    # only these are requests to stop.
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}

    def next_stop() -> int | None:
        while byte := reader.recv(1):
            if byte[0] in stops:
                return byte[0]
        return None  # the socket closed: the process is ending

    def wait() -> None:
        first = next_stop()
        if first is None:
            return
        timer = threading.Timer(grace, os._exit, args=(128 + first,))
        timer.daemon = True
        timer.start()
        second = next_stop()
        if second is not None:
            os._exit(128 + second)

    stop_on_signals.keep = (reader, writer)  # type: ignore[attr-defined]  # the sockets live as long as the process
    threading.Thread(target=wait, name="chronicle-stop", daemon=True).start()


def state_dir() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser() / "chronicle"


def private_state_dir() -> Path:
    """The runner's folder, created (or narrowed) to 0700 whatever the umask: it holds its socket and key (and the
    process's umask is narrowed too: the runner's log and state files are created next)."""
    from chronicle.private import private_umask

    private_umask()
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # not ours to change (a shared PREFECT_HOME owned by someone else)
        os.chmod(d, 0o700)
    return d


def runner_files() -> tuple[Path, Path, Path]:
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


def read_runner_state() -> dict[str, Any] | None:
    try:
        return json.loads(runner_files()[0].read_text())
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
    _, _, log = runner_files()
    private_state_dir()
    old = read_runner_state()
    if old and old.get("key") != key:
        _stop_pid(int(old.get("pid", 0)))
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "chronicle.cli.warm", key], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=runner_env(env), start_new_session=True,
                                close_fds=True, cwd=str(ROOT))


def _runner(key: str, env: dict[str, str], start: bool) -> socket.socket | None:
    """A connection to a runner with this key, starting one (and waiting for it) when `start`."""
    state, sock_path, _ = runner_files()
    current = read_runner_state()
    if current and current.get("key") == key and (conn := _connect(sock_path)):
        return conn
    if not start:
        return None
    lock_path = state.parent / "warm.lock"
    private_state_dir()
    with open(lock_path, "a") as lock:
        import fcntl

        fcntl.flock(lock, fcntl.LOCK_EX)  # two commands starting at once start one runner
        current = read_runner_state()
        if not (current and current.get("key") == key and _connect_ok(sock_path)):
            proc = _start_runner(key, env)
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                current = read_runner_state()
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
    if conn is None or not _send_request(conn, key, argv, env):
        return None
    relay = _SignalRelay()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, relay.relay)
    try:
        for message in _lines(conn):
            if "error" in message:  # a runner of other code (a stale key): it exits; run in-process
                return None
            if "pid" in message:
                relay.child_started(int(message["pid"]))
            if "exit" in message:
                return int(message["exit"])
    except OSError:
        pass
    finally:
        conn.close()
    if relay.child == 0 and not relay.stopped:
        return None  # never started: run in-process
    if relay.stopped:
        return 128 + relay.stopped[0]
    sys.stderr.write("chronicle: the command's process ended without an exit status (killed?)\n")
    return 1


def _send_request(conn: socket.socket, key: str, argv: list[str], env: dict[str, str]) -> bool:
    """The command, its environment and working directory, with this process's stdin/stdout/stderr; False (the
    connection closed) when the runner cannot be reached."""
    request = json.dumps({"key": key, "argv": ["chronicle", *argv], "env": env, "cwd": os.getcwd()}).encode()
    try:
        socket.send_fds(conn, [struct.pack("!I", len(request))], [0, 1, 2])
        conn.sendall(request)
    except OSError:
        conn.close()
        return False
    return True


class _SignalRelay:
    """Passes this caller's SIGINT/SIGTERM/SIGHUP on to the command's process in the runner (its pid once known)."""

    def __init__(self) -> None:
        self.child = 0
        self.stopped: list[int] = []

    def relay(self, signum: int, _frame: Any) -> None:
        self.stopped.append(signum)
        if self.child:
            with contextlib.suppress(OSError):
                os.kill(self.child, signum)
        if len(self.stopped) == 1:
            # The child ends itself within its grace (stop_on_signals); should it not (stuck in the kernel),
            # it and everything it started are killed, and this caller does not wait on.
            import threading

            timer = threading.Timer(stop_grace_s() + 3.0, self._kill_child, args=(signum,))
            timer.daemon = True
            timer.start()

    def _kill_child(self, signum: int) -> None:
        if self.child:
            with contextlib.suppress(OSError):
                os.killpg(self.child, signal.SIGKILL)
        os._exit(128 + signum)

    def child_started(self, pid: int) -> None:
        self.child = pid
        if self.stopped:  # stopped before the child was known: pass it on now
            with contextlib.suppress(OSError):
                os.kill(pid, self.stopped[0])


def delegate_if_console_script() -> None:
    """Called first thing by `chronicle.cli.main` when the `chronicle` script imports it: hand the command to the warm
    runner and exit with its status. Returns (and the command runs in this process) when it is not used."""
    main = sys.modules.get("__main__")
    script = os.path.basename(getattr(main, "__file__", "") or "")
    if script != "chronicle" or os.path.basename(sys.argv[0]) != "chronicle":
        return
    how = wanted(sys.argv[1:], dict(os.environ))
    code = None if how is None else run_warm(sys.argv[1:], start=how == "start")
    if code is not None:
        sys.stdout.flush()
        os._exit(code)  # nothing of ours to flush or tear down: this process only waited
    words = _command(sys.argv[1:])
    own_lifecycle = bool(words) and (words[0] in NEVER or words[:2] == ["report", "edit"])
    if not os.environ.get(CHILD_ENV) and not own_lifecycle:
        # The command runs in this process: a signal must end it within seconds. Not `serve` (it stops its
        # flow-run processes itself on Ctrl-C) nor `report edit` (Ctrl-C belongs to the editor then).
        stop_on_signals()


def stop() -> dict[str, Any] | None:
    """Stop the warm runner, if one runs (`chronicle server stop`)."""
    current = read_runner_state()
    if not current:
        return None
    _stop_pid(int(current.get("pid", 0)))
    runner_files()[0].unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        runner_files()[1].unlink()
    return current


def status() -> dict[str, Any] | None:
    current = read_runner_state()
    if current and _connect_ok(runner_files()[1]):
        return current
    return None
