"""Weekly-report tasks: read a week (short window) -> decide -> write it (no DB held) -> store (short window).

No `retries=` here: the only network is the LLM, and `ChatClient` is the one retry layer
(exponential backoff + jitter, Retry-After); stacking Prefect retries would multiply attempts.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from chronicle.llm import ChatClient, LLMCallRecord
from chronicle.settings import Settings, get_settings
from chronicle.weekly.engine import LLMCall, decide, llm_week, offline_week, recheck
from chronicle.weekly.faithfulness import describe
from chronicle.weekly.model import OFFLINE_MODEL, StoredReport, WeekInput, make_week_input
from chronicle.weekly.report_md import report_markdown
from chronicle.weeks import IsoWeek, week_range
from services.llm_gate import llm_slot
from services.runs import current_flow_run_id
from storage import reports
from storage.db import connect, transaction
from storage.llm_log import DuckDBCallLogger

_log = logging.getLogger("chronicle.weekly")


def engine_model(settings: Settings) -> str:
    """The model a fresh report records: the offline engine unless an endpoint is configured."""
    return OFFLINE_MODEL if settings.offline_llm else settings.llm_model


def read_week(settings: Settings, project_id: str, week: IsoWeek) -> tuple[WeekInput, StoredReport | None]:
    """One short read window: the week's entries, the enrolment before it, its stored report."""
    with connect(settings) as conn:
        rows = reports.week_rows(conn, project_id, week.number, week.number).get(week.number, [])
        before = reports.enrolled_before(conn, project_id, week.number)
        stored = reports.stored_reports(conn, project_id, week.number, week.number).get(week.number)
    return make_week_input(project_id, week, rows, before, settings.tz_for(project_id)), stored


class _BufferedLogger:
    """Holds a thread's call records until its LLM slot is released, then writes them.

    The records are still written per attempt, just a few milliseconds later: the slot is not held
    while DuckDB is opened for the audit row.
    """

    def __init__(self, inner: DuckDBCallLogger) -> None:
        self.inner = inner
        self._local = threading.local()

    def log(self, record: LLMCallRecord) -> None:
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            self.inner.log(record)
        else:
            buffer.append(record)

    @contextmanager
    def buffering(self) -> Iterator[None]:
        self._local.buffer = []
        try:
            yield
        finally:
            pending, self._local.buffer = self._local.buffer, None
            for record in pending:
                self.inner.log(record)


_clients: OrderedDict[tuple[Any, ...], tuple[ChatClient, _BufferedLogger]] = OrderedDict()
_clients_lock = threading.Lock()
_MAX_CLIENTS = 8  # a long-lived worker serves many flow runs; keep only the recent ones


def _client(settings: Settings, run_id: str) -> tuple[ChatClient, _BufferedLogger]:
    # One thread-safe client (and HTTP connection pool) per flow run and endpoint.
    key = (settings.llm_url, settings.llm_model, str(settings.db_path), run_id, id(settings))
    with _clients_lock:
        if key not in _clients:
            logger = _BufferedLogger(DuckDBCallLogger(settings, run_id))
            _clients[key] = (ChatClient(settings, logger=logger), logger)
            while len(_clients) > _MAX_CLIENTS:
                _clients.popitem(last=False)
        _clients.move_to_end(key)
        return _clients[key]


def llm_caller(settings: Settings, project_id: str | None, week_number: int | None, run_id: str) -> LLMCall:
    """`call(messages, purpose)` through `ChatClient`, inside one slot of the shared `llm` limit."""
    client, logger = _client(settings, run_id)

    def call(messages: list[dict[str, str]], purpose: str) -> str:
        with logger.buffering(), llm_slot(settings):
            return client.complete(messages, purpose=purpose, project_id=project_id, week_number=week_number).text

    return call


def _refresh(settings: Settings, week: WeekInput, stored: StoredReport, stale: bool | None) -> None:
    """Keep a kept report's stats true (a late enrolment shifts `enrolled_total` of later weeks)."""
    if stored.stats == week.stats and (stale is None or stale == stored.stale):
        return
    reasons = None if stored.status == "edited" else recheck(stored, week)
    with transaction(settings) as conn:
        reports.refresh(conn, week.project_id, week.week.number, stats=week.stats, stale=stale,
                        review_reasons=reasons)


def run_week(settings: Settings, project_id: str, week: IsoWeek, *, force: bool = False,
             overwrite_edited: bool = False, prepared: tuple[WeekInput, StoredReport | None] | None = None,
             publish: bool = True) -> dict[str, Any]:
    """Summarise one project-week end to end; returns its outcome row."""
    t0 = time.perf_counter()
    week_input, stored = prepared or read_week(settings, project_id, week)
    model = engine_model(settings)
    decision = decide(stored, week_input, model, force=force, overwrite_edited=overwrite_edited)
    row: dict[str, Any] = {"project": project_id, "week": str(week), "week_number": week.number,
                           "entries": len(week_input.entries), "llm_calls": 0, "needs_review": False, "reasons": []}
    if decision.action != "generate":
        assert stored is not None
        _refresh(settings, week_input, stored, decision.stale if decision.action == "skip-edited" else None)
        outcome = "cached" if decision.action == "cached" else "skipped-edited"
        return row | {"outcome": outcome, "engine": stored.model, "needs_review": stored.needs_review,
                      "duration_s": round(time.perf_counter() - t0, 3), "why": decision.why}
    run_id = current_flow_run_id()
    try:
        if settings.offline_llm or not week_input.entries:
            report = offline_week(week_input, settings.report_max_chars)
        else:
            call = llm_caller(settings, project_id, week.number, run_id)
            report = llm_week(week_input, call, model=model, max_chars=settings.report_max_chars,
                              context_tokens=settings.llm_context_tokens)
    except Exception:
        if stored is not None and stored.status == "generated" and stored.input_hash != week_input.input_hash:
            with transaction(settings) as conn:
                reports.mark_stale(conn, project_id, week.number)
        raise
    outcome = reports.writer_for(settings).save(report, overwrite_edited=overwrite_edited, reason=decision.why,
                                                flow_run_id=run_id)
    if publish and outcome == "generated":
        artifacts.submit(create_markdown_artifact, markdown=report_markdown(report),
                         key=artifact_key("report", project_id, week),
                         description=f"Weekly report {project_id} {week} ({report.model})")
    return row | {"outcome": outcome, "engine": report.model, "llm_calls": report.llm_calls,
                  "needs_review": report.needs_review, "reasons": [describe(r) for r in report.review_reasons],
                  "duration_s": round(time.perf_counter() - t0, 3), "why": decision.why}


class _ArtifactPublisher:
    """Creates the per-week Markdown artifacts off the task's critical path.

    The Prefect API stores artifacts one at a time (~40 ms each against its SQLite database, far
    more under load), so a week's worker hands its artifact over and goes back to work; `drain()`
    (called by the fan-out before it finishes) waits for them. The task-run context is copied, so
    each artifact is still linked to its task and flow run.
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chronicle-artifacts")
        self._lock = threading.Lock()
        self._pending: set[Future[Any]] = set()

    def submit(self, fn: Any, /, **kwargs: Any) -> None:
        future = self._pool.submit(contextvars.copy_context().run, fn, **kwargs)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
        if future.exception() is not None:
            _log.warning("weekly report artifact not published: %s", future.exception())

    def drain(self, timeout_s: float = 120.0) -> None:
        with self._lock:
            pending = list(self._pending)
        wait(pending, timeout=timeout_s)


artifacts = _ArtifactPublisher()


def artifact_key(prefix: str, project_id: str, week: IsoWeek | None = None) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    raw = f"{prefix}-{project_id}" + (f"-{week.year}w{week.week:02d}" if week else "")
    key = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in raw.lower())
    return "-".join(part for part in key.split("-") if part)


@task(name="summarize-week", task_run_name="summarize-{project_id}-{week_number}", cache_policy=NO_CACHE)
def summarize_week_task(project_id: str, week_number: int, force: bool = False, overwrite_edited: bool = False,
                        prepared: tuple[WeekInput, StoredReport | None] | None = None) -> dict[str, Any]:
    # DuckDB is the cache (input hash + model + prompt version), so Prefect's result cache stays off.
    return run_week(get_settings(), project_id, IsoWeek.from_number(week_number), force=force,
                    overwrite_edited=overwrite_edited, prepared=prepared)


@dataclass
class ProjectPlan:
    """Weeks of one project that need a task, and the outcome rows of those answered at planning."""

    project_id: str
    to_run: list[tuple[IsoWeek, tuple[WeekInput, StoredReport | None]]] = field(default_factory=list)
    done: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.to_run) + len(self.done)


def plan_project(settings: Settings, project_id: str, start: IsoWeek | None = None, end: IsoWeek | None = None, *,
                 force: bool = False, overwrite_edited: bool = False, only_missing: bool = True) -> ProjectPlan:
    """Read a project's weeks in ONE window and decide each; kept reports get their stats refreshed.

    The range is clamped to start no earlier than the project's first entry (there is no gap to fill
    before a project began); without bounds it is the project's first..last week with entries.
    """
    plan = ProjectPlan(project_id)
    with connect(settings) as conn:
        span = reports.week_span(conn, project_id)
        if span is None:
            return plan
        first = max(start or IsoWeek.from_number(span[0]), IsoWeek.from_number(span[0]))
        last = end or IsoWeek.from_number(span[1])
        if last < first:
            return plan
        rows = reports.week_rows(conn, project_id, first.number, last.number)
        running = reports.enrolled_before(conn, project_id, first.number)
        stored = reports.stored_reports(conn, project_id, first.number, last.number)
    tz, model = settings.tz_for(project_id), engine_model(settings)
    refreshes: list[tuple[int, dict[str, Any], bool | None, list[dict[str, Any]] | None]] = []
    for week in week_range(first, last):
        week_input = make_week_input(project_id, week, rows.get(week.number, []), running, tz)
        running = week_input.stats["enrolled_total"]
        kept = stored.get(week.number)
        decision = decide(kept, week_input, model, force=force, overwrite_edited=overwrite_edited)
        if not only_missing or decision.action == "generate" or kept is None:
            plan.to_run.append((week, (week_input, kept)))
            continue
        stale = decision.stale if decision.action == "skip-edited" else None
        needs_review = kept.needs_review
        if kept.stats != week_input.stats or (stale is not None and stale != kept.stale):
            # New stats (e.g. a late enrolment earlier on) re-check the kept text; edits are not flagged.
            reasons = None if kept.status == "edited" else recheck(kept, week_input)
            needs_review = bool(reasons) if reasons is not None else needs_review
            refreshes.append((week.number, week_input.stats, stale, reasons))
        plan.done.append({"project": project_id, "week": str(week), "week_number": week.number,
                          "entries": len(week_input.entries), "llm_calls": 0, "reasons": [], "duration_s": 0.0,
                          "outcome": "cached" if decision.action == "cached" else "skipped-edited",
                          "engine": kept.model, "needs_review": needs_review, "why": decision.why})
    if refreshes:
        with transaction(settings) as conn:
            for number, stats, stale, reasons in refreshes:
                reports.refresh(conn, project_id, number, stats=stats, stale=stale, review_reasons=reasons)
    return plan
