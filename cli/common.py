"""Shared CLI plumbing: console, settings with `--home`, running flows, one-line failures, progress bars."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chronicle.cli.launch import CLI_DEFAULTS
from chronicle.progress import listening
from chronicle.settings import Settings, using


class _Console(Console):
    """Soft-wraps when not writing to a terminal: a piped or captured line is never broken at 80 columns."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        super().print(*objects, soft_wrap=(not self.is_terminal) if soft_wrap is None else soft_wrap, **kwargs)


console = _Console()
err = _Console(stderr=True)
HomeOpt = typer.Option(None, "--home", help="Data folder (overrides CHRONICLE_HOME).")

# A local run should not try to phone home (there is no network) nor warn about it on every command.
for _name, _value in CLI_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


T = TypeVar("T")


def settings_from_options(home: str | None = None) -> Settings:
    """This command's settings: environment / `.env` / `chronicle.toml`, with `--home` on top.

    A refused setting ends the command with one line naming it and a valid example (status 2), never a
    pydantic traceback."""
    from chronicle.private import private_umask
    from chronicle.settings_errors import SETTINGS_ERRORS, settings_problem

    private_umask()  # whatever this command creates (database, lake, files) is its owner's only
    try:
        return Settings(home=Path(home)) if home else Settings()
    except SETTINGS_ERRORS as exc:
        fail(settings_problem(exc), code=2)


def read_settings(home: str | None = None) -> Settings:
    """Settings of a command that only reads: a home that does not exist is a mistyped CHRONICLE_HOME or
    `--home`, answered in one line (status 1) — never created empty and reported as "nothing yet"."""
    settings = settings_from_options(home)
    # A home holds the DuckDB file, the memories' LanceDB folder, or both (a store written by `MemoryStore`
    # alone, or one whose LanceDB lives elsewhere, is still a home to read).
    lance = settings.lance_uri
    has_memories = "://" in lance or Path(lance).exists()
    if not settings.lake.enabled and not settings.db_path.exists() and not has_memories:
        fail(f"no Chronicle data at {settings.db_path}: CHRONICLE_HOME / --home points to {settings.home}, where "
             "nothing was ever ingested; check the path (or run `chronicle ingest PATH` to start a home there)")
    return settings


def known_project(settings: Settings, project: str, name: str = "--project") -> str:
    """`project` if it has entries; otherwise one line naming the known projects (status 2)."""
    from chronicle.services.param_checks import existing_project

    return check(existing_project, settings, project, name)


def echo_safe(text: str) -> str:
    """`text` redacted before it is printed: a message or a title that repeats what the user typed (a query, a
    parameter) would otherwise show a token pasted into it back on the terminal and in its scrollback. By the
    operator's redaction settings, as every other sink."""
    from chronicle.redaction.configured import entry_redactor

    return entry_redactor().redact(text)


def fail(message: str, code: int = 1) -> NoReturn:
    """End the command with one line on stderr (never a traceback) and a non-zero exit status."""
    err.print(f"[red]{escape(echo_safe(message))}[/]", soft_wrap=True)
    raise typer.Exit(code)


def check(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a parameter check (`chronicle.services.param_checks`); a refused parameter ends the command with its message.

    The flows run the same checks first thing, so the CLI and every other way of starting a run give the
    same answer; checking here too fails a typo at once, without starting a run at all.
    """
    from chronicle.param_checks import ParameterError

    try:
        return fn(*args, **kwargs)
    except ParameterError as exc:
        fail(str(exc), code=2)


def _api_lost(api: Any, gone: threading.Event | None) -> bool:
    """Whether a failed run's API went away: the configured one does not answer, or the background server was
    stopped or replaced (another home's server may answer on its port by now)."""
    from chronicle.deployments import local_api

    if not api.url:
        return False
    if gone is None:
        return not local_api.healthy(api.url)
    state = local_api.running()
    return gone.is_set() or state is None or state.url != api.url


def disk_full(exc: BaseException) -> str | None:
    """The error that says a disk is full, if that is why `exc` happened: an OSError ENOSPC anywhere in its chain, or
    DuckDB's own error for a write that found no space (a commit's WAL, a checkpoint), which is not an OSError."""
    seen: BaseException | None = exc
    for _ in range(20):  # a chain of causes is short; a cycle of them must not hang the command
        if seen is None:
            return None
        if (isinstance(seen, OSError) and seen.errno == errno.ENOSPC) or "No space left on device" in str(seen):
            return str(seen).splitlines()[0] if str(seen) else "No space left on device"
        seen = seen.__cause__ or seen.__context__
    return None


def fail_if_disk_full(settings: Settings, exc: BaseException, what: str) -> None:
    """A full disk is an operator's condition, not a bug: one line saying what stopped and what to do, no traceback."""
    said = disk_full(exc)
    if said is not None:
        fail(f"{what} stopped: the disk is full ({said}); free space under {settings.home} (old snapshots, "
             "knowledge-file backups, ~/.prefect/storage) and run it again")


def ensure_api() -> Any:
    """The Prefect API commands use (`local_api.ensure`), or one line saying why there is none."""
    from chronicle.deployments import local_api

    try:
        return local_api.ensure()
    except local_api.ApiUnavailable as exc:
        fail(str(exc))


def run_flow(settings: Settings, flow: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call a flow in this process with the command's settings (flows read them when they start), against
    the configured Prefect API or Chronicle's background server (`chronicle.deployments.local_api`)."""
    from prefect.exceptions import CancelledRun, UnfinishedRun

    from chronicle.deployments import local_api
    from chronicle.param_checks import ActionNeeded, ParameterError
    from chronicle.run_rows import CANCELLED_MESSAGE
    from chronicle.services.run_cancel import cancel_ends_here
    from chronicle.storage.files import DatabaseBusyError

    api = ensure_api()
    with ExitStack() as stack:
        stack.enter_context(using(settings))
        from prefect.settings import PREFECT_API_URL, temporary_settings

        gone = None
        if api.source == "background":
            if PREFECT_API_URL.value() != api.url:
                stack.enter_context(temporary_settings(updates={PREFECT_API_URL: api.url}))
            # Its server stopped mid-run, the run ends at once instead of retrying against a dead address (or
            # reporting to another home's server that took the port).
            done = threading.Event()
            stack.callback(done.set)
            gone = local_api.watch(api.url, "the run stops; `chronicle runs` says how far it got", until=done)
        lost = (f"lost the Prefect API at {api.url} during the run; the run record says how far it got "
                "(`chronicle runs`)")
        try:
            with cancel_ends_here():  # stopped at the UI's Cancel (no runner does it for a run in this process)
                return flow(*args, **kwargs)
        except ParameterError as exc:
            fail(str(exc), code=2)
        except (ActionNeeded, DatabaseBusyError) as exc:  # one line saying what to do, never a traceback
            fail(str(exc))
        except (CancelledRun, UnfinishedRun) as exc:
            if isinstance(exc, UnfinishedRun) and "CANCEL" not in str(exc).upper():
                raise
            # Cancelled from the Prefect UI while it ran: recorded so (`tracked_run`), one line here.
            fail(f"the run was {CANCELLED_MESSAGE} (`chronicle runs`)")
        except KeyboardInterrupt:
            if gone is not None and gone.is_set():
                fail(lost)
            raise
        except Exception as exc:
            # Its run is recorded Failed (pipeline_runs and Prefect), with the same error as its message.
            fail_if_disk_full(settings, exc, "the run")
            if _api_lost(api, gone):
                fail(f"{lost} ({type(exc).__name__})")
            if "ephemeral Prefect API" in str(exc):  # Prefect's own throw-away server did not come up
                fail(f"{exc}; unset CHRONICLE_PREFECT_SERVER=ephemeral to use Chronicle's background server")
            raise


@contextmanager
def progress_bar() -> Iterator[None]:
    """A rich progress bar fed by `chronicle.progress.report` calls from inside flows."""
    if not console.is_terminal:
        yield
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        with listening(update):
            yield


def loopback(host: str) -> bool:
    """True for an address only this machine reaches: the servers Chronicle starts have no authentication of
    their own (the desk has accounts, but its cookies and pages assume one origin), so they bind there unless told."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
