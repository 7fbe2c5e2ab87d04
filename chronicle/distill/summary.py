"""The run summary as Markdown (Prefect artifact): counts and file names only, never memory text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from chronicle.distill.tally import Tally


@dataclass(frozen=True)
class DistillSummary:
    """What one distillation run did: its window, engine, the tally of chunks/events/files, store size."""

    after: date
    until: date
    engine: str
    model: str
    prompt_version: str
    tally: Tally
    store_rows: int
    project: str | None = None
    """Only this project's notes were read (`--project`); None = every project's."""

    def message(self) -> str:
        """The run's one line (its state message in the UI and `pipeline_runs.message`), what needs a person named:
        chunks quarantined (the summary's reasons) and memories waiting for approval."""
        t = self.tally
        parts = [f"{t.chunks} chunk(s) of {self.after}..{self.until}: {t.distilled} distilled, {t.cached} unchanged",
                 f"{t.memories} memories"]
        if t.quarantined:
            parts.append(f"{t.quarantined} chunk(s) quarantined (reasons in the run's summary)")
        if t.proposals_new:
            parts.append(f"{t.proposals_new} new proposal(s) to approve or reject (`chronicle memory proposals`)")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The flat form stored in `pipeline_runs.counts` and rendered into the artifact."""
        return {"window": {"after": self.after.isoformat(), "until": self.until.isoformat()}, "project": self.project,
                "engine": self.engine, "model": self.model, "prompt_version": self.prompt_version,
                **self.tally.as_dict(), "store_rows": self.store_rows}


def _table(title: str, counts: dict[str, Any]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in counts.items()) or "| — | 0 |"
    return f"| {title} | count |\n|---|---|\n{rows}\n"


def summary_markdown(summary: dict[str, Any]) -> str:
    """The run's Prefect artifact: counts and file names only."""
    files = "\n".join(
        f"| {name} | {f['added']} | {f['already_present']} | {f.get('over_daily_cap', 0)} | "
        f"{f.get('moved_out_for_size', 0)} | "
        f"{'yes' if f['backup'] else 'no'} | {'not written: not UTF-8' if f.get('skipped') else ''} |"
        for name, f in sorted(summary["files"].items())
    ) or "| — | 0 | 0 | 0 | 0 | no | |"
    return (
        f"# Memory distillation {summary['window']['after']} .. {summary['window']['until']}\n\n"
        f"engine: {summary['engine']} ({summary['model']}, {summary['prompt_version']}); "
        f"entries: {summary['entries']}; chunks: {summary['chunks']} (cached {summary['chunks_cached']}, "
        f"distilled {summary['chunks_distilled']}, quarantined {summary['chunks_quarantined']}, "
        f"failed {summary['chunks_failed']}); LLM calls: {summary['llm_calls']}; "
        f"memories in store: {summary['store_rows']}\n\n"
        f"kept for approval: {summary.get('proposals', 0)} memories → "
        f"{summary.get('proposals_new', 0)} new proposal(s), "
        f"suspected injection: {summary.get('suspected_injection', 0)}; ledger rows reconciled: "
        f"{summary.get('ledger_reconciled', 0)}; stale temp files removed: {summary.get('temp_files_removed', 0)}\n\n"
        f"{_table('event', summary['events'])}\n{_table('rejected (reason)', summary['rejected'])}\n"
        f"{_table('stored, not written to a file (why)', summary.get('kept_out_of_files', {}))}\n"
        f"{_table('warning', summary['warnings'])}\n{_table('redacted (kind)', summary['redactions'])}\n"
        f"| file | bullets added | already present | over daily cap | moved out for size | backup | note |\n"
        f"|---|---|---|---|---|---|---|\n{files}\n"
    )
