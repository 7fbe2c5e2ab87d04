"""`chronicle memory forget|edit|changes`: take memories out for good, correct one, and see who did which and why."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer

from chronicle.cli.common import HomeOpt, console, fail, read_settings
from chronicle.cli.output import Format, emit, format_option

ByOpt = typer.Option(None, "--by", help="Who asks (default: your login name); recorded with the change.")


def _files(files: list[Any]) -> str:
    return ", ".join(f"{f.name} (-{f.lines})" if not f.skipped else f"{f.name}: {f.skipped}" for f in files) or "none"


def forget(memory_id: str | None = typer.Argument(None, help="Memory id (or a unique prefix)."),
           about: str | None = typer.Option(None, "--about", help="Every memory about this person."),
           match: str | None = typer.Option(None, "--match", help="Memories whose text contains this."),
           dry_run: bool = typer.Option(False, "--dry-run", help="Show what would go; change nothing."),
           reason: str = typer.Option("", "--reason", help="Why (required unless --dry-run); recorded."),
           by: str | None = ByOpt, fmt: Format = format_option(), home: str | None = HomeOpt) -> None:
    """Forget memories: out of the store and the knowledge files (backed up first), never distilled again."""
    from chronicle.param_checks import ActionNeeded
    from chronicle.services.forget import Selector, SelectorError
    from chronicle.services.forget import forget as forget_memories

    settings = read_settings(home)
    try:
        result = forget_memories(settings, Selector(memory_id, about, match), reason=(reason or "dry run")
                                 if dry_run else reason, by=by, dry_run=dry_run)
    except (SelectorError, ActionNeeded) as exc:
        fail(str(exc), code=2 if isinstance(exc, SelectorError) else 1)
    rows = [{"id": m.id, "about": m.subject, "file": m.target_file, "memory": m.content} for m in result.memories]
    if fmt is not Format.table:
        emit(rows, fmt)
        return
    if not result.memories:
        gone = f" ({', '.join(result.already)} forgotten before)" if result.already else ""
        console.print(f"nothing to forget{gone}")
        return
    emit(rows, title=f"{'would forget' if result.dry_run else 'forgot'} {len(result.memories)} memories")
    verb = "would change" if result.dry_run else "changed (backups in .backups/)"
    console.print(f"knowledge files {verb}: {_files(result.files)}")
    if result.change_id:
        console.print(f"recorded as {result.change_id}; re-distilling these notes will not bring them back")


def edit(memory_id: str = typer.Argument(..., help="Memory id (or a unique prefix)."),
         text: str = typer.Option(..., "--text", help="What the memory should say instead."),
         summary: str | None = typer.Option(None, "--summary", help="Its one-line summary (default: the text)."),
         reason: str = typer.Option("corrected", "--reason", help="Why; recorded."),
         by: str | None = ByOpt, home: str | None = HomeOpt) -> None:
    """Correct one memory (redacted, re-embedded, knowledge-file lines rewritten); never undone by distilling."""
    from chronicle.param_checks import ActionNeeded
    from chronicle.services.forget import SelectorError
    from chronicle.services.forget import edit as edit_memory

    try:
        result = edit_memory(read_settings(home), memory_id, text, reason=reason, by=by, summary=summary)
    except (SelectorError, ActionNeeded) as exc:
        fail(str(exc), code=2 if isinstance(exc, SelectorError) else 1)
    if result.change_id is None:
        console.print(f"{result.before.id} already says that; nothing changed")
        return
    console.print(f"{result.after.id} corrected ({result.change_id}): {result.after.content}")
    console.print(f"knowledge files changed: {_files(result.files)}")


def changes(limit: int = typer.Option(20, "--limit", min=1), fmt: Format = format_option(),
            home: str | None = HomeOpt) -> None:
    """Forgotten and corrected memories: who, why, which files (newest first)."""
    from chronicle.storage.db import read
    from chronicle.storage.memory.tombstones import changes as list_changes

    rows = read(read_settings(home), list_changes, limit)
    emit([asdict(c) for c in rows], fmt, empty="no memory was forgotten or corrected")


def register(memory: typer.Typer) -> None:
    for command in (forget, edit, changes):
        memory.command()(command)
