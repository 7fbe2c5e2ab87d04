"""OpenLineage run events for every flow run: START, then COMPLETE / FAIL / ABORT.

Off unless configured the standard way: `OPENLINEAGE_URL` (HTTP transport, `OPENLINEAGE_ENDPOINT`,
`OPENLINEAGE_API_KEY`), an `openlineage.yml` (`OPENLINEAGE_CONFIG`, the working folder or ~/.openlineage) or
`OPENLINEAGE__TRANSPORT__*` variables; `OPENLINEAGE_DISABLED=true` turns it off again. The client's own
console fallback (events printed on stdout) is never used: a site that did not ask for lineage gets none.

The run id is the Prefect flow run id, so Marquez / DataHub show the same run as the Prefect UI. Datasets:
log files -> `raw_logs`; `raw_logs` -> `weekly_reports` (with the projects and week range written); daily
notes -> `memories` (LanceDB) and the knowledge files. Facets: the run's parameters (redacted, as in
pipeline_runs), the Prefect run, the rows written (outputStatistics) and the error message of a failed run.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import attr

from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import redact_value
from chronicle.settings import KNOWLEDGE_FILES, Settings, load_settings

log = logging.getLogger("chronicle.lineage")
NAMESPACE_ENV = "OPENLINEAGE_NAMESPACE"
"""The jobs' namespace (OpenLineage's usual variable); default `chronicle`."""
FACET_SCHEMA = "https://github.com/chronicle/chronicle/blob/main/docs/operating.md#lineage"
REPORT_FLOWS = ("weekly-chronicle", "backfill-weeks", "backfill-shard", "summarize-week")


def configured() -> bool:
    """Whether the site asked for lineage (any of the client's standard configuration sources)."""
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get("OPENLINEAGE_URL") or any(k.startswith("OPENLINEAGE__TRANSPORT") for k in os.environ):
        return True
    candidates = [os.environ.get("OPENLINEAGE_CONFIG"), "openlineage.yml",
                  str(Path("~/.openlineage/openlineage.yml").expanduser())]
    return any(p and Path(p).is_file() for p in candidates)


@cache
def _client(_config: tuple[str | None, ...]) -> Any:
    from openlineage.client import OpenLineageClient

    return OpenLineageClient()


def client() -> Any | None:
    """The process's OpenLineage client, or None when lineage is not configured (one client per configuration:
    a long-lived worker process picks up a changed environment)."""
    if not configured():
        return None
    return _client((os.environ.get("OPENLINEAGE_URL"), os.environ.get("OPENLINEAGE_CONFIG"), os.getcwd(),
                    *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("OPENLINEAGE__"))))


@cache
def _facet_classes() -> tuple[type, type]:
    from openlineage.client.generated.base import OutputDatasetFacet, RunFacet

    @attr.define
    class PrefectFlowRunRunFacet(RunFacet):
        """The Prefect flow run this OpenLineage run is (custom facet `prefect`)."""

        flow_run_id: str
        flow_run_name: str
        deployment_id: str | None = None
        state: str | None = None

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA + "-prefect-run-facet"

    @attr.define
    class ChroniclePartitionOutputFacet(OutputDatasetFacet):
        """Which part of a table this run wrote (custom facet `chronicle_partition`)."""

        projects: list[str]
        first_week: str | None = None
        last_week: str | None = None

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA + "-partition-facet"

    # Defined on first use: importing openlineage costs time in processes that never emit.
    return PrefectFlowRunRunFacet, ChroniclePartitionOutputFacet


def table_namespace(settings: Settings) -> str:
    """Where the tables live, without credentials: the DuckDB file, or the lake's data root."""
    if settings.lake.enabled:
        return f"ducklake://{settings.lake.data_root.rstrip('/')}"
    return f"duckdb://{socket.gethostname()}{settings.db_path.resolve()}"


def _file_namespace() -> str:
    return f"file://{socket.gethostname()}"


def _datasets(settings: Settings, flow_name: str, params: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """(inputs, outputs) of a flow, without facets."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset

    tables = table_namespace(settings)
    if flow_name == "ingest-logs":
        paths = [str(Path(p).expanduser().resolve()) for p in params.get("paths") or []]
        return ([InputDataset(_file_namespace(), p) for p in paths],
                [OutputDataset(tables, "raw_logs"), OutputDataset(tables, "rejects")])
    if flow_name in REPORT_FLOWS:
        return [InputDataset(tables, "raw_logs")], [OutputDataset(tables, "weekly_reports")]
    if flow_name == "distill-memory":
        workspace = settings.workspace_dir.resolve()
        lance = settings.lance_uri if "://" in settings.lance_uri else _file_namespace()
        lance_name = "memories" if "://" in settings.lance_uri else f"{Path(settings.lance_uri).resolve()}/memories"
        return ([InputDataset(_file_namespace(), str(workspace / "memory"))],
                [OutputDataset(lance, lance_name)] + [OutputDataset(_file_namespace(), str(workspace / name))
                                                      for name in KNOWLEDGE_FILES])
    return [], []


def _written(result: Any) -> tuple[int | None, dict[str, Any] | None]:
    """(rows written to the main output, its partition) from a flow's return value."""
    from chronicle.distill.summary import DistillSummary
    from chronicle.ingest.model import IngestSummary
    from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError

    if isinstance(result, WeeksFailedError):
        result = result.rows
    if isinstance(result, IngestSummary):
        return result.entries_added, None
    if isinstance(result, DistillSummary):
        return result.tally.memories, None
    if isinstance(result, list) and result and all(isinstance(r, WeekOutcome) for r in result):
        written = sum(1 for r in result if r.outcome in ("generated", "empty"))
        return written, {"projects": sorted({r.project for r in result}),
                         "first_week": str(min(result, key=lambda r: r.week_number).week),
                         "last_week": str(max(result, key=lambda r: r.week_number).week)}
    return None, None


def _result(state: Any) -> Any:
    try:
        return state.result(raise_on_failure=False)
    except Exception:  # a crashed run keeps no result
        return None


def run_event(settings: Settings, event_type: str, flow_name: str, run: Any, state: Any) -> Any:
    """The OpenLineage RunEvent for this flow run and state (built, not sent)."""
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import (
        error_message_run,
        execution_parameters_run,
        output_statistics_output_dataset,
    )

    prefect_facet, partition_facet = _facet_classes()
    redactor = redactor_for(settings)
    params = redact_value(dict(run.parameters or {}), redactor)
    inputs, outputs = _datasets(settings, flow_name, dict(run.parameters or {}))
    facets: dict[str, Any] = {
        # The run's name is made from its parameters (`backfill-<project>-...`): redacted like them.
        "prefect": prefect_facet(flow_run_id=str(run.id), flow_run_name=redactor.redact(run.name or ""),
                                 deployment_id=str(run.deployment_id) if run.deployment_id else None,
                                 state=state.name if state else None),
        "executionParameters": execution_parameters_run.ExecutionParametersRunFacet(
            parameters=[execution_parameters_run.ExecutionParameter(key=k, value=str(v)) for k, v in params.items()]),
    }
    if event_type in ("FAIL", "ABORT") and state is not None and state.message:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=redactor.redact(state.message)[:2000], programmingLanguage="python")
    if event_type == "COMPLETE" and outputs:
        rows, partition = _written(_result(state))
        main = outputs[0]
        if rows is not None:
            main.outputFacets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=rows)
        if partition:
            main.outputFacets["chronicle_partition"] = partition_facet(**partition)
    return RunEvent(eventType=RunState[event_type], eventTime=datetime.now(UTC).isoformat(),
                    run=Run(runId=str(run.id), facets=facets),
                    job=Job(namespace=os.environ.get(NAMESPACE_ENV, "chronicle"), name=flow_name),
                    inputs=inputs, outputs=outputs)


def _emit(event_type: str, flow: Any, run: Any, state: Any) -> None:
    ol = client()
    if ol is None:
        return
    try:
        ol.emit(run_event(load_settings(), event_type, flow.name, run, state))
    except Exception:  # lineage is an observer: its endpoint being down never changes the run's outcome
        log.warning("OpenLineage %s event for run %s not sent", event_type, getattr(run, "id", "?"), exc_info=True)


def on_running(flow: Any, flow_run: Any, state: Any) -> None:
    _emit("START", flow, flow_run, state)


def on_completion(flow: Any, flow_run: Any, state: Any) -> None:
    _emit("COMPLETE", flow, flow_run, state)


def on_failure(flow: Any, flow_run: Any, state: Any) -> None:
    _emit("FAIL", flow, flow_run, state)


def on_cancellation(flow: Any, flow_run: Any, state: Any) -> None:
    _emit("ABORT", flow, flow_run, state)


LINEAGE_HOOKS: dict[str, list[Any]] = {"on_running": [on_running], "on_completion": [on_completion],
                                       "on_failure": [on_failure], "on_crashed": [on_failure],
                                       "on_cancellation": [on_cancellation]}
"""Merged into every flow's hooks by chronicle.services.run_tracking.RUN_HOOKS."""
