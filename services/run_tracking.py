"""Run bookkeeping shared by every flow: a `pipeline_runs` row that ends COMPLETED, FAILED, CANCELLED or CRASHED,
the analysts' read snapshot published after it, and a retried attempt's artifacts its own.

Every way a run can end is recorded: the body's own outcome by `tracked_run` (a cancellation included: the runner
tells the run's process it cancels before its SIGTERM, which stops the body; a run without a runner, started from a
terminal, does the same to itself at the Cancel), a failure, crash or cancellation
Prefect saw before or around the body (its own parameter validation, SIGTERM, a cancel landing outside the body) by
the `record_unfinished` hook, and a process killed outright (kill -9) by the next flow start or `chronicle runs`
(`chronicle.services.run_history`).
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from typing import Any

from prefect.runtime import flow_run

from chronicle.param_checks import ParameterError
from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import Redactor, redact_value
from chronicle.run_rows import CANCELLED_MESSAGE, RunRow
from chronicle.services.lineage import LINEAGE_HOOKS
from chronicle.services.run_cancel import stopped_at_cancel
from chronicle.services.run_history import process_alive, reap, this_process
from chronicle.settings import Settings, load_settings
from chronicle.storage import pipeline_runs as runs
from chronicle.storage import run_journal
from chronicle.storage.db import tag_commits, write
from chronicle.storage.files import DatabaseBusyError
from chronicle.storage.snapshot import publish_snapshot
from chronicle.weeks import utc_now

_this_run = flow_run  # the flow run this process runs now: inside a hook, the parameter `flow_run` hides the module

_NOTES: dict[str, list[str]] = {}


class RunCounts(dict[str, Any]):
    """The counts a flow fills for its final row, plus the sentence its row and Prefect state end with."""

    message: str | None = None


def current_flow_run_id() -> str:
    """The Prefect flow run id, or a fresh id when called outside a flow (plain Python use)."""
    return str(flow_run.get_id() or uuid.uuid4())


class _NoteHandler(logging.Handler):
    """Keeps the storage layer's warnings (`DuckDB file ... is held by ...; waiting`) for the run's summary."""

    def __init__(self, notes: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.notes = notes

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.notes) < 50:
            self.notes.append(record.getMessage())


def run_notes(run_id: str | None = None) -> list[str]:
    """Warnings an operator must see that would drown among the run's log lines (e.g. waits for the database)."""
    return list(_NOTES.get(run_id or current_flow_run_id(), []))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


@contextmanager
def tracked_run(settings: Settings, flow_name: str, parameters: dict[str, Any]) -> Iterator[RunCounts]:
    """Record the run; the caller fills the yielded dict with counts (and `.message`) for the final row.

    Parameters and the failure message are redacted: paths name files (`…-13912345678.md`) and an exception
    may quote what it failed on; `pipeline_runs` is read by analysts and printed by `chronicle runs`.

    After the final row, the read snapshot is published (`_publish_snapshot`), also when the run failed part-way:
    what it stored before failing is queryable. Not after a refusal (nothing stored; the database may be what
    failed) nor a crash (the process is being stopped).
    """
    own_artifacts()
    run_id = current_flow_run_id()
    counts = RunCounts()
    redactor = redactor_for(settings)
    shown = redact_value(parameters, redactor)
    me = this_process()
    notes = _NOTES.setdefault(run_id, [])
    handler = _NoteHandler(notes)
    storage_log = logging.getLogger("chronicle.storage")
    storage_log.addHandler(handler)

    journaled = run_journal.pending(settings.db_path)
    ended: list[RunRow] = []

    def started(conn: Any) -> None:
        reap(conn, settings, me.host)  # rows of processes that were killed: CRASHED, at the next start of any flow
        ended[:] = runs.ended_on(conn, me.host, utc_now() - SETTLE_WITHIN)  # for `settle_in_prefect`
        run_journal.flush(conn, journaled)  # runs that failed because the database was held
        runs.run_started(conn, run_id, flow_name, shown)
        runs.set_process(conn, run_id, flow_run.get_name(), me.host, me.pid, me.started)

    # Every lake commit of this run records its flow_run_id (DuckLake snapshots -> runs, for time travel).
    try:
        with tag_commits(flow_run_id=run_id, flow=flow_name):
            try:
                write(settings, started)
            except DatabaseBusyError as exc:  # recorded beside the database, listed by `chronicle runs`
                run_journal.journal_run(settings.db_path, run_id, flow_name, shown, "FAILED", redactor.redact(str(exc)))
                raise
            run_journal.clear(settings.db_path, journaled)
            run_journal.reserve(settings.db_path, run_id)  # room for the final row, should the disk fill meanwhile
            settle_in_prefect(ended)
            try:
                with stopped_at_cancel(run_id):
                    yield counts
            except BaseException as exc:
                state = ended_as(exc)
                message = CANCELLED_MESSAGE if state == "CANCELLED" else redactor.redact(_error(exc))
                _record_end(settings, redactor, run_id, flow_name, shown, state, counts, message)
                if isinstance(exc, Exception) and not isinstance(exc, REFUSALS):
                    _publish_snapshot(settings, None)  # what it stored before failing is queryable
                raise
            _record_end(settings, redactor, run_id, flow_name, shown, "COMPLETED", counts, counts.message)
            counts.message = _publish_snapshot(settings, counts.message)
    finally:
        storage_log.removeHandler(handler)
        _NOTES.pop(run_id, None)


def ended_as(exc: BaseException) -> str:
    """The row's final state for what stopped the body: FAILED for an error, CANCELLED when the run is being
    cancelled, CRASHED for any other interruption (a SIGTERM nobody announced, Ctrl-C)."""
    if isinstance(exc, Exception):
        return "FAILED"
    return "CANCELLED" if _cancelling(exc) else "CRASHED"


def _cancelling(exc: BaseException) -> bool:
    """Whether this SIGTERM is a cancellation. Prefect's runner (`chronicle serve`, a process worker) sends the run's
    process its intent over a loopback channel before the SIGTERM (the UI's Cancel, or the runner stopping), and
    its engine ends the run Cancelled on that intent; the row must say the same. A Prefect without that channel
    only ever cancels a run it first set Cancelling, which the API then says."""
    from prefect.exceptions import TerminationSignal

    if not isinstance(exc, TerminationSignal):
        return False
    try:
        from prefect._internal.control_listener import get_intent
    except ImportError:
        with suppress(Exception):
            state = _prefect_state(current_flow_run_id())
            return state is not None and state.is_cancelling()
        return False
    return get_intent() == "cancel"


def _prefect_state(flow_run_id: Any) -> Any:
    """The run's state as the Prefect API has it now; raises when the API does not answer (each caller decides what
    not knowing means)."""
    from chronicle.services.prefect_client import prefect_client

    with prefect_client() as client:
        return client.read_flow_run(uuid.UUID(str(flow_run_id))).state


SETTLE_WITHIN = timedelta(days=1)
"""How long after a run ended its Prefect state is still checked against its row at each flow start."""


def settle_in_prefect(rows: list[RunRow]) -> None:
    """Give Prefect the final state of ended runs whose process is gone while Prefect still shows them unfinished.

    A run started from a terminal whose process was killed with -9 (its row reaped CRASHED, here or by `chronicle
    runs`, which does not reach Prefect), or that outlived its Prefect server (it recorded FAILED, then could not
    tell the API), stayed Running in Prefect for ever: the `chronicle-zombie-runs` automation covers deployment runs
    only. Only rows whose process is gone are settled (a live process is still ending its run), with one read for
    all of them; an API that does not answer changes nothing here."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled, Completed, Crashed, Failed

    from chronicle.services.prefect_client import prefect_client

    gone: dict[uuid.UUID, RunRow] = {}
    for row in rows:
        with suppress(ValueError):  # a run made outside Prefect has no flow run to look up
            if row.pid is not None and not process_alive(row.pid, row.pid_started):
                gone[uuid.UUID(row.flow_run_id)] = row
    if not gone:
        return
    final = {"COMPLETED": Completed, "FAILED": Failed, "CRASHED": Crashed, "CANCELLED": Cancelled}
    unfinished = FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING, StateType.CANCELLING])
    try:
        with prefect_client() as client:
            for run in client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(gone)),
                                                                           state=FlowRunFilterState(type=unfinished)),
                                             limit=len(gone)):
                row = gone[run.id]
                client.set_flow_run_state(run.id, final.get(row.state, Crashed)(message=row.message), force=True)
    except Exception as exc:
        logging.getLogger("chronicle.runs").warning("could not give Prefect the final state of %d ended run(s): %s: %s",
                                                    len(gone), type(exc).__name__, exc)


def _record_end(settings: Settings, redactor: Redactor, run_id: str, flow_name: str, shown: dict[str, Any],
                state: str, counts: RunCounts, message: str | None) -> None:
    """Write the run's final row. One the database refuses (a full disk refuses that commit too) is journaled beside
    it for the next writer (into the room the run set aside, when the disk is full to its last byte) instead of
    staying RUNNING and being reaped later as the row of a killed process. A run that was to complete then ends
    Failed with the database's error, which its journaled row says; a failing run keeps its own error."""
    if notes := run_notes(run_id):
        counts["notes"] = notes
    try:
        write(settings, lambda conn: runs.run_finished(conn, run_id, state, counts, message))
        run_journal.release(settings.db_path, [run_id])
    except Exception as exc:
        failing = state != "COMPLETED"
        with suppress(OSError):
            run_journal.journal_run(settings.db_path, run_id, flow_name, shown, state if failing else "FAILED",
                                    message if failing else redactor.redact(_error(exc)))
        if not failing:
            raise


def record_unfinished(flow: Any, flow_run: Any, state: Any) -> None:
    """`on_failure` / `on_crashed` / `on_cancellation` hook of every flow: a run that ended before its body recorded
    it (Prefect's parameter validation refused it, a cancel came before the body started) or while Prefect, not the
    body, was in charge (SIGTERM, a cancel during the final write) gets its row. Prefect's runner calls the
    cancellation and crash hooks itself, in its own process once the run's process is gone, by keyword: the
    parameters are named as it names them."""
    settings = load_settings()
    cancelled = state.is_cancelling() or state.is_cancelled()
    if cancelled and not _ends_cancelled(flow_run.id):
        return  # the run ended by itself before the cancel reached it: Prefect keeps its state, and so does the row
    final = "CRASHED" if state.is_crashed() else "CANCELLED" if cancelled else "FAILED"
    redactor = redactor_for(settings)
    shown = redact_value(dict(flow_run.parameters or {}), redactor)
    message = CANCELLED_MESSAGE if cancelled else redactor.redact(state.message or "") or None
    if any(r["flow_run_id"] == str(flow_run.id) for r in run_journal.pending(settings.db_path)):
        return  # its body found the database held and recorded it beside it: do not wait a second time
    try:
        write(settings, lambda conn: runs.record_unfinished(conn, str(flow_run.id), flow.name, flow_run.name,
                                                             shown, final, message, overrule=cancelled),
              guard=[f"pipeline_run:{flow_run.id}"])
    except Exception:  # the database is what failed (held, a full disk): the row waits beside it for the next writer
        run_journal.journal_run(settings.db_path, str(flow_run.id), flow.name, shown, final, message)
    if cancelled and _this_run.get_id() == str(flow_run.id):
        _end_cancelled(flow_run.id)


def _end_cancelled(flow_run_id: Any) -> None:
    """Set Cancelled a run its own process found Cancelling. Only a run without a runner gets here (one started from a
    terminal: Prefect calls this hook in the run's process only when no runner owns the cancellation); nobody else
    would end it, and it stayed Cancelling for ever while its row said CANCELLED. Such a run stops itself at the
    Cancel (`run_cancel.stopped_at_cancel`); this is the Cancel that came after its body had ended, answered at its
    next state request."""
    from prefect.states import Cancelled

    from chronicle.services.prefect_client import prefect_client

    try:
        with prefect_client() as client:
            client.set_flow_run_state(flow_run_id, Cancelled(message=CANCELLED_MESSAGE), force=True)
    except Exception as exc:  # the next flow start settles it (`settle_in_prefect`)
        logging.getLogger("chronicle.runs").warning("could not set cancelled run %s Cancelled: %s: %s", flow_run_id,
                                                    type(exc).__name__, exc)


def _ends_cancelled(flow_run_id: Any) -> bool:
    """Whether Prefect ends this run Cancelled. Its runner calls the cancellation hooks after the run's process is gone
    and before it sets Cancelled, which it does unless the run reached a final state of its own meanwhile (it
    completed between the Cancel and the SIGTERM); the row then keeps what the run wrote. When the API cannot say,
    the cancellation wins (the runner forces a final state anyway)."""
    try:
        now = _prefect_state(flow_run_id)
    except Exception:
        return True
    return now is None or not now.is_final() or now.is_cancelled()


REFUSALS: tuple[type[Exception], ...] = (ParameterError, DatabaseBusyError)
"""What every flow ends with `refused` (one line, no traceback): parameters it refuses, and the database held by
another process past the lock timeout (its message names the holder and what to do)."""


def refused(exc: Exception, *, said: str = "refused") -> Any:
    """The state a flow returns for parameters it refuses (`ParameterError`) or for an expected partial failure
    (`said="partly failed"`: some weeks failed, every other one stored): Failed, with the one-line reason as its
    message and on its Logs tab, and no traceback there (the value or the model was wrong, not the code). A
    Python caller of the flow still gets the exception raised."""
    from prefect import get_run_logger
    from prefect.states import Failed

    own_artifacts()  # refused before `tracked_run`: a retried attempt still shows only its own refusal
    get_run_logger().error("%s: %s", said, exc)
    return Failed(message=_error(exc), data=exc)


def _publish_snapshot(settings: Settings, message: str | None) -> str | None:
    """Publish the analysts' read snapshot once a run's rows are stored (`after_stored`: a copy that cannot be written
    leaves the run as its row says, its message naming what is behind); the run's final message."""
    return after_stored(message, lambda: publish_snapshot(settings), "the read snapshot was not published",
                        "the next run publishes it")


def after_stored(message: str | None, step: Callable[[], object], not_done: str, next_time: str) -> str | None:
    """Run `step`, a copy made from what a run stored (the snapshot, the charts), once its row says COMPLETED; the
    run's final message. A copy that cannot be written (a full disk) does not undo the run: the run stays Completed,
    agreeing with its row, and its message and Logs tab say what is behind and when it catches up."""
    from prefect import get_run_logger

    try:
        step()
        return message
    except (OSError, DatabaseBusyError) as exc:  # a full disk; another process holding the database too long
        note = f"{not_done} ({exc}); everything is stored, {next_time}"
        get_run_logger().warning("%s", note)
        return f"{message}; {note}" if message else note


_cleaned: set[tuple[str, int]] = set()


def own_artifacts() -> None:
    """A retried run (the UI's Retry runs the same flow run again) starts without its earlier attempts'
    artifacts: its summary, outcome table, progress and report cards are this attempt's, not mixed with the
    first one's (whose failures this attempt may have fixed). Once per attempt; a first attempt has none."""
    from uuid import UUID

    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from chronicle.services.prefect_client import prefect_client

    run_id, attempt = flow_run.get_id(), flow_run.get_run_count()
    if not run_id or attempt <= 1 or (run_id, attempt) in _cleaned:
        return
    _cleaned.add((run_id, attempt))
    with prefect_client() as client:
        for artifact in client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(run_id)]))):
            client.delete_artifact(artifact.id)


RUN_HOOKS: dict[str, Any] = {**LINEAGE_HOOKS,
                             "on_failure": [record_unfinished, *LINEAGE_HOOKS["on_failure"]],
                             "on_crashed": [record_unfinished, *LINEAGE_HOOKS["on_crashed"]],
                             "on_cancellation": [record_unfinished, *LINEAGE_HOOKS["on_cancellation"]]}
"""`@flow(..., **RUN_HOOKS)`: the pipeline_runs row of a run that ended outside its body, and OpenLineage events
(services/lineage.py; nothing is sent unless lineage is configured)."""


# A flow run ends when its body does, not up to a second later. Prefect's sync flow engine runs a
# heartbeat thread that sleeps in 1 s steps, checking its stop event between them, and joins it when the run
# ends: every flow run (heartbeats are on by default, every 30 s on our workers) returned 0-1 s (0.5 s on
# average) after its body and hooks were done, 5 % of a 10 s backfill. Prefect's own `join_on_exit=False`
# (what its async engine passes) ends the run at once; the thread still stops at its next step without emitting
# again (it checks the event before every heartbeat) and is a daemon, so a process ending meanwhile does not
# wait for it.
def unjoined_heartbeats() -> bool:
    """Make the sync flow engine leave its heartbeat thread to stop by itself; idempotent. False (and Prefect's
    behaviour kept) when this Prefect has no such helper or it takes no `join_on_exit`."""
    import prefect.flow_engine as engine

    current = getattr(engine, "_send_heartbeats", None)
    if current is None:
        return False
    if getattr(current, "_chronicle_unjoined", False):
        return True
    try:
        if "join_on_exit" not in inspect.signature(current).parameters:
            return False
    except (TypeError, ValueError):
        return False

    @contextmanager
    def send_heartbeats(run_engine: Any, join_on_exit: bool = True) -> Iterator[None]:
        with current(run_engine, join_on_exit=False):
            yield

    send_heartbeats._chronicle_unjoined = True  # type: ignore[attr-defined]
    engine._send_heartbeats = send_heartbeats
    return True


unjoined_heartbeats()  # every flow imports this module (RUN_HOOKS): its runs end when their bodies do
