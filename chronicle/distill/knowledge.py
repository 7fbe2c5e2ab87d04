"""Knowledge files on disk: safe paths, timestamped backups, atomic replace, one writer at a time.

`sections.apply` decides the new text; this module only decides whether and how it lands: nothing
changes -> no write and no backup; otherwise back up the old file, write a temp file in the same folder,
fsync, `os.replace`. File names come from the allowlist and must resolve inside the workspace, so neither
settings nor an LLM reply can point a write elsewhere (`../x`, `/etc/passwd`, a symlink out).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from chronicle.distill.sections import Item, Stats, apply, fit
from chronicle.markup import inert
from chronicle.redaction.redactor import Redactor
from chronicle.redaction.text import Redacted, gate
from chronicle.settings import KNOWLEDGE_FILES

BACKUP_DIR = ".backups"
LOCK_NAME = ".chronicle-knowledge.lock"


class UnsafePathError(ValueError):
    """A knowledge-file path that is not one of the six files directly inside the workspace."""


@dataclass(frozen=True)
class KnowledgeWrite:
    name: str
    changed: bool
    stats: Stats
    backup: Path | None = None
    skipped: str | None = None
    """Why the file was left alone (e.g. it is not UTF-8); None when it was synced."""


def effective_action(action: str, name: str, overwrite_allowed: list[str]) -> tuple[str, bool]:
    """(action to apply, downgraded?): `overwrite` only for files the settings allow, else `append`."""
    if action == "overwrite" and name not in overwrite_allowed:
        return "append", True
    return action, False


def safe_path(workspace: Path, name: str) -> Path:
    """`workspace/name`, refusing anything but an allowlisted name that resolves directly inside it."""
    if name not in KNOWLEDGE_FILES:
        raise UnsafePathError(f"not a knowledge file: {name[:80]!r}")
    root = workspace.resolve()
    path = (root / name).resolve()
    if path.parent != root:
        raise UnsafePathError(f"{name} resolves outside the workspace")
    return path


def sync_file(workspace: Path, name: str, items: list[Item], *, keep: int, redactor: Redactor,
              now: datetime | None = None, cap: int | None = None, budget: int = 0,
              importance: Callable[[set[str]], Mapping[str, float]] | None = None) -> KnowledgeWrite:
    """Place `items` in `workspace/name` under the workspace lock; back up and replace only on change.

    `cap`: at most this many bullets per note day in the file (`sections.apply`). `budget`: the managed bullets'
    text at most this many characters, the least important leaving the file (`sections.fit`; 0 = none);
    `importance` looks up the bullets' memories that are not among `items` (by id)."""
    workspace.mkdir(parents=True, exist_ok=True)
    path = safe_path(workspace, name)
    # The knowledge-file sink's gate: an agent loads these files, so only `Redacted` text is written (text a
    # caller already redacted passes as it is; anything else is redacted here, by the operator's `redactor`).
    items = [item if isinstance(item.text, Redacted) else replace(item, text=gate(item.text, redactor))
             for item in items]
    # Markup from a log is text: no HTML, image or link a Markdown viewer would act on (URLs stay readable).
    items = [replace(item, text=inert(item.text, defang=False)) for item in items]
    with FileLock(str(workspace / LOCK_NAME)):
        remove_stale_temps(workspace, name)
        # Bytes, not read_text: universal newlines would turn a human's CRLF into LF on our next write.
        raw = path.read_bytes() if path.exists() else b""
        try:
            old = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A human saved it as GBK (or anything else): guessing and re-encoding could corrupt their text,
            # so the file is left exactly as it is and the run goes on with the others.
            why = (f"{name} is not UTF-8 (invalid byte at offset {exc.start}); left unchanged — "
                   "convert it to UTF-8 to let distillation write to it")
            return KnowledgeWrite(name, False, Stats(), skipped=why)
        new, stats = apply(old, items, cap)
        if budget:
            known = {item.memory_id: item.importance for item in items}

            def weigh(ids: set[str]) -> dict[str, float]:
                others = ids - set(known)
                return {**(importance(others) if importance and others else {}), **known}

            new, stats.moved_out = fit(new, budget, weigh)
        if new == old:
            return KnowledgeWrite(name, False, stats)
        backup = backup_file(workspace, path, now or datetime.now(UTC), keep) if path.exists() else None
        atomic_write(path, new)
    return KnowledgeWrite(name, True, stats, backup)


def remove_stale_temps(workspace: Path, name: str | None = None) -> list[str]:
    """Delete temp files a killed write left behind (`.MEMORY.md.x1y2.tmp`, `.backups/.MEMORY.md.<stamp>.tmp`);
    call under the workspace lock, which every writer holds while its temp file exists. Returns their names."""
    names = [name] if name else list(KNOWLEDGE_FILES)
    removed = []
    for folder in (workspace, workspace / BACKUP_DIR):
        if not folder.is_dir():
            continue
        for n in names:
            for tmp in folder.glob(f".{n}.*.tmp"):
                if tmp.is_file() or tmp.is_symlink():
                    with contextlib.suppress(FileNotFoundError):
                        tmp.unlink()
                    removed.append(tmp.name)
    return removed


def clean_workspace(workspace: Path) -> list[str]:
    """`remove_stale_temps` for every knowledge file, under the workspace lock (start of a run)."""
    if not workspace.is_dir():
        return []
    with FileLock(str(workspace / LOCK_NAME)):
        return remove_stale_temps(workspace)


def backup_file(workspace: Path, path: Path, now: datetime, keep: int) -> Path:
    """Copy `path` to `.backups/<name>.<UTC timestamp>` and keep the newest `keep` (at least one)."""
    folder = (workspace.resolve() / BACKUP_DIR).resolve()
    if not folder.is_relative_to(workspace.resolve()):
        raise UnsafePathError(f"{BACKUP_DIR} resolves outside the workspace")
    folder.mkdir(exist_ok=True)
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = folder / f"{path.name}.{stamp}"
    n = 1
    while target.exists():  # two writes within one microsecond: keep both
        target, n = folder / f"{path.name}.{stamp}-{n}", n + 1
    # Copy under a temp name, then rename: a process killed mid-copy leaves no truncated backup behind.
    partial = folder / f".{target.name}.tmp"
    shutil.copy2(path, partial)
    os.replace(partial, target)
    # Timestamps sort lexicographically, so name order is age order.
    backups = sorted(p for p in folder.iterdir() if p.name.startswith(f"{path.name}.") and p.is_file())
    for old in backups[: max(0, len(backups) - max(1, keep))]:
        old.unlink()
    return target


def atomic_write(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of it, even if the process dies mid-write."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes 0600 files; keep the old file's mode (a human's choice), a new one stays its owner's only.
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    # The rename itself is durable only once the directory entry is flushed (POSIX; a no-op elsewhere).
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
