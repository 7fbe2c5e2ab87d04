"""Plain records the parsers produce and the store consumes."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any

# Event types the weekly stats know by name; any other type is kept and counted under its own name.
STANDARD_TYPES = ("message", "enrollment", "ae", "sae", "deviation", "query", "decision")


@dataclass(frozen=True)
class Entry:
    """One raw log entry, already placed in UTC and in its project's local ISO week."""

    entry_id: str
    project_id: str
    source: str
    source_file: str
    line_no: int | None
    byte_offset: int | None
    ts: datetime
    local_date: date
    iso_year: int
    iso_week: int
    actor: str | None
    type: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def week_number(self) -> int:
        return self.iso_year * 100 + self.iso_week


@dataclass(frozen=True)
class Reject:
    """Input refused with a reason; the raw text is kept so nothing is silently dropped."""

    source_file: str
    line_no: int | None
    byte_offset: int | None
    reason: str
    detail: str
    raw: str

    @property
    def reject_id(self) -> str:
        return stable_id(self.source_file, self.line_no, self.byte_offset, self.reason)


@dataclass
class FileResult:
    """What ingesting one file did."""

    path: str
    format: str
    status: str  # ingested | appended | unchanged | known | rejected
    entries_added: int = 0
    entries_removed: int = 0
    rejects: dict[str, int] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    """Entries of this file another file already holds, by that file: stored once, counted once."""
    same_as: str | None = None
    """`known`: the file already read whose content this is (a rename, rotation, compressed rotation or copy)."""
    superseded_weeks: list[int] = field(default_factory=list)
    """Weeks whose rows a rewrite or `--replace` of this file superseded (their reports are now stale)."""
    reason: str | None = None
    """Why the file was refused whole, or a note on how it was read (`still being written`)."""


@dataclass
class IngestSummary:
    """What one ingest run did over all its files (the flow's result, artifact and `pipeline_runs` counts)."""

    files: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    entries_added: int = 0
    entries_removed: int = 0
    rejects: dict[str, int] = field(default_factory=dict)
    skipped_files: int = 0
    skipped_documents: list[str] = field(default_factory=list)
    """`.json` files in the folders that hold one JSON document (a ground truth, a config), not log lines."""
    duplicates: dict[str, dict[str, int]] = field(default_factory=dict)
    """file -> {file it repeats: entries}: entries stored once although two files hold them."""
    known: dict[str, str] = field(default_factory=dict)
    """file -> the file already read whose content it is (renamed, rotated, compressed or copied)."""
    refused_files: dict[str, str] = field(default_factory=dict)
    """file -> why it could not be read at all (permission, vanished, not a regular file, encoding, ...)."""
    notes: dict[str, str] = field(default_factory=dict)
    superseded_weeks: list[int] = field(default_factory=list)
    safety_rejects: list[tuple[str, int | None]] = field(default_factory=list)
    """(file, line) of lines this run refused that name a safety event (SAE, AE): in no report until fixed."""

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.by_status[result.status] = self.by_status.get(result.status, 0) + 1
        self.entries_added += result.entries_added
        self.entries_removed += result.entries_removed
        for reason, n in result.rejects.items():
            self.rejects[reason] = self.rejects.get(reason, 0) + n
        if result.duplicates:
            self.duplicates[result.path] = dict(result.duplicates)
        if result.same_as:
            self.known[result.path] = result.same_as
        if result.reason:
            (self.refused_files if result.status == "rejected" else self.notes)[result.path] = result.reason
        self.superseded_weeks = sorted({*self.superseded_weeks, *result.superseded_weeks})

    @property
    def duplicate_entries(self) -> int:
        return sum(n for per_file in self.duplicates.values() for n in per_file.values())

    @property
    def readable(self) -> int:
        """Files of which at least something could be read (not rejected whole)."""
        return self.files - self.by_status.get("rejected", 0)

    @property
    def nothing_read(self) -> bool:
        """Files were found, yet this run read not one entry, no file was already in (unchanged), and something
        was refused: every file empty, binary, unreadable or made only of broken lines. A file of broken lines
        is not rejected whole (its lines are, one by one) but counts as nothing read all the same."""
        refused = sum(self.rejects.values()) + self.by_status.get("rejected", 0)
        return bool(self.files) and self.entries_added == 0 and not self.by_status.get("unchanged") and refused > 0

    def message(self) -> str:
        """The sentence the run ends with: what it read, or why it read nothing."""
        refused = sum(self.rejects.values())
        if not self.files:
            return f"nothing to do: no log files under the given paths ({self.skipped_files} other files skipped)"
        if self.nothing_read:
            return (f"nothing could be read: {self.files} file(s), {refused} refused line(s) or file(s) (table rejects)"
                    + self.safety_warning())
        if self.by_status.get("unchanged") == self.files:
            return f"nothing to do: all {self.files} file(s) unchanged since they were ingested"
        return (f"{self.files} file(s) {dict(sorted(self.by_status.items()))}: +{self.entries_added} entries"
                + (f", {self.entries_removed} superseded (weeks {', '.join(map(str, self.superseded_weeks))} stale)"
                   if self.entries_removed else "")
                + (f", {self.duplicate_entries} duplicate(s) of entries in other files stored once"
                   if self.duplicates else "")
                + f", {refused} rejects"
                + (f", {len(self.refused_files)} file(s) unreadable" if self.refused_files else "")
                + self.safety_warning())

    def safety_warning(self) -> str:
        n = len(self.safety_rejects)
        return (f"; {n} refused line(s) name a safety event (SAE/AE) and are in no week's report until fixed and "
                "ingested again (table rejects)") if n else ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def refused_lines(where: list[tuple[str, int | None]], most: int) -> str:
    """`file:line, …` of the first `most` refused lines, and how many more there are."""
    shown = ", ".join(f"{path}:{line or '?'}" for path, line in where[:most])
    return shown + (f" and {len(where) - most} more" if len(where) > most else "")


def stable_id(*parts: object) -> str:
    """Deterministic id from parts: the same input read twice gets the same id."""
    joined = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:24]
