"""Use cases of forgetting and correcting memories (`chronicle memory forget|edit`), and the distillation's
check that keeps forgotten texts out.

Order, for a run killed anywhere: the record, the tombstones and the events first (from then on no
distillation brings the texts back), then the knowledge files (backed up, atomic), then the store. Run again,
a forget finds what is left and finishes; a forget of what is gone changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from chronicle.distill.engine import ChunkOutcome
from chronicle.distill.forget_lines import LineChange, Marks, change_files, drop_lines, rewrite_lines
from chronicle.distill.proposals import ForgetRequest
from chronicle.distill.records import EventRow
from chronicle.distill.reply_checks import Rejection
from chronicle.memory.forget import Selector, SelectorError, Tombstone, is_forgotten, select, tombstones
from chronicle.memory.forget import corrected as corrected_row
from chronicle.memory.records import StoredMemory
from chronicle.redaction.configured import redactor_for
from chronicle.services.proposals import _who
from chronicle.settings import Settings
from chronicle.storage import proposals as proposals_sql
from chronicle.storage.db import read, write
from chronicle.storage.memory import tombstones as sql
from chronicle.storage.memory.rewrite import rewrite_row
from chronicle.storage.memory.store import MemoryStore

__all__ = ["EditResult", "ForgetResult", "Selector", "SelectorError", "decide_forget_request", "drop_forgotten", "edit",
           "forget"]


@dataclass(frozen=True)
class ForgetResult:
    memories: list[StoredMemory]
    """What was forgotten (or, with `dry_run`, would be)."""
    files: list[LineChange]
    dry_run: bool
    change_id: str | None = None
    """The `memory_changes` row; None when nothing changed."""
    already: list[str] | None = None
    """Ids asked for that an earlier forget took out already."""


@dataclass(frozen=True)
class EditResult:
    before: StoredMemory
    after: StoredMemory
    files: list[LineChange]
    change_id: str | None
    """None when the memory already said this."""


def _all_rows(store: MemoryStore) -> list[StoredMemory]:
    return store.list(limit=max(1, store.count()))


def forget(settings: Settings, selector: Selector, *, reason: str, by: str | None = None,
           dry_run: bool = False) -> ForgetResult:
    """Forget the memories `selector` names: store rows, knowledge-file bullets, and (tombstones) for good."""
    if not reason.strip():
        raise SelectorError("say why (--reason): the record of who forgot what keeps it")
    store = MemoryStore(settings, allow_model_mismatch=True)
    rows = _all_rows(store)
    chosen = select(rows, selector)
    if not chosen:
        already = read(settings, sql.forgotten_ids, selector.memory_id.strip()) if selector.memory_id else []
        return ForgetResult([], [], dry_run, already=already)
    ids = {r.id for r in chosen}
    stones = tombstones(chosen)
    marks = Marks(frozenset(ids), frozenset(s.content_hash for s in stones), frozenset(r.id for r in rows) - ids)
    edit_text = partial(drop_lines, marks=marks)
    if dry_run:
        return ForgetResult(chosen, change_files(settings.workspace_dir, edit_text, keep=settings.memory.backup_keep,
                                                 dry_run=True), True)
    change_id = _record(settings, "forget", selector.describe(), reason, by, chosen, stones)
    files = change_files(settings.workspace_dir, edit_text, keep=settings.memory.backup_keep)
    store.delete(sorted(ids))
    _finish(settings, change_id, files)
    return ForgetResult(chosen, files, False, change_id)


def edit(settings: Settings, memory_id: str, text: str, *, reason: str, by: str | None = None,
         summary: str | None = None) -> EditResult:
    """Correct one memory: its text (redacted, re-embedded), its knowledge-file bullets, and tombstones for what it
    said before, so no re-distillation of the old notes states the old fact again."""
    if not text.strip():
        raise SelectorError("the corrected text is empty (to remove the memory, use `chronicle memory forget`)")
    store = MemoryStore(settings)
    chosen = select(_all_rows(store), Selector(memory_id=memory_id))
    if not chosen:
        raise SelectorError(f"no memory {memory_id!r} (see `chronicle memory list`)")
    row, redactor = chosen[0], redactor_for(settings)
    after = corrected_row(row, redactor.redact(" ".join(text.split())), now=datetime.now(UTC),
                          summary=redactor.redact(summary) if summary else None)
    if after.content == row.content and after.summary == row.summary:
        return EditResult(row, row, [], None)
    stones = [s for s in tombstones([row]) if s.content_hash != after.content_hash]
    change_id = _record(settings, "correct", f"id={row.id}", reason or "corrected", by, [row], stones)
    marks = Marks(frozenset({row.id}), frozenset(s.content_hash for s in stones))
    files = change_files(settings.workspace_dir, partial(rewrite_lines, marks=marks, new_text=after.content,
                                                         new_hash=after.content_hash), keep=settings.memory.backup_keep)
    rewrite_row(store, after)
    _finish(settings, change_id, files)
    return EditResult(row, after, files, change_id)


def decide_forget_request(settings: Settings, request_id: str, *, approve: bool,
                          by: str | None = None) -> tuple[ForgetRequest, ForgetResult | None]:
    """A person's decision on an assistant's forget request (`chronicle memory approve|reject f-…`). Approved, it
    forgets what its selector names now, as `chronicle memory forget` would, recorded as the approver's change with
    the assistant's reason; rejected, nothing changes. A decided request stays decided."""
    found = read(settings, proposals_sql.forget_requests, None, request_id.strip())
    if len(found) != 1:
        raise SelectorError(f"no forget request {request_id!r}" if not found else
                            f"{request_id!r} matches {len(found)} forget requests")
    request, who = found[0], by or _who()
    if request.status != "pending":
        if (request.status == "approved") != approve:
            raise SelectorError(f"{request.request_id} was {request.status} on {request.decided_at:%Y-%m-%d}")
        return request, None
    done, change_id = None, None
    if approve:
        selector = Selector(request.memory_id, request.about, request.match)
        why = f"{request.source} asked: {request.reason}"
        done = forget(settings, selector, reason=why, by=who)
        # Nothing left to forget: an approval killed after its forget and before this row finished it (or another
        # forget did); the request is tied to that change when there is one.
        redact = redactor_for(settings).redact
        change_id = done.change_id or read(settings, sql.last_change, "forget", redact(selector.describe()),
                                           redact(" ".join(why.split())))
    write(settings, lambda conn: proposals_sql.decide_forget_request(
        conn, request.request_id, "approved" if approve else "rejected", who, change_id))
    return read(settings, proposals_sql.forget_requests, None, request.request_id)[0], done


def _record(settings: Settings, kind: str, selector: str, reason: str, by: str | None,
            rows: list[StoredMemory], stones: list[Tombstone]) -> str:
    """The change, its tombstones and one event per memory, in one transaction; returns the change id."""
    redact = redactor_for(settings).redact
    change_id = f"{kind}-{uuid.uuid4().hex[:12]}"
    who, why = redact(by or _who()), redact(" ".join(reason.split()))
    change = sql.ChangeRecord(change_id, kind, who, why, redact(selector), [r.id for r in rows], [], [])
    event = "FORGET" if kind == "forget" else "CORRECT"
    events = [EventRow(change_id, event, r.id, r.content_hash, r.target_file, r.importance, list(r.tags), None,
                       f"{kind} by {who}: {why}", r.source) for r in rows]
    write(settings, lambda conn: sql.record_change(conn, change, stones, events))
    return change_id


def _finish(settings: Settings, change_id: str, files: list[LineChange]) -> None:
    names = [f.name for f in files if f.lines]
    backups = [str(f.backup) for f in files if f.backup]
    write(settings, lambda conn: sql.finish_change(conn, change_id, names, backups))


def drop_forgotten(settings: Settings, outcomes: list[ChunkOutcome]) -> list[ChunkOutcome]:
    """The chunks' outcomes with every forgotten (or corrected-away) memory turned into a `forgotten` rejection:
    it reaches neither the store nor a knowledge file, and the ledger says why."""
    hashes = {m.content_hash for o in outcomes for m in o.memories}
    stones = read(settings, sql.tombstoned, hashes) if hashes else {}
    if not stones:
        return outcomes
    out = []
    for o in outcomes:
        gone = [m for m in o.memories if is_forgotten(m, stones)]
        if gone:
            o = replace(o, memories=[m for m in o.memories if not is_forgotten(m, stones)], rejections=[
                *o.rejections,
                *(Rejection("forgotten", m.target_file, m.importance, list(m.tags), m.content_hash) for m in gone)])
        out.append(o)
    return out
