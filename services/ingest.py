"""Ingest files: decide full read / append / skip per file, parse, and write a batch in one transaction."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import threading
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from chronicle.storage import ingest_sql, raw_logs
from chronicle.storage.db import connect, transactions

from chronicle.ingest.detect import detect_format, gzipped
from chronicle.ingest.fingerprint import file_fingerprint, fingerprint
from chronicle.ingest.lines import (
    blank_binary_lines,
    decode_lines,
    escape,
    mostly_binary,
    sniff_encoding,
    split_lines,
)
from chronicle.ingest.model import Entry, FileResult, Reject
from chronicle.ingest.structured import locomo_entries, note_entries
from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings


def _sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


_HASH_THREAD_BYTES = 1 << 20
"""Prefixes above this are hashed by a thread beside the SQL stage; below, starting a thread costs more."""


def _sha256_in_background(data: memoryview) -> Future[str]:
    """The hash computed by a thread of its own (hashlib releases the GIL), collected before the commit.

    A thread per call, not a pool: a pool made at import would be copied without its thread into a forked
    child (the warm runner forks one per command) and never run the job."""
    future: Future[str] = Future()

    def run() -> None:
        try:
            future.set_result(_sha256(data))
        except BaseException as exc:  # handed to whoever waits for it
            future.set_exception(exc)

    threading.Thread(target=run, name="ingest-hash", daemon=True).start()
    return future


def _csv_to_json_lines(text: str, file: str) -> tuple[list[str], list[int], list[Reject]]:
    """CSV rows as JSON objects, so they go through the same SQL stage as JSONL."""
    reader = csv.reader(io.StringIO(text))
    out, line_nos, rejects = [], [], []
    header: list[str] | None = None
    for row in reader:
        if header is None:
            header = [h.strip().lstrip("\ufeff") for h in row]
            twice = sorted({h for h in header if header.count(h) > 1})
            if twice:  # which column is meant is unknown: refuse the file rather than keep one of them
                return [], [], [Reject(file, reader.line_num, None, "duplicate_column",
                                       f"column(s) {', '.join(map(repr, twice))} appear more than once in the "
                                       "header; rename one", text)]
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            rejects.append(Reject(file, reader.line_num, None, "csv_field_count",
                                  f"{len(row)} fields, header has {len(header)}", ",".join(row)))
            continue
        out.append(json.dumps(dict(zip(header, row, strict=True)), ensure_ascii=False))
        line_nos.append(reader.line_num)
    return out, line_nos, rejects


@dataclass
class _Write:
    """What one changed file will write, decided before the write window opens."""

    state: dict[str, Any]
    status: str  # ingested | appended | rejected
    table: pa.Table | None = None  # JSON lines for the SQL stage
    full: bool = True  # the file's stored rows and rejects go first (a first or whole re-read)
    rejects: list[Reject] = field(default_factory=list)  # refused before SQL (whole file, encoding, CSV, notes)
    entries: list[Entry] | None = None  # notes and LoCoMo: parsed here, unchanged ids kept

    @property
    def path(self) -> str:
        return str(self.state["path"])


class FileIngestor:
    """Reads paths against their stored state. Parsing happens before the write window opens.

    `ingest_many` reads a batch of files and writes all of them in ONE window (one transaction, one SQL
    scan of all their lines): thousands of small files cost a handful of commits, not one each, while every
    file keeps its own state row (content hash, offsets), its rejects with file and line, and its result.
    """

    def __init__(self, settings: Settings, project: str | None = None) -> None:
        self.settings = settings
        self.project = project
        self._redact = Redactor.build(settings.redact_extra_patterns).redact  # project ids (one gate at ingest)

    def ingest(self, path: Path, *, force: bool = False) -> FileResult:
        """Read `path` if it changed since last time (or always, with `force`: re-read whole)."""
        return self.ingest_many([path], force=force)[0]

    def ingest_many(self, paths: Sequence[Path], *, force: bool = False) -> list[FileResult]:
        """Read each of `paths` that changed (all, with `force`) and write them together; results in order.

        A kill -9 at any point leaves the batch wholly written or not at all (one transaction), so a rerun
        reads again exactly the files the killed run did not commit."""
        resolved = list(dict.fromkeys(p.resolve() for p in paths))
        keys = [str(p) for p in resolved]
        prev: dict[str, dict[str, Any]] = {}
        if not force:
            with connect(self.settings) as conn:
                prev = raw_logs.file_states(conn, keys)
        results: dict[str, FileResult] = {}
        writes: list[_Write] = []
        for path in resolved:
            planned = self._plan(path, prev.get(str(path)))
            if isinstance(planned, FileResult):
                results[planned.path] = planned
            else:
                writes.append(planned)
        results.update(self._write(writes))
        return [results[str(p.resolve())] for p in paths]

    def _plan(self, path: Path, prev: dict[str, Any] | None) -> _Write | FileResult:
        key, fmt = str(path), detect_format(path)
        stat = path.stat()
        settled = time.time() - stat.st_mtime > self.settings.ingest_settle_s
        if prev and self._unchanged(prev, path, stat.st_size, stat.st_mtime_ns, settled):
            return FileResult(key, fmt, "unchanged")
        data = path.read_bytes()
        state = {"path": key, "project_id": self.project, "format": fmt, "size": len(data),
                 "mtime_ns": stat.st_mtime_ns, "parsed_bytes": len(data), "parsed_lines": 0,
                 "prefix_sha256": "", "entries": 0, "rejects": 0, "content_sha256": fingerprint(data)}
        compressed = gzipped(path)  # sizes and fingerprints above are the file's; what is parsed is its content
        data, whole_file_reject = _gunzip(key, data) if compressed else (data, None)
        whole_file_reject = whole_file_reject or self._whole_file_reject(key, fmt, data)
        if whole_file_reject:
            state.update(prefix_sha256=_sha256(b""))
            return _Write(state, "rejected", rejects=[whole_file_reject])
        encoding = sniff_encoding(data[:4])
        if fmt == "jsonl" and encoding == "utf-8" and not compressed:  # a .gz is re-read whole, never appended
            return self._plan_lines(state, data, prev, settled)
        binary: list[Reject] = []
        # A whole-file format is re-read whole: its state keeps the hash of the bytes read (not of its size).
        state["prefix_sha256"] = _sha256(data)
        if encoding == "utf-8":
            data, binary = blank_binary_lines(data, source_file=key)  # refused per line, kept whole
        text = data.decode(encoding)  # other encodings were checked by _whole_file_reject
        if fmt == "jsonl":
            lines = text.split("\n")
            state.update(parsed_lines=len(lines))
            return _Write(state, "ingested", ingest_sql.lines_table(lines, range(1, len(lines) + 1)),
                          rejects=binary)
        if fmt == "csv":
            lines, line_nos, rejects = _csv_to_json_lines(text, key)
            state.update(parsed_lines=len(lines))
            return _Write(state, "ingested", ingest_sql.lines_table(lines, line_nos), rejects=binary + rejects)
        return self._plan_structured(state, path, fmt, text, binary)

    @staticmethod
    def _unchanged(prev: dict, path: Path, size: int, mtime_ns: int, settled: bool) -> bool:
        """Same size, mtime and content fingerprint — and no unterminated tail left to judge now it has settled."""
        if prev["size"] != size or prev["mtime_ns"] != mtime_ns:
            return False
        if prev["parsed_bytes"] < size and settled:
            return False  # a tail left "for its writer", who never came back: judge it now
        return prev.get("content_sha256") == file_fingerprint(path, size)

    # --- whole-file verdicts ----------------------------------------------------------------
    def _whole_file_reject(self, key: str, fmt: str, data: bytes) -> Reject | None:
        if fmt == "unsupported":
            return Reject(key, None, None, "unsupported_format", "not .jsonl/.ndjson/.csv/.json or a daily note",
                          escape(data, 4096))
        if not data.strip():
            return Reject(key, None, None, "empty_file", f"{len(data)} bytes of nothing", escape(data))
        if mostly_binary(data):
            return Reject(key, None, None, "binary_file", "NUL bytes on most lines: not a text file", escape(data))
        if fmt != "jsonl" or sniff_encoding(data[:4]) != "utf-8":
            try:
                data.decode(sniff_encoding(data[:4]))
            except UnicodeDecodeError as exc:
                return Reject(key, None, None, "invalid_encoding", str(exc), escape(data))
        return None

    # --- JSONL: append-aware -----------------------------------------------------------------
    def _plan_lines(self, state: dict, data: bytes, prev: dict | None, settled: bool) -> _Write:
        start, first_line = 0, 1
        resumed = bool(
            prev and prev["format"] == "jsonl" and len(data) >= prev["parsed_bytes"]
            and _sha256(data[: prev["parsed_bytes"]]) == prev["prefix_sha256"]
        )
        if resumed:
            start, first_line = prev["parsed_bytes"], prev["parsed_lines"] + 1
            if data[start : start + 1] == b"\n":  # the newline ending a last line read before
                start += 1
        chunk = data[start:]
        end = len(chunk)
        if chunk and not chunk.endswith(b"\n") and not settled:
            tail_start = chunk.rfind(b"\n") + 1
            if not _is_json(chunk[tail_start:].decode("utf-8", "replace")):
                end = tail_start  # a writer may be mid-line: leave the tail for the next run
        body = chunk[:end]
        n_lines = body.count(b"\n") + (0 if body.endswith(b"\n") or not body else 1)
        # The prefix hash (a full read of the file) runs beside the SQL stage: hashlib releases the GIL.
        # Small files are hashed here: a thread per file would cost more than the hash.
        prefix = memoryview(data)[: start + end]
        state.update(parsed_bytes=start + end, parsed_lines=first_line - 1 + n_lines,
                     prefix_sha256=_sha256_in_background(prefix) if len(prefix) > _HASH_THREAD_BYTES
                     else _sha256(prefix))
        status = "appended" if resumed else "ingested"
        if b"\x00" not in body:
            buffer, offsets = split_lines(body)
            try:
                table = ingest_sql.buffer_table(buffer, offsets, first_line)
            except pa.ArrowInvalid:
                pass  # not UTF-8 somewhere: the per-line path below finds the lines and refuses them
            else:
                return _Write(state, status, table, full=not resumed)
        text, rejects = decode_lines(body, source_file=state["path"], first_line_no=first_line)
        lines = text.split("\n")[:n_lines]
        table = ingest_sql.lines_table(lines, range(first_line, first_line + len(lines)))
        return _Write(state, status, table, full=not resumed, rejects=rejects)

    # --- notes and LoCoMo: re-read whole, keep unchanged ids ---------------------------------
    def _plan_structured(self, state: dict, path: Path, fmt: str, text: str, binary: list[Reject]) -> _Write:
        s = self.settings
        if fmt == "note":
            project = self.project or s.notes_project
            entries, rejects = note_entries(path, text, project, s.tz_for(project), s.max_line_bytes)
        else:
            tz = s.tz_for(self.project) if self.project else s.tz_for("")
            entries, rejects = locomo_entries(path, text, self.project, tz)
        state.update(parsed_lines=text.count("\n") + 1)
        return _Write(state, "ingested", full=False, rejects=binary + rejects, entries=entries)

    # --- the one write window of a batch -----------------------------------------------------
    def _write(self, writes: list[_Write]) -> dict[str, FileResult]:
        if not writes:
            return {}
        s = self.settings
        paths = [w.path for w in writes]
        lines = [w for w in writes if w.table is not None]
        structured = [w for w in writes if w.entries is not None]
        guard = [k for p in paths for k in raw_logs.ingest_guard(p)]
        # A lake commit conflict re-runs the whole window; the guard keeps two workers off one file.
        for attempt in transactions(s, guard=guard):
            with attempt as conn:
                before = raw_logs.count_files(conn, paths)
                raw_logs.forget_files(conn, [w.path for w in writes if w.full])
                removed = raw_logs.remove_entries_not_in(
                    conn, {w.path: [e.entry_id for e in w.entries or ()] for w in structured})
                raw_logs.clear_rejects(conn, [w.path for w in structured])
                raw_logs.insert_entries(conn, [e for w in structured for e in w.entries or ()])
                refused = ingest_sql.store_lines(
                    conn, ingest_sql.batch_table([(w.path, w.state["format"], w.table) for w in lines
                                                  if w.table is not None]),
                    resumed=[w.path for w in lines if not w.full], default_project=self.project,
                    default_tz=s.timezone, project_tz=s.project_timezones, column_map=s.column_map,
                    max_line_bytes=s.max_line_bytes,
                ) if lines else {}
                raw_logs.redact_project_ids(conn, paths, self._redact)
                raw_logs.insert_rejects(conn, [r for w in writes for r in w.rejects])
                after = raw_logs.count_files(conn, paths)
                for w in writes:
                    w.state["entries"], w.state["rejects"] = after.get(w.path, (0, 0))
                    if isinstance(w.state["prefix_sha256"], Future):
                        w.state["prefix_sha256"] = w.state["prefix_sha256"].result()
                raw_logs.save_file_states(conn, [w.state for w in writes])
        results: dict[str, FileResult] = {}
        for w in writes:
            counts = dict(refused.get(w.path, {}))
            for r in w.rejects:
                counts[r.reason] = counts.get(r.reason, 0) + 1
            rows_before, rows_after = before.get(w.path, (0, 0))[0], w.state["entries"]
            if w.entries is not None:  # kept ids stay; the rows not in the new version went
                gone = removed.get(w.path, 0)
                added, lost = rows_after - (rows_before - gone), gone
            else:
                added, lost = max(0, rows_after - rows_before), max(0, rows_before - rows_after)
            results[w.path] = FileResult(w.path, w.state["format"], w.status, added, lost, counts)
        return results


def _gunzip(key: str, data: bytes) -> tuple[bytes, Reject | None]:
    """The content of a gzip file, or a whole-file reject saying why it cannot be read."""
    try:
        return gzip.decompress(data), None
    except (OSError, EOFError, zlib.error) as exc:
        return b"", Reject(key, None, None, "invalid_gzip", f"not a readable gzip file: {exc}", escape(data, 4096))


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
