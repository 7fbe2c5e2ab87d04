"""Flow `ingest_logs`: read log files and folders into DuckDB, incrementally and idempotently."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.ingest.batches import file_batches
from chronicle.ingest.model import IngestSummary
from chronicle.param_checks import name_part
from chronicle.params import OptionalProjectId, Replace, ReRead, SourcePaths
from chronicle.progress import report
from chronicle.redaction.configured import entry_redactor, redactor_for
from chronicle.services.ingest import safety_rejects
from chronicle.services.param_checks import ingest_paths
from chronicle.services.run_tracking import REFUSALS, RUN_HOOKS, refused, run_notes, tracked_run
from chronicle.settings import load_settings
from chronicle.tasks.ingest import discover_files, file_size, ingest_batch, shown_path
from chronicle.weeks import utc_now


def _summary_markdown(summary: IngestSummary, notes: list[str]) -> str:
    rows = "\n".join(f"| {reason} | {n} |" for reason, n in sorted(summary.rejects.items())) or "| — | 0 |"
    waits = "".join(f"- {note}\n" for note in notes)
    return (
        f"# Ingest\n\nfiles: {summary.files} ({summary.by_status}), "
        f"entries added: {summary.entries_added}, removed: {summary.entries_removed}, "
        f"skipped non-log files: {summary.skipped_files}\n\n| reject reason | count |\n|---|---|\n{rows}\n"
        + "".join(f"\nskipped, one JSON document and not log lines: `{d}`\n" for d in summary.skipped_documents)
        + _files_markdown(summary)
        + (f"\n## Notes\n\n{waits}" if waits else "")
    )


def _files_markdown(summary: IngestSummary) -> str:
    """The files the operator must hear about: refused whole, repeating other files, already known under
    another name, read while being written."""
    r = redactor_for(load_settings())
    out = [f"- `{shown_path(f, r)}` refused: {r.redact(why)}" for f, why in summary.refused_files.items()]
    out += [f"- `{shown_path(f, r)}`: {n} entr(ies) already held by `{shown_path(of, r)}`, stored once"
            for f, per in summary.duplicates.items() for of, n in per.items()]
    out += [f"- `{shown_path(f, r)}` is `{shown_path(of, r)}` (renamed, rotated or copied): read on from "
            "where that one stopped" for f, of in summary.known.items()]
    out += [f"- `{shown_path(f, r)}`: {note}" for f, note in summary.notes.items()]
    out += [f"- `{shown_path(f, r)}` line {n or '?'} **refused, and it names a safety event (SAE/AE)**: in no week's "
            "report until it is fixed and ingested again" for f, n in summary.safety_rejects]
    return ("\n## Files\n\n" + "\n".join(out) + "\n") if out else ""


def _run_name() -> str:
    """`ingest-all-logs`; never raises, whatever the parameters."""
    params = flow_run.parameters
    paths = params.get("paths") or []
    if not isinstance(paths, list | tuple):
        paths = [paths]
    one = len(paths) == 1
    what = name_part(shown_path(str(paths[0]), entry_redactor()).rsplit("/", 1)[-1], "none") if one \
        else f"{len(paths)}-paths"
    return f"ingest-{name_part(params.get('project'), 'all')}-{what}"


@flow(name="ingest-logs", flow_run_name=_run_name, log_prints=False, **RUN_HOOKS)
def ingest_logs(paths: SourcePaths, project: OptionalProjectId = "", force: ReRead = False,
                replace: Replace = False) -> IngestSummary:
    """Ingest daily notes, JSONL/NDJSON, CSV and LoCoMo files found under `paths` (recursive).

    An unchanged file (same size, mtime and content fingerprint) is skipped, an appended one adds only its
    new lines, a rewritten one is replaced; bad lines land in `rejects` with a reason and the good lines of
    the same file still load. `force` re-reads every file whole (same rows when nothing changed). A file's
    content is known by its head, whatever its name (rotation, copies); rows are never removed by the source
    changing, only superseded by a rewrite or by `replace` (docs/input.md).
    """
    settings = load_settings()
    logger = get_run_logger()
    try:
        params: dict[str, Any] = ({"paths": paths, "project": project} | ({"force": True} if force else {})
                                  | ({"replace": True} if replace else {}))
        with tracked_run(settings, "ingest-logs", params) as counts:
            files, skipped = discover_files(ingest_paths(settings, paths))
            redactor = redactor_for(settings)  # a file name may hold a phone number
            documents = [shown_path(s, redactor) for s in skipped if s.lower().endswith(".json")]
            if documents:
                logger.warning("skipped %d .json file(s) holding one JSON document, not log lines or LoCoMo: %s",
                               len(documents), ", ".join(d.rsplit("/", 1)[-1] for d in documents[:5]))
            summary = IngestSummary(skipped_files=len(skipped), skipped_documents=documents)
            since, read_paths = utc_now(), []
            batches = file_batches([(f, file_size(f)) for f in files], settings.ingest.batch_files)
            for i, batch in enumerate(batches, start=1):
                label = f"{i}/{len(batches)}"
                for result in ingest_batch(settings, batch, project.strip() or None, force, label=label,
                                           replace=replace):
                    summary.add(result)
                    read_paths.append(result.path)
                report("ingest", summary.files, len(files))
                logger.info("batch %s: %d/%d files read", label, summary.files, len(files))
            summary.safety_rejects = safety_rejects(settings, read_paths, since)
            if summary.safety_rejects:
                logger.warning("%d refused line(s) name a safety event (SAE/AE) and are in no week's report until "
                               "fixed: %s", len(summary.safety_rejects), ", ".join(
                                   f"{shown_path(f, redactor).rsplit('/', 1)[-1]}:{n or ''}"
                                   for f, n in summary.safety_rejects[:5]))
            # Paths may hold a phone number: the run's row keeps how many, the artifact names them (redacted).
            counts.update({k: v for k, v in summary.as_dict().items()
                           if k not in ("duplicates", "known", "refused_files", "notes", "safety_rejects")})
            counts.update(duplicate_entries=summary.duplicate_entries, known_files=len(summary.known),
                          refused_files=len(summary.refused_files), safety_rejects=len(summary.safety_rejects))
            counts.message = summary.message()
            logger.info("ingested %d files: %s; +%d entries, %d rejects", summary.files, summary.by_status,
                        summary.entries_added, sum(summary.rejects.values()))
            create_markdown_artifact(markdown=_summary_markdown(summary, run_notes()), key="ingest-summary",
                                     description="What the last ingest read and refused")
    except REFUSALS as exc:  # one line (the holder and what to do), no traceback
        return refused(exc)
    return Completed(message=counts.message, data=summary)  # the UI shows the message on the run page
