"""The warm runner (see cli/launch.py): imports Prefect and the flows once, then forks a child per command.

The child becomes the caller's `chronicle` process — its stdin/stdout/stderr (received over the Unix socket),
environment, working directory and arguments — runs the command through the Typer app, and reports the exit
status; the caller relays signals to it. Started by `chronicle.cli.launch` as `python -m chronicle.cli.warm KEY`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from chronicle.cli.launch import CHILD_ENV, ROOT, private_state_dir, read_runner_state, runner_env, runner_files

WARM_IMPORTS = (
    # Nothing here may start a thread (checked after the imports): a forked child would inherit its objects
    # without it. LanceDB starts one at import, so it is imported by a child's first connection to the store.
    "prefect", "prefect.flows", "prefect.tasks", "prefect.artifacts", "prefect.client.orchestration",
    "prefect.task_runners", "prefect.states", "prefect.settings", "prefect.logging.configuration",
    "chronicle.flows.ingest_logs", "chronicle.flows.backfill_weeks", "chronicle.flows.weekly_chronicle",
    "chronicle.flows.summarize_week",
    "chronicle.services.param_checks", "chronicle.services.run_history", "chronicle.deployments.local_api", "typer",
    "click", "rich.console",
    "rich.table", "rich.progress", "rich.markup", "pydantic_settings", "duckdb", "psutil", "filelock",
)
MEMORY_IMPORTS = ("pyarrow", "lance_namespace", "chronicle.memory.search", "chronicle.flows.distill_memory")
"""What a memory command needs that can be warmed, loaded once the first command is on its way (a flow
command need not wait for them): what `lancedb` imports before its thread starts — its generated REST
client `lance_namespace` (its pydantic models are most of LanceDB's import) and pyarrow —, the distill flow, and
the keyword leg's segmenter dictionary (only read afterwards, so forked children share it)."""


def _threads_started() -> list[str] | None:
    """The names of the threads running beside this one, or None: a forked child would have none of them."""
    return None if threading.active_count() == 1 else [t.name for t in threading.enumerate()]


def _warm_memory() -> None:
    import importlib

    for name in MEMORY_IMPORTS:
        importlib.import_module(name)
    from chronicle.segments import segmenter

    segmenter()


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
    _become_caller(server, fds, request)
    finished = threading.Event()
    _send(conn, {"pid": os.getpid()})
    threading.Thread(target=_die_with_caller, args=(conn, finished), daemon=True).start()
    _configure_prefect(no_api_configured)
    code = _run_command()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    finished.set()
    _report_and_exit(conn, code)


def _become_caller(server: socket.socket, fds: list[int], request: dict[str, Any]) -> None:
    """The caller's signals' defaults, stdin/stdout/stderr, environment, working directory and arguments."""
    os.setsid()
    server.close()
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from chronicle.cli.launch import stop_on_signals

    stop_on_signals()  # before any thread of the command exists: a relayed SIGTERM / Ctrl-C ends it in seconds
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(runner_env(request["env"]))  # the CLI's own defaults too, as chronicle.cli.common would set them
    os.environ[CHILD_ENV] = "1"
    os.chdir(request["cwd"])
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  line_buffering=os.isatty(1), write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    sys.argv = list(request["argv"])


def _die_with_caller(conn: socket.socket, finished: threading.Event) -> None:
    """The caller died (kill -9): so does the command, as it would have (a thread of the child)."""
    with contextlib.suppress(OSError):
        while conn.recv(1):
            pass
    if not finished.is_set():
        os.killpg(0, signal.SIGKILL)


def _configure_prefect(no_api_configured: bool) -> None:
    from prefect.context import refresh_global_settings_context
    from prefect.logging.configuration import setup_logging

    if no_api_configured:  # point Prefect at the background server now: one settings build, not two
        from chronicle.deployments import local_api

        if state := local_api.running():
            os.environ["PREFECT_API_URL"] = state.url
            os.environ["CHRONICLE_PREFECT_API_SOURCE"] = "background"
    refresh_global_settings_context()  # Prefect also reads `.env` / `prefect.toml` of the working directory
    setup_logging(incremental=False)  # Prefect's console handler on this caller's stderr (colours if a terminal)


def _run_command() -> int:
    """The command of sys.argv through the Typer app; its exit status."""
    code = 0
    try:
        from chronicle.cli.main import app

        app(args=sys.argv[1:], prog_name="chronicle")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    return code


def _report_and_exit(conn: socket.socket, code: int) -> None:
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


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED), None where the OS has no such
    option (then nobody is trusted)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def serve(key: str) -> None:
    """The runner's main loop: warm imports once, then one forked child per command, until idle."""
    private_state_dir()  # 0700, and the umask owner-only: the state file, the socket, what a command creates
    state, sock_path, _ = runner_files()
    me = {"pid": os.getpid(), "key": key, "started": time.time(), "socket": str(sock_path)}
    state.write_text(json.dumps(me))
    started = time.monotonic()
    no_api_configured = _warm_imports()
    if names := _threads_started():
        state.write_text(json.dumps(me | {"failed": f"threads after imports: {names}"}))
        print(f"not serving: imports started threads {names}", flush=True)
        return
    server = _listen(sock_path)
    state.write_text(json.dumps(me | {"ready": True, "warmup_s": round(time.monotonic() - started, 2)}))
    print(f"warm runner {key} ready in {time.monotonic() - started:.1f}s (pid {os.getpid()})", flush=True)
    try:
        _serve_commands(server, key, no_api_configured)
    finally:
        if read_runner_state() and read_runner_state().get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                sock_path.unlink()
            state.unlink(missing_ok=True)


def _warm_imports() -> bool:
    """Import WARM_IMPORTS; whether no Prefect API is configured (as every child will see it: same environment,
    the key)."""
    sys.path.insert(0, str(ROOT))
    import importlib

    for name in WARM_IMPORTS:
        importlib.import_module(name)
    from chronicle.deployments.local_api import configured_url

    return configured_url() is None


def _listen(sock_path: Path) -> socket.socket:
    """The runner's socket, listening; accept() times out after CHRONICLE_WARM_IDLE_S idle seconds."""
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    os.chmod(sock_path, 0o600)  # (the umask is owner-only already; the peer check below is what decides)
    server.listen(32)
    signal.signal(signal.SIGCHLD, _reap)
    idle_s = float(os.environ.get("CHRONICLE_WARM_IDLE_S", "1800"))
    server.settimeout(idle_s)
    return server


def _serve_commands(server: socket.socket, key: str, no_api_configured: bool) -> None:
    """Fork a child per caller until idle, until a newer runner is wanted, or once warming the memory started
    threads (a forked child would lack them)."""
    memory_warm = False
    while True:
        try:
            conn = _accept(server)
        except TimeoutError:
            print("idle: exiting", flush=True)
            return
        got = None if conn is None else _read_request(conn)
        if got is None:
            continue
        fds, request = got
        if request.get("key") != key or len(fds) != 3:
            _send(conn, {"error": "stale runner"})
            for fd in fds:
                os.close(fd)
            conn.close()
            if request.get("key") != key:
                print("a newer runner is wanted: exiting", flush=True)
                return
            continue
        _fork_child(conn, server, fds, request, no_api_configured)
        if not memory_warm:  # while the first command runs in its child
            memory_warm = True
            _warm_memory()
            if names := _threads_started():
                print(f"not serving: the memory imports started threads {names}", flush=True)
                return


def _accept(server: socket.socket) -> socket.socket | None:
    """The next caller of this uid, or None (an interrupted wait, a refused caller); TimeoutError when idle."""
    try:
        conn, _ = server.accept()
    except InterruptedError:
        return None
    if peer_uid(conn) != os.getuid():
        # Another local user reached the socket: a command run here would run as us. Refused unread.
        print(f"refused a connection from uid {peer_uid(conn)}", flush=True)
        conn.close()
        return None
    return conn


def _read_request(conn: socket.socket) -> tuple[list[int], dict[str, Any]] | None:
    """The caller's three descriptors and its request; None (the connection closed) when they cannot be read."""
    try:
        conn.settimeout(30)
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        request = json.loads(_recv_exact(conn, struct.unpack("!I", head)[0]))
        conn.settimeout(None)
    except (OSError, ValueError, struct.error):
        conn.close()
        return None
    return fds, request


def _fork_child(conn: socket.socket, server: socket.socket, fds: list[int], request: dict[str, Any],
                no_api_configured: bool) -> None:
    """The command runs in a forked child; the runner keeps none of the caller's descriptors."""
    if os.fork() == 0:
        try:
            _child(conn, server, fds, request, no_api_configured)
        finally:
            os._exit(1)  # never back into the runner's loop
    for fd in fds:
        os.close(fd)
    conn.close()



if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serve(sys.argv[1])
