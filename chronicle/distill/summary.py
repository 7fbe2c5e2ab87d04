"""The run summary as Markdown (Prefect artifact): counts and file names only, never memory text."""

from __future__ import annotations

from typing import Any


def _table(title: str, counts: dict[str, Any]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in counts.items()) or "| — | 0 |"
    return f"| {title} | count |\n|---|---|\n{rows}\n"


def summary_markdown(summary: dict[str, Any]) -> str:
    """The run's Prefect artifact: counts and file names only."""
    files = "\n".join(
        f"| {name} | {f['added']} | {f['already_present']} | {'yes' if f['backup'] else 'no'} |"
        for name, f in sorted(summary["files"].items())
    ) or "| — | 0 | 0 | no |"
    return (
        f"# Memory distillation {summary['window']['after']} .. {summary['window']['until']}\n\n"
        f"engine: {summary['engine']} ({summary['model']}, {summary['prompt_version']}); "
        f"entries: {summary['entries']}; chunks: {summary['chunks']} (cached {summary['chunks_cached']}, "
        f"distilled {summary['chunks_distilled']}, quarantined {summary['chunks_quarantined']}, "
        f"failed {summary['chunks_failed']}); LLM calls: {summary['llm_calls']}; "
        f"memories in store: {summary['store_rows']}\n\n"
        f"{_table('event', summary['events'])}\n{_table('rejected (reason)', summary['rejected'])}\n"
        f"{_table('warning', summary['warnings'])}\n{_table('redacted (kind)', summary['redactions'])}\n"
        f"| file | bullets added | already present | backup |\n|---|---|---|---|\n{files}\n"
    )
