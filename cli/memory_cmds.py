"""`chronicle distill` and `chronicle memory search|tags|list|reindex`: thin shells over the flow and the store."""

from __future__ import annotations

from dataclasses import asdict
from datetime import date
from typing import TYPE_CHECKING, Any

import typer

from chronicle.cli import common, forget_cmds, proposal_cmds
from chronicle.cli.common import check, console, err, fail, progress_bar, read_settings, run_flow, settings_from_options
from chronicle.cli.output import Format, emit, format_option
from chronicle.settings import Settings

if TYPE_CHECKING:  # the distill engine imports the openai client: not on every command's start-up
    from chronicle.distill.summary import DistillSummary

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
    from chronicle.flows.distill_memory import distill_memory

    with progress_bar():
        return run_flow(settings, distill_memory, days or 0, until or "", project or "")


def print_distill_summary(summary: DistillSummary) -> None:
    t = summary.tally
    console.print(f"window {summary.after} < day <= {summary.until}: {t.entries} entries, {t.chunks} "
                  f"chunks ({t.cached} cached, {t.quarantined} quarantined); engine "
                  f"{summary.engine} ({summary.model}); LLM calls {t.llm_calls}")
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
        # Many memories may repeat one proposal (the same fact on several days): count both.
        console.print(f"[yellow]kept for approval: {t.proposals} memories (protected file or suspected injection)"
                      f" → {t.proposals_new} new proposal(s) — chronicle memory proposals[/]")
    for f in t.files.values():
        if f.get("skipped"):
            err.print(f"[yellow]{f['skipped']}[/]")
    changed = [f"{name} (+{f['added']})" for name, f in sorted(t.files.items()) if f["changed"]]
    console.print(f"knowledge files changed: {', '.join(changed) or 'none'}")


ORDER_MARKER = "(reads as an order to the assistant)"
"""Shown after a memory the injection screen flagged: it is data someone wrote, not an instruction to follow."""


def shown(hit: Any, tz: Any = None) -> str:
    """The memory's text, with "(superseded on DATE)" when a newer memory replaced the fact (`tz`: the notes'), and
    `ORDER_MARKER` when it reads as an order to the assistant."""
    text = hit.content
    if getattr(hit, "superseded_by", ""):
        when = hit.superseded_at.astimezone(tz).date().isoformat() if hit.superseded_at else "?"
        text = f"{text} (superseded on {when})"
    return f"{text} {ORDER_MARKER}" if getattr(hit, "reads_as_order", False) else text


def shown_summary(memory: Any) -> str:
    return f"{memory.summary} {ORDER_MARKER}" if memory.reads_as_order else memory.summary


def print_hits(query: str, hits: list[Any], tz: Any = None) -> None:
    emit([{"score": f"{h.score:.3f}", "imp.": f"{h.importance:.2f}", "file": h.target_file, "tags": ", ".join(h.tags),
           "about": h.subject, "memory": shown(h, tz)} for h in hits], title=f"memory search: {query}",
         empty=f"no memories match {query!r}")


def _say_unknown_mentions(settings: Settings, about: str) -> None:
    """On stderr: the memories `--about` left out because the notes did not say whose they are."""
    from chronicle.services.memory import unknown_subject_mentions

    count = unknown_subject_mentions(settings, about)
    if count:
        err.print(f"{count} memor{'y' if count == 1 else 'ies'} of unknown person mention {about!r}; "
                  f"add --include-mentions to search them too.")


def _rows(items: list[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in asdict(i).items() if k not in _HIDDEN} for i in items]


def demo_distill(settings: Settings) -> None:
    """Distill every ingested daily note of the notes project, then run a Chinese and an English search."""
    from chronicle.services.memory import search_memories
    from chronicle.storage.db import read
    from chronicle.storage.memory.events import note_date_range

    span = read(settings, note_date_range, settings.ingest.notes_project)  # (first, last) note day, None without notes
    if span is None:
        console.print("no daily notes ingested; nothing to distill")
        return
    first, last = span
    print_distill_summary(run_distill(settings, (last - first).days + 1, last))
    console.print(f"knowledge files: {settings.workspace_dir}")
    for query in DEMO_QUERIES:
        print_hits(query, search_memories(settings, query, limit=3))


def _fail_if_damaged(settings: Settings, exc: BaseException | None = None) -> None:
    """A damaged LanceDB folder (unreadable manifest, missing data file): one line with the repair, no traceback."""
    from chronicle.storage.memory_health import check, explain

    problem = explain(settings, exc) if exc is not None else check(settings)
    if problem:
        fail(problem)


def distill(days: int | None = typer.Option(None, "--days", min=1, help="Days of notes (default DISTILL_DAYS)."),
            until: str | None = typer.Option(None, "--until", help="Last day, YYYY-MM-DD (default today)."),
            project: str | None = typer.Option(None, "--project", "-p", help="Only this project's notes."),
            home: str | None = common.HomeOpt) -> None:
    """Distill recent daily notes into memories: vector store + knowledge files (idempotent)."""
    settings = settings_from_options(home)
    from chronicle.services.param_checks import distill_window

    check(distill_window, settings, days, until, project, names=("--days", "--until", "--project"))
    from chronicle.param_checks import ActionNeeded
    from chronicle.services.memory import check_embedding_model

    _fail_if_damaged(settings)
    try:
        check_embedding_model(settings)
    except ActionNeeded as exc:  # an upgraded home: one line saying what to do, not a failed run's traceback
        fail(str(exc))
    from chronicle.flows.distill_memory import DistillIncomplete

    try:
        summary = run_distill(settings, days, _date(until), project)
    except DistillIncomplete as exc:
        err.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from exc
    print_distill_summary(summary)


def memory_search(query: str = typer.Argument(...), tag: list[str] = typer.Option(None, "--tag", help="Any of these."),
                  min_importance: float | None = typer.Option(None, "--min-importance", min=0.0, max=1.0),
                  file: str | None = typer.Option(None, "--file", help="Knowledge file, e.g. USER.md."),
                  limit: int = typer.Option(10, "--limit", min=1), fmt: Format = format_option(),
                  about: str | None = typer.Option(None, "--about", help="Only memories about this person."),
                  as_of: str | None = typer.Option(None, "--as-of", help="What was current then, YYYY-MM-DD."),
                  include_mentions: bool = typer.Option(
                      False, "--include-mentions", help="With --about: also memories of unknown person naming them."),
                  as_json: bool = typer.Option(False, "--json", hidden=True, help="Same as --format json."),
                  home: str | None = common.HomeOpt) -> None:
    """Semantic + full-text search, ranked by relevance x 0.7 + importance x 0.3; current facts first."""
    from chronicle.param_checks import ActionNeeded, ParameterError
    from chronicle.services.memory import search_memories

    settings = read_settings(home)
    try:
        hits = search_memories(settings, query, tags=tag or None, min_importance=min_importance,
                               target_file=file, limit=limit, about=about, as_of=_date(as_of),
                               include_mentions=include_mentions)
    except (ActionNeeded, ParameterError) as exc:
        fail(str(exc))
    except (RuntimeError, OSError) as exc:
        _fail_if_damaged(settings, exc)
        raise
    if about and not include_mentions:
        _say_unknown_mentions(settings, about)
    fmt = Format.json if as_json else fmt
    if fmt is Format.table:
        print_hits(query, hits, settings.tz_for(settings.ingest.notes_project))
    else:
        emit(_rows(hits), fmt)


def memory_tags(fmt: Format = format_option(), home: str | None = common.HomeOpt) -> None:
    """Tags with the number of memories carrying each."""
    from chronicle.services.memory import tag_counts

    emit([{"tag": name, "memories": n} for name, n in tag_counts(read_settings(home)).items()], fmt,
         columns=["tag", "memories"], empty="no tags yet")


def memory_list(limit: int = typer.Option(50, "--limit", min=1), tag: list[str] = typer.Option(None, "--tag"),
                file: str | None = typer.Option(None, "--file"), fmt: Format = format_option(),
                as_json: bool = typer.Option(False, "--json", hidden=True, help="Same as --format json."),
                home: str | None = common.HomeOpt) -> None:
    """Memories, newest first."""
    from chronicle.services.memory import list_memories

    settings = read_settings(home)
    try:
        rows = list_memories(settings, limit=limit, tags=tag or None, target_file=file)
    except (RuntimeError, OSError) as exc:
        _fail_if_damaged(settings, exc)
        raise
    if as_json or fmt is not Format.table:
        emit(_rows(rows), Format.json if as_json else fmt)
        return
    emit([{"id": m.id, "imp.": f"{m.importance:.2f}", "file": m.target_file, "source": m.source,
           "summary": shown_summary(m)} for m in rows], title=f"{len(rows)} memories", empty="no memories yet")


def memory_reindex(home: str | None = common.HomeOpt) -> None:
    """Re-embed every memory with the configured EMBEDDING_MODEL (after changing it)."""
    from chronicle.services.memory import reindex as reindex_all

    n = reindex_all(read_settings(home))
    console.print(f"re-embedded {n} memories")


def register(app: typer.Typer) -> None:
    app.command()(distill)
    memory = typer.Typer(help="Search and maintain the distilled memory.", no_args_is_help=True)
    for name, command in (("search", memory_search), ("tags", memory_tags), ("list", memory_list),
                          ("reindex", memory_reindex)):
        memory.command(name)(command)
    proposal_cmds.register(memory)
    forget_cmds.register(memory)
    app.add_typer(memory, name="memory")
