"""What each file writes (planned before the write window) and the one write window of a batch."""

from __future__ import annotations

import csv
import gzip
import io
import json
import threading
import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from chronicle.ingest.identity import sha256_hex
from chronicle.ingest.lines import blank_binary_lines, decode_lines, escape, mostly_binary, sniff_encoding, split_lines
from chronicle.ingest.model import Entry, FileResult, Reject
from chronicle.ingest.structured import locomo_entries, note_entries
from chronicle.services.ingest_read import foreign_encoding, utf16_without_bom
from chronicle.settings import Settings
from chronicle.storage import ingest_history, ingest_sql, raw_logs
from chronicle.storage.db import transactions
from chronicle.weeks import utc_now

_HASH_THREAD_BYTES = 1 << 20
"""Prefixes above this are hashed by a thread beside the SQL stage; below, starting a thread costs more."""


def _sha256_in_background(data: memoryview) -> Future[str]:
    """The hash computed by a thread of its own (hashlib releases the GIL), collected before the commit.

    A thread per call, not a pool: a pool made at import would be copied without its thread into a forked
    child (the warm runner forks one per command) and never run the job."""
    future: Future[str] = Future()

    def run() -> None:
        try:
            future.set_result(sha256_hex(data))
        except BaseException as exc:  # handed to whoever waits for it
            future.set_exception(exc)

    threading.Thread(target=run, name="ingest-hash", daemon=True).start()
    return future


@dataclass
class Write:
    """What one file will write, decided before the write window opens."""

    state: dict[str, Any] | None  # its `ingest_files` row (None: a file that could not be read keeps its row)
    status: str  # ingested | appended | known | rejected
    table: pa.Table | None = None  # JSON lines for the SQL stage
    mode: str = "fresh"  # fresh: new content | resumed: read on from an offset | reread: the content read whole
    rejects: list[Reject] = field(default_factory=list)
    entries: list[Entry] | None = None  # notes and LoCoMo: parsed here, unchanged ids kept
    replace: bool = False  # `--replace`: every row read from this path before is superseded
    clear_rejects: bool = False  # the path's stored rejects were about content it no longer holds
    prev_id: str | None = None  # new content at a path that held `prev_id`: a rewrite if it repeats it
    same_as: str | None = None
    result: FileResult | None = None  # decided without writing (unchanged)
    path_key: str = ""
    basis: dict[str, tuple | None] = field(default_factory=dict)  # stored states the plan was made on, by path

    @property
    def path(self) -> str:
        return self.path_key or str((self.state or {}).get("path"))

    @property
    def file_id(self) -> str | None:
        return (self.state or {}).get("file_id") if self.status != "rejected" else None

    @classmethod
    def done(cls, result: FileResult) -> Write:
        return cls(None, result.status, result=result, path_key=result.path)

    @classmethod
    def refused(cls, key: str, reject: Reject) -> Write:
        return cls(None, "rejected", rejects=[reject], path_key=key)


# --- whole-file verdicts ------------------------------------------------------------------------
def plan_text(key: str, fmt: str, data: bytes, compressed: bool) -> tuple[bytes, Reject | None]:
    """The content to parse (decompressed) or why the whole file is refused."""
    if compressed:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            return b"", Reject(key, None, None, "invalid_gzip", f"not a readable gzip file: {exc}", escape(data, 4096))
    if fmt == "unsupported":
        return data, Reject(key, None, None, "unsupported_format", "not .jsonl/.ndjson/.csv/.json or a daily note",
                            escape(data, 4096))
    if not data.strip():
        return data, Reject(key, None, None, "empty_file", f"{len(data)} bytes of nothing", escape(data))
    refusal = utf16_without_bom(key, data)
    if refusal:
        return data, refusal
    if mostly_binary(data):
        return data, Reject(key, None, None, "binary_file", "NUL bytes on most lines: not a text file", escape(data))
    encoding = sniff_encoding(data[:4])
    if encoding != "utf-8":
        try:
            data.decode(encoding)
        except UnicodeDecodeError as exc:
            return data, Reject(key, None, None, "invalid_encoding", f"starts with a {encoding} byte-order mark "
                                f"but is not {encoding}: {exc}", escape(data, 4096))
    elif fmt != "jsonl" or b"\x00" in data:  # JSON lines are checked by Arrow at C speed, the rest here
        return data, foreign_encoding(key, data)
    return data, None


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


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# --- what a file writes ---------------------------------------------------------------------------
def plan_lines(settings: Settings, project: str | None, state: dict[str, Any], data: bytes,
               ident: dict[str, Any] | None, path: Path, mode: str, replace: bool = False) -> Write:
    """The write of a readable file: UTF-8 JSON lines read on from `ident`'s offset (`resumed`), or the whole
    content (`fresh`/`reread`: CSV, BOM-marked encodings, notes and LoCoMo are always read whole)."""
    fmt = state["format"]
    status = "ingested" if mode != "resumed" else "appended"
    if fmt == "jsonl" and sniff_encoding(data[:4]) == "utf-8":
        write = _plan_json_lines(settings, state, data, ident if mode == "resumed" else None)
        if write.mode == "fresh" and mode == "reread":
            write.mode = "reread"
        write.replace = replace
        return write
    if mode == "resumed" and len(data) == ident["parsed_bytes"]:
        state.update(parsed_bytes=ident["parsed_bytes"], parsed_lines=ident["parsed_lines"],
                     prefix_sha256=ident["prefix_sha256"])
        return Write(state, status, table=ingest_sql.lines_table([], []), mode="resumed")
    mode = "reread" if mode == "resumed" else mode  # grown: read whole again, stored ids kept
    encoding = sniff_encoding(data[:4])
    binary: list[Reject] = []
    state["parsed_bytes"], state["prefix_sha256"] = len(data), sha256_hex(data)
    if encoding == "utf-8":
        data, binary = blank_binary_lines(data, source_file=state["path"])  # refused per line, kept whole
    text = data.decode(encoding)  # other encodings were checked by plan_text
    if fmt in ("jsonl", "csv"):
        if fmt == "jsonl":
            lines, line_nos, rejects = text.split("\n"), None, []
        else:
            lines, line_nos, rejects = _csv_to_json_lines(text, state["path"])
        state["parsed_lines"] = len(lines)
        table = ingest_sql.lines_table(lines, line_nos or range(1, len(lines) + 1))
        return Write(state, status, table, mode=mode, rejects=binary + rejects, replace=replace)
    if fmt == "note":
        tz_project = project or settings.ingest.notes_project
        entries, rejects = note_entries(path, text, tz_project, settings.tz_for(tz_project),
                                        settings.ingest.max_line_bytes)
    else:
        tz = settings.tz_for(project) if project else settings.tz_for("")
        entries, rejects = locomo_entries(path, text, project, tz)
    state["parsed_lines"] = text.count("\n") + 1
    return Write(state, status, mode="reread", rejects=binary + rejects, entries=entries, replace=replace,
                 clear_rejects=True)


def _plan_json_lines(settings: Settings, state: dict, data: bytes, ident: dict | None) -> Write:
    start, first_line = 0, 1
    if ident is not None:
        start, first_line = ident["parsed_bytes"], ident["parsed_lines"] + 1
        if data[start : start + 1] == b"\n":  # the newline ending a last line read before
            start += 1
    chunk = data[start:]
    end = len(chunk)
    settled = time.time() - state["mtime_ns"] / 1e9 > settings.ingest.settle_s and state["mtime_ns"] >= 0
    if chunk and not chunk.endswith(b"\n") and not settled:
        tail_start = chunk.rfind(b"\n") + 1
        if not _is_json(chunk[tail_start:].decode("utf-8", "replace")):
            end = tail_start  # a writer may be mid-line: leave the tail for the next run
    body = chunk[:end]
    n_lines = body.count(b"\n") + (0 if body.endswith(b"\n") or not body else 1)
    # The prefix hash (a full read of the file) runs beside the SQL stage: hashlib releases the GIL.
    prefix = memoryview(data)[: start + end]
    state.update(parsed_bytes=start + end, parsed_lines=first_line - 1 + n_lines,
                 prefix_sha256=_sha256_in_background(prefix) if len(prefix) > _HASH_THREAD_BYTES
                 else sha256_hex(prefix))
    mode, status = ("resumed", "appended") if ident is not None else ("fresh", "ingested")
    if b"\x00" not in body:
        buffer, offsets = split_lines(body)
        try:
            table = ingest_sql.buffer_table(buffer, offsets, first_line)
        except pa.ArrowInvalid:
            pass  # not UTF-8 somewhere: the per-line path below finds the lines and refuses them
        else:
            return Write(state, status, table, mode=mode)
    foreign = foreign_encoding(state["path"], data) if ident is None else None
    if foreign:  # another encoding throughout: refused whole, naming it, never read as broken UTF-8
        state.update(file_id=None, parsed_bytes=len(data), prefix_sha256=sha256_hex(data))
        return Write(state, "rejected", rejects=[foreign], clear_rejects=True)
    text, rejects = decode_lines(body, source_file=state["path"], first_line_no=first_line)
    lines = text.split("\n")[:n_lines]
    table = ingest_sql.lines_table(lines, range(first_line, first_line + len(lines)))
    return Write(state, status, table, mode=mode, rejects=rejects)


# --- the one write window of a batch ----------------------------------------------------------------
def mark(state: dict[str, Any] | None) -> tuple | None:
    """What a plan assumed of a stored file state: which content, read how far."""
    return None if state is None else (state.get("file_id"), state.get("parsed_bytes"), state.get("content_sha256"))


def _stale(conn: Any, writes: list[Write]) -> set[str]:
    """Paths whose plan rests on a stored state another worker changed since (it wrote the same file first):
    written as planned, its lines would be stored twice. They are planned again on what is stored now."""
    paths = sorted({p for w in writes for p in w.basis})
    now = raw_logs.file_states(conn, paths)
    return {w.path for w in writes if any(mark(now.get(p)) != m for p, m in w.basis.items())}


def write_batch(settings: Settings, redact: Any, planned: list[Write], run_id: str | None) -> dict[str, FileResult]:
    """Write every planned file of a batch in one transaction; results by path. A file whose plan went stale
    while the window's guard was awaited has no result: the caller plans it again."""
    if not planned:
        return {}
    guard = [k for w in planned for k in raw_logs.ingest_guard(w.path)] + [
        f"ingest-id:{w.file_id}" for w in planned if w.file_id]
    run = run_id or ""
    # A lake commit conflict re-runs the whole window; the guard keeps two workers off one file.
    for attempt in transactions(settings, guard=guard):
        with attempt as conn:
            stale = _stale(conn, planned)
            writes = [w for w in planned if w.path not in stale]
            stored = [w for w in writes if w.file_id]
            ids = [w.file_id for w in stored if w.file_id]
            now = utc_now()
            changes = ingest_history.BatchChanges()
            before = raw_logs.count_rows(conn, ids)
            ingest_history.take_prior(conn, [w.file_id for w in stored if w.mode == "reread" and w.file_id],
                                      [w.path for w in stored if w.replace])
            raw_logs.clear_rejects(conn, [w.path for w in writes if w.clear_rejects])
            raw_logs.insert_entries(conn, [e for w in stored for e in w.entries or ()], now)
            lines = [ingest_sql.LinePart(w.path, w.file_id, w.state["format"], w.table)
                     for w in stored if w.table is not None and w.file_id and w.state]
            refused = ingest_sql.store_lines(
                conn, ingest_sql.batch_table(lines), resumed=[w.file_id for w in stored if w.mode == "resumed"],
                default_project=stored[0].state.get("project_id") if stored and stored[0].state else None,
                default_tz=settings.timezone, project_tz=settings.project_timezones,
                column_map=settings.ingest.column_map, max_line_bytes=settings.ingest.max_line_bytes, now=now,
            ) if lines else {}
            ingest_history.drop_duplicates(conn, ids, now, changes)
            ingest_history.supersede_rewritten(conn, {w.file_id: w.prev_id for w in stored if w.prev_id and w.file_id},
                                               now, run, changes)
            ingest_history.settle_prior(conn, now, run, changes)
            ingest_history.finish_batch(conn, changes, now)
            raw_logs.redact_project_ids(conn, ids, redact)
            raw_logs.insert_rejects(conn, [r for w in writes for r in w.rejects])
            after = raw_logs.count_rows(conn, ids)
            rejected = raw_logs.count_rejects(conn, [w.path for w in writes])
            for w in stored:
                _finish_state(w, after, rejected, changes)
            raw_logs.save_file_states(conn, [w.state for w in writes if w.state is not None])
    return {w.path: _result(w, before, after, refused, changes) for w in writes}


def _finish_state(w: Write, after: dict[str, int], rejected: dict[str, int],
                  changes: ingest_history.BatchChanges) -> None:
    state = w.state or {}
    state["entries"], state["rejects"] = after.get(w.file_id or "", 0), rejected.get(w.path, 0)
    state["duplicates"] = sum(changes.duplicates.get(w.file_id or "", {}).values())
    if isinstance(state["prefix_sha256"], Future):
        state["prefix_sha256"] = state["prefix_sha256"].result()


def _shown_id(file_id: str) -> str:
    """The path of a file identity (`path#head` for the second content seen at a path)."""
    return file_id.split("#", 1)[0]


def _result(w: Write, before: dict[str, int], after: dict[str, int], refused: dict[str, dict[str, int]],
            changes: ingest_history.BatchChanges) -> FileResult:
    fmt = (w.state or {}).get("format", "unknown")
    counts = dict(refused.get(w.path, {}))
    for r in w.rejects:
        counts[r.reason] = counts.get(r.reason, 0) + 1
    reason = (w.state or {}).get("note")
    if w.status == "rejected" and w.rejects:
        reason = f"{w.rejects[0].reason}: {w.rejects[0].detail}"
    if not w.file_id:
        return FileResult(w.path, fmt, w.status, 0, 0, counts, reason=reason)
    fid = w.file_id
    gone_ids = {fid, *([w.prev_id] if w.prev_id else [])}
    removed = sum(changes.superseded.get(i, 0) for i in gone_ids)
    if w.replace:
        gone_ids.add(w.path)
        removed = max(removed, changes.superseded_at_path.get(w.path, 0))
    added = max(0, after.get(fid, 0) - before.get(fid, 0) + changes.superseded.get(fid, 0))
    weeks = sorted({wk for i in gone_ids for wk in changes.weeks_of.get(i, ())})
    dups = {_shown_id(of): n for of, n in changes.duplicates.get(fid, {}).items()}
    return FileResult(w.path, fmt, w.status, added, removed, counts, dups,
                      _shown_id(w.same_as) if w.same_as else None, weeks, reason)
