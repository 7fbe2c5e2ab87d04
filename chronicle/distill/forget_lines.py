"""Taking forgotten memories out of knowledge files, and rewriting a corrected one's bullet.

Only Chronicle's managed sections are touched (`sections`: between its begin/end markers); a bullet is found
by the memory id (or, for a bullet whose id is no stored memory's, the content hash) in its marker. A section
left without bullets goes too. The file lands the way a distillation writes it (`knowledge`): under the
workspace lock, the old file backed up to `.backups/` first, then an atomic replace — and nothing at all when
nothing changes, or when the caller only asks what would change (`dry_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from chronicle.distill.knowledge import LOCK_NAME, atomic_write, backup_file, safe_path
from chronicle.distill.sections import _MARK, HASH_CHARS, _sections, escape
from chronicle.settings import KNOWLEDGE_FILES


@dataclass(frozen=True)
class LineChange:
    """What one knowledge file lost (or would lose)."""

    name: str
    lines: int
    """Bullets removed (forget) or rewritten (correct)."""
    backup: Path | None = None
    skipped: str | None = None


@dataclass(frozen=True)
class Marks:
    """Which bullets a change is about: by memory id, or by content hash where the bullet's id is not one of
    `keep_ids` (the rows that stay: two people saying the same words share a hash, never an id)."""

    ids: frozenset[str]
    hashes: frozenset[str]
    keep_ids: frozenset[str] = frozenset()

    def hit(self, line: str) -> bool:
        mark = _MARK.search(line)
        if not mark:
            return False
        if mark.group("id") in self.ids:
            return True
        return mark.group("id") not in self.keep_ids and mark.group("hash") in {h[:HASH_CHARS] for h in self.hashes}


def drop_lines(text: str, marks: Marks) -> tuple[str, int]:
    """`text` without the managed bullets `marks` names (and without a managed section left empty)."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for begin, end, _, _ in _sections(lines):
        hit = [i for i in range(begin + 1, end) if marks.hit(lines[i])]
        left = [i for i in range(begin + 1, end) if _MARK.search(lines[i]) and i not in hit]
        drop.update(hit)
        if hit and not left:
            drop.update(range(begin, end + 1))
            if begin > 0 and not lines[begin - 1].strip() and (end + 1 >= len(lines) or not lines[end + 1].strip()):
                drop.add(begin - 1)  # the blank line our section brought along
    removed = sum(1 for i in drop if _MARK.search(lines[i]))
    return "".join(line for i, line in enumerate(lines) if i not in drop), removed


def rewrite_lines(text: str, marks: Marks, new_text: str, new_hash: str) -> tuple[str, int]:
    """`text` with the managed bullets `marks` names stating `new_text` (marker: same id, the new hash)."""
    lines = text.splitlines(keepends=True)
    n = 0
    for begin, end, _, _ in _sections(lines):
        for i in range(begin + 1, end):
            mark = _MARK.search(lines[i])
            if not mark or not marks.hit(lines[i]):
                continue
            ending = lines[i][len(lines[i].rstrip("\r\n")):]
            head = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = (f"{head}- {escape(new_text)} <!-- chronicle:mem id={mark.group('id')} "
                        f"hash={new_hash[:HASH_CHARS]} -->{ending}")
            n += 1
    return "".join(lines), n


def change_files(workspace: Path, edit: Callable[[str], tuple[str, int]], *, keep: int,
                 dry_run: bool = False) -> list[LineChange]:
    """Apply `edit` (text -> (new text, lines changed)) to every knowledge file of the workspace that has any."""
    out: list[LineChange] = []
    if not workspace.is_dir():
        return out
    with FileLock(str(workspace / LOCK_NAME)):
        for name in KNOWLEDGE_FILES:
            path = safe_path(workspace, name)
            if not path.is_file():
                continue
            raw = path.read_bytes()
            try:
                old = raw.decode("utf-8")
            except UnicodeDecodeError:
                out.append(LineChange(name, 0, skipped=f"{name} is not UTF-8; left unchanged — check it by hand"))
                continue
            new, n = edit(old)
            if not n or new == old:
                continue
            if dry_run:
                out.append(LineChange(name, n))
                continue
            backup = backup_file(workspace, path, datetime.now(UTC), keep)
            atomic_write(path, new)
            out.append(LineChange(name, n, backup))
    return out

