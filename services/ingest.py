"""Ingest files: recognise each file by its content, decide what of it is new, parse, write a batch at once.

A file is known by its head (`chronicle.ingest.identity`), not its path: a renamed, rotated, compressed or
copied file is the file already read and is read on from where that one stopped; a path whose head changed
holds new content, read from its start. What was stored is never deleted by the source changing: a rewrite
supersedes (`storage/ingest_history.py`), and only `--replace` replaces. A file that cannot be read is a
reason (`services/ingest_read.py`), never the end of the run.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from chronicle.ingest.detect import detect_format, gzipped, resolved
from chronicle.ingest.fingerprint import file_fingerprint, fingerprint
from chronicle.ingest.identity import Head, candidate_heads, head_of, identity_for, sha256_hex
from chronicle.ingest.model import FileResult, Reject
from chronicle.redaction.configured import redactor_for
from chronicle.services.ingest_read import FileBytes, read_file
from chronicle.services.ingest_write import Write, mark, plan_lines, plan_text, write_batch
from chronicle.settings import Settings
from chronicle.storage import db, ingest_history, raw_logs
from chronicle.storage.db import connect

_MAX_STALE_ROUNDS = 100
"""Rounds in a row whose every plan another worker made stale before it could be written (each round that
writes something, e.g. the next of several copies of one content, starts the count again)."""


@dataclass
class _Read:
    """A file read whole, before its identity is resolved."""

    path: str
    fmt: str
    got: FileBytes
    content: bytes  # what is parsed: the file's bytes, decompressed for a `.gz`
    prev: dict[str, Any] | None
    ident: dict[str, Any] | None = None  # the stored state of the content this is, when known

    @property
    def line_format(self) -> bool:
        return self.fmt in ("jsonl", "csv")


class FileIngestor:
    """Reads paths against their stored state. Parsing happens before the write window opens.

    `ingest_many` reads a batch of files and writes all of them in ONE window (one transaction, one SQL
    scan of all their lines): thousands of small files cost a handful of commits, not one each, while every
    file keeps its own state row (identity, offsets), its rejects with file and line, and its result.
    """

    def __init__(self, settings: Settings, project: str | None = None, run_id: str | None = None) -> None:
        self.settings = settings
        self.project = project
        self.run_id = run_id
        self._redact = redactor_for(settings).redact  # project ids (one gate at ingest)

    def ingest(self, path: Path, *, force: bool = False, replace: bool = False) -> FileResult:
        """Read `path` if it changed since last time (or always, with `force`: re-read whole)."""
        return self.ingest_many([path], force=force, replace=replace)[0]

    def ingest_many(self, paths: Sequence[Path], *, force: bool = False, replace: bool = False) -> list[FileResult]:
        """Read each of `paths` that changed (all, with `force`) and write them together; results in order.

        `replace`: the rows read from these paths before are superseded and the files read again whole.
        A kill -9 at any point leaves a write window wholly written or not at all (one transaction), so a rerun
        reads again exactly the files the killed run did not commit. Two paths holding the same content are
        written in consecutive windows, so the second reads on from where the first stopped."""
        keys = [str(resolved(p)) for p in paths]
        pending = list(dict.fromkeys(keys))
        results: dict[str, FileResult] = {}
        stalled = 0  # rounds in a row in which every plan went stale: nothing was written
        while pending:
            writes, deferred = self._plan_round(pending, force, replace)
            done = len(results)
            results.update({w.path: w.result for w in writes if w.result is not None})
            results.update(write_batch(self.settings, self._redact, [w for w in writes if w.result is None],
                                       self.run_id))
            # Deferred (the same content twice in one round) and stale (another worker wrote it first) paths.
            pending = [k for k in dict.fromkeys([*deferred, *(w.path for w in writes)]) if k not in results]
            stalled = 0 if len(results) > done else stalled + 1
            if stalled == _MAX_STALE_ROUNDS:
                raise RuntimeError(f"{len(pending)} file(s) changed under every plan made for them "
                                   f"({stalled} rounds), e.g. {pending[0]}: is another ingest writing them in a loop?")
        return [results[k] for k in keys]

    # --- planning ---------------------------------------------------------------------------
    def _plan_round(self, keys: list[str], force: bool, replace: bool) -> tuple[list[Write], list[str]]:
        with connect(self.settings) as conn:
            prev = raw_logs.file_states(conn, keys)
        writes: list[Write] = []
        reads: list[_Read] = []
        for key in keys:
            got = self._read(key, prev.get(key), force or replace)
            (reads if isinstance(got, _Read) else writes).append(got)
        self._resolve(reads)
        claimed: set[str] = set()
        deferred: list[str] = []
        for read in reads:
            write = self._decide(read, force, replace)
            write.basis = {read.path: mark(read.prev)}
            if read.ident is not None:
                write.basis[read.ident["path"]] = mark(read.ident)
            if write.file_id and write.file_id in claimed:
                deferred.append(read.path)  # the same content twice in one window: the second reads on after
                continue
            if write.file_id:
                claimed.add(write.file_id)
            writes.append(write)
        return writes, deferred

    def _read(self, key: str, prev: dict[str, Any] | None, again: bool) -> _Read | Write:
        if prev and not again:
            try:
                st = os.stat(key)
            except OSError:
                st = None  # read_file names the reason
            if st and stat_mod.S_ISREG(st.st_mode) and self._unchanged(prev, key, st.st_size, st.st_mtime_ns):
                return Write.done(FileResult(key, prev["format"], "unchanged"))
        got = read_file(key)
        if isinstance(got, Reject):  # nothing stored is touched: the file may come back
            return Write.refused(key, got)
        path = Path(key)
        fmt = detect_format(path)
        content, refusal = plan_text(key, fmt, got.data, gzipped(path))
        if refusal:
            state = self._state(key, fmt, got, b"", None, None)
            state["parsed_bytes"] = got.size  # nothing left to read until it changes
            return Write(state, "rejected", rejects=[refusal], clear_rejects=True)
        return _Read(key, fmt, got, content, prev)

    def _unchanged(self, prev: dict, key: str, size: int, mtime_ns: int) -> bool:
        """Same size, mtime and content fingerprint — and no unterminated tail left to judge now it has settled."""
        if prev["size"] != size or prev["mtime_ns"] != mtime_ns:
            return False
        settled = time.time() - mtime_ns / 1e9 > self.settings.ingest.settle_s
        if prev["parsed_bytes"] < size and settled and not key.lower().endswith(".gz"):
            return False  # a tail left "for its writer", who never came back: judge it now
        return prev.get("content_sha256") == file_fingerprint(Path(key), size)

    def _resolve(self, reads: list[_Read]) -> None:
        """Each read's identity: the content its path held (if it still starts with it), else a known file whose
        head it starts with (looked up for the whole round in one query)."""
        unknown: list[tuple[_Read, list[Head]]] = []
        self._taken: set[str] = set()
        for read in reads:
            if not read.line_format:
                continue
            prev = read.prev
            if prev and prev.get("file_id") and _same_content(prev, read.fmt, read.content):
                read.ident = prev
            else:
                unknown.append((read, candidate_heads(read.content, skip_first_line=read.fmt == "csv")))
        if not unknown:
            return
        with connect(self.settings) as conn:
            found = ingest_history.known_heads(conn, [(h.length, h.sha256) for _, heads in unknown for h in heads])
            self._taken = ingest_history.taken_ids(conn, [r.path for r, _ in unknown])
        for read, heads in unknown:
            # The longest head known: the most specific match.
            match = next((found[(h.length, h.sha256)] for h in reversed(heads) if (h.length, h.sha256) in found), None)
            read.ident = match

    def _decide(self, read: _Read, force: bool, replace: bool) -> Write:
        """What one read file writes: new lines of known content, a re-read, or new content."""
        ident, key = read.ident, read.path
        head = head_of(read.content)
        if not read.line_format:  # notes and LoCoMo: known by path, re-read whole, unchanged ids kept
            state = self._state(key, read.fmt, read.got, read.content, key, head)
            return plan_lines(self.settings, self.project, state, read.content, None, Path(key), "reread", replace)
        if ident is not None:
            pb = ident["parsed_bytes"]
            extends = len(read.content) >= pb and sha256_hex(read.content[:pb]) == ident["prefix_sha256"]
            other = ident["path"] != key
            state = self._state(key, read.fmt, read.got, read.content, ident["file_id"], head)
            if extends and not (force or replace):
                write = plan_lines(self.settings, self.project, state, read.content, ident, Path(key), "resumed")
                if other:
                    write.same_as = ident["path"]
                    write.status = "known"
                return write
            if not other or force or replace:  # the same content edited in place, or re-read on request
                return plan_lines(self.settings, self.project, state, read.content, None, Path(key), "reread",
                                  replace)
        file_id = identity_for(key, head, self._taken)
        state = self._state(key, read.fmt, read.got, read.content, file_id, head)
        write = plan_lines(self.settings, self.project, state, read.content, None, Path(key), "fresh", replace)
        prev_id = (read.prev or {}).get("file_id")
        write.prev_id = prev_id if prev_id and prev_id != file_id else None
        write.clear_rejects = True
        return write

    def _state(self, key: str, fmt: str, got: FileBytes, content: bytes, file_id: str | None,
               head: Head | None) -> dict[str, Any]:
        return {"path": key, "project_id": self.project, "format": fmt, "size": got.size,
                "mtime_ns": got.mtime_ns, "parsed_bytes": 0, "parsed_lines": 0, "prefix_sha256": sha256_hex(b""),
                "entries": 0, "rejects": 0, "content_sha256": fingerprint(got.data), "file_id": file_id,
                "head_len": head.length if head else None, "head_sha256": head.sha256 if head else None,
                "duplicates": 0, "note": ("still being written: read what was there; the rest next run"
                                          if got.growing else None)}


def _same_content(prev: dict[str, Any], fmt: str, content: bytes) -> bool:
    """Whether the path still holds the content it held when last read (its head is still there)."""
    if prev.get("head_len") is not None:
        return Head(prev["head_len"], prev["head_sha256"]).matches(content)
    # Read before heads were kept: the same content if the part read then is still its start.
    pb = prev["parsed_bytes"]
    return prev["format"] == fmt and len(content) >= pb and sha256_hex(content[:pb]) == prev["prefix_sha256"]


def safety_rejects(settings: Settings, paths: Sequence[str] | None = None,
                   since: datetime | None = None) -> list[tuple[str, int | None]]:
    """(file, line) of refused lines that name a safety event (SAE, AE, SUSAR) — of `paths` refused at or after
    `since` (a run's new rejects), or all of them: such a line is in no week's stats or report until it is fixed and
    ingested again, so the run and the desk say so rather than count it among the rejects."""
    return db.read(settings, raw_logs.refused_safety_lines, paths, since)
