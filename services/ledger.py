"""Use cases keeping `memory_events` true to LanceDB across kills (the rules: `chronicle.distill.ledger`).

`reconcile_events` runs on each chunk's upsert events before they are planned, `reconcile_orphans` once at the
end of a run, after the ledger commit. Both read only when there is something to repair.
"""

from __future__ import annotations

from chronicle.distill.ledger import orphan_rows, relabel, unledgered_noops
from chronicle.distill.records import EventRow
from chronicle.memory.model import MemoryEvent
from chronicle.services.run_history import still_working
from chronicle.settings import Settings
from chronicle.storage.db import connect, write
from chronicle.storage.memory import events as sql
from chronicle.storage.memory.store import MemoryStore


def reconcile_events(settings: Settings, events: list[MemoryEvent], seen: set[str],
                     run_id: str | None = None) -> list[MemoryEvent]:
    """The chunk's events with the NOOPs of an interrupted run turned back into its ADD/UPDATE; `seen` holds the
    content hashes this run has accounted for so far (updated).

    Only a run that is really gone is "interrupted": a memory stored by a run still working (a second distill of
    the same window at the same time) is that run's to record — relabelling it here gave 64 ADD rows for 40
    memories. Such NOOPs stay NOOPs (and count as ledgered for this run)."""
    candidates = unledgered_noops(events, seen)
    ledgered: set[str] = set()
    rows: dict[str, str] = {}
    if candidates:
        with connect(settings) as conn:
            ledgered = sql.ledgered_hashes(conn, candidates)
        ids = [e.memory_id for e in events if e.event == "NOOP" and e.content_hash in candidates - ledgered]
        if ids:
            stored = MemoryStore(settings).get(ids)
            owners = [m.flow_run_id for m in stored if m.flow_run_id and m.flow_run_id != run_id]
            with connect(settings) as conn:
                working = still_working(conn, owners)
            rows = {m.id: m.content_hash for m in stored}
            ledgered |= {m.content_hash for m in stored if m.flow_run_id in working}
    return relabel(events, ledgered, rows, seen)


def reconcile_orphans(settings: Settings, run_id: str) -> int:
    """ADD rows for stored memories no ADD event accounts for (stored by a killed run, never re-sent since).

    Only reads the whole store when the numbers disagree (rows vs. memories with an ADD event)."""
    store = MemoryStore(settings)
    with connect(settings) as conn:
        added = sql.added_memory_ids(conn)
    total = store.count()
    if total == len(added):
        return 0
    orphans = orphan_rows(store.list(limit=total), added)
    if orphans:  # rows of a run still working are its own to record (see reconcile_events)
        with connect(settings) as conn:
            working = still_working(conn, [r.flow_run_id for r in orphans if r.flow_run_id and r.flow_run_id != run_id])
        orphans = [r for r in orphans if r.flow_run_id not in working]
    if not orphans:
        return 0
    rows = [EventRow(run_id, "ADD", r.id, r.content_hash, r.target_file, r.importance, list(r.tags), None,
                     f"reconciled: stored by an interrupted run ({r.flow_run_id}) whose ledger rows were lost",
                     r.source) for r in orphans]
    write(settings, lambda conn: sql.record_events(conn, rows))
    return len(orphans)
