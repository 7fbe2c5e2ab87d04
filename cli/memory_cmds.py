"""`chronicle distill` and `chronicle memory search|tags|list|reindex`: thin shells over the flow and the store."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import date
from typing import Any

import typer
from rich.table import Table

from chronicle.distill.summary import DistillSummary
from chronicle.settings import Settings
from cli import proposal_cmds
from cli.common import console, err, load_settings, progress_bar, run_flow

HomeOpt = typer.Option(None, "--home", help="Data folder (overrides CHRONICLE_HOME).")
_HIDDEN = {"fts_text", "merged_hashes"}
DEMO_QUERIES = ("王老师晚上几点以后不要推送通知？", "Which LLM endpoint is configured?")


def _date(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(f"expected YYYY-MM-DD, got {value!r}") from exc


def run_distill(settings: Settings, days: int | None, until: date | None,
                project: str | None = None) -> DistillSummary:
    from flows.distill_memory import distill_memory

    with progress_bar():
        return run_flow(settings, distill_memory, days, until, project)


def print_distill_summary(summary: DistillSummary) -> None:
    t = summary.tally
    console.print(
        f"window {summary.after} < day <= {summary.until}: {t.entries} entries, {t.chunks} "
        f"chunks ({t.cached} cached, {t.quarantined} quarantined); engine "
        f"{summary.engine} ({summary.model}); LLM calls {t.llm_calls}"
    )
    console.print(f"events: {t.as_dict()['events']}  memories in store: {summary.store_rows}")
    if t.redactions:
        console.print(f"redacted before distilling: {dict(sorted(t.redactions.items()))}")
    if t.rejected:
        console.print(f"[yellow]memories rejected: {dict(t.rejected)}[/]")
    if t.warnings:
        console.print(f"[yellow]warnings: {dict(t.warnings)}[/]")
    if t.kept_out:
        console.print(f"stored but not written to a knowledge file: {dict(t.kept_out)}")
    if t.suspected_injection:
        console.print(f"[red]suspected injection: {t.suspected_injection} (never written; see proposals)[/]")
    if t.proposals:
        console.print(f"[yellow]proposals waiting for approval: {t.proposals} ({t.proposals_new} new) — "
                      "chronicle memory proposals[/]")
    for f in t.files.values():
        if f.get("skipped"):
            err.print(f"[yellow]{f['skipped']}[/]")
    changed = [f"{name} (+{f['added']})" for name, f in sorted(t.files.items()) if f["changed"]]
    console.print(f"knowledge files changed: {', '.join(changed) or 'none'}")


def print_hits(query: str, hits: list[Any]) -> None:
    table = Table("score", "imp.", "file", "tags", "memory", title=f"memory search: {query}")
    for h in hits:
        table.add_row(f"{h.score:.3f}", f"{h.importance:.2f}", h.target_file, ", ".join(h.tags[:4]),
                      h.content if len(h.content) <= 120 else h.content[:119] + "…")
    console.print(table if hits else f"no memories match {query!r}")


def _rows(items: list[Any]) -> str:
    return json.dumps([{k: v for k, v in asdict(i).items() if k not in _HIDDEN} for i in items],
                      ensure_ascii=False, default=str, indent=2)


def demo_distill(settings: Settings) -> None:
    """Distill every ingested daily note of the notes project, then run a Chinese and an English search."""
    from services.distill import note_span
    from services.memory import search_memories

    span = note_span(settings, settings.notes_project)
    if span is None:
        console.print("no daily notes ingested; nothing to distill")
        return
    first, last = span
    print_distill_summary(run_distill(settings, (last - first).days + 1, last))
    console.print(f"knowledge files: {settings.workspace_dir}")
    for query in DEMO_QUERIES:
        print_hits(query, search_memories(settings, query, limit=3))


def register(app: typer.Typer) -> None:
    @app.command()
    def distill(days: int | None = typer.Option(None, "--days", min=1, help="Days of notes (default DISTILL_DAYS)."),
                until: str | None = typer.Option(None, "--until", help="Last day, YYYY-MM-DD (default today)."),
                project: str | None = typer.Option(None, "--project", "-p", help="Only this project's notes."),
                home: str | None = HomeOpt) -> None:
        """Distill recent daily notes into memories: vector store + knowledge files (idempotent)."""
        settings = load_settings(home)
        from flows.distill_memory import DistillIncomplete

        try:
            summary = run_distill(settings, days, _date(until), project)
        except DistillIncomplete as exc:
            err.print(f"[red]{exc}[/]")
            raise typer.Exit(1) from exc
        print_distill_summary(summary)

    memory = typer.Typer(help="Search and maintain the distilled memory.", no_args_is_help=True)

    @memory.command()
    def search(query: str = typer.Argument(...), tag: list[str] = typer.Option(None, "--tag", help="Any of these."),
               min_importance: float | None = typer.Option(None, "--min-importance", min=0.0, max=1.0),
               file: str | None = typer.Option(None, "--file", help="Knowledge file, e.g. USER.md."),
               limit: int = typer.Option(10, "--limit", min=1), as_json: bool = typer.Option(False, "--json"),
               home: str | None = HomeOpt) -> None:
        """Semantic + full-text search, ranked by relevance x 0.7 + importance x 0.3."""
        from services.memory import search_memories

        hits = search_memories(load_settings(home), query, tags=tag or None, min_importance=min_importance,
                               target_file=file, limit=limit)
        if as_json:
            print(_rows(hits))
        else:
            print_hits(query, hits)

    @memory.command()
    def tags(home: str | None = HomeOpt) -> None:
        """Tags with the number of memories carrying each."""
        from services.memory import tag_counts

        table = Table("tag", "memories")
        for name, n in tag_counts(load_settings(home)).items():
            table.add_row(name, str(n))
        console.print(table)

    @memory.command("list")
    def list_(limit: int = typer.Option(50, "--limit", min=1), tag: list[str] = typer.Option(None, "--tag"),
              file: str | None = typer.Option(None, "--file"), as_json: bool = typer.Option(False, "--json"),
              home: str | None = HomeOpt) -> None:
        """Memories, newest first."""
        from services.memory import list_memories

        rows = list_memories(load_settings(home), limit=limit, tags=tag or None, target_file=file)
        if as_json:
            print(_rows(rows))
            return
        table = Table("id", "imp.", "file", "source", "summary", title=f"{len(rows)} memories")
        for m in rows:
            table.add_row(m.id, f"{m.importance:.2f}", m.target_file, m.source, m.summary[:100])
        console.print(table)

    @memory.command()
    def reindex(home: str | None = HomeOpt) -> None:
        """Re-embed every memory with the configured EMBEDDING_MODEL (after changing it)."""
        from services.memory import reindex as reindex_all

        n = reindex_all(load_settings(home))
        console.print(f"re-embedded {n} memories")

    proposal_cmds.register(memory)
    app.add_typer(memory, name="memory")
