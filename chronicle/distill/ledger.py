"""Keeping `memory_events` true to LanceDB after a run was killed between the store and the ledger (pure).

A run upserts memories into LanceDB first and records their events in DuckDB at the end. Killed in between,
the store holds memories the ledger never heard of; the rerun's upsert then sees them as exact duplicates
(NOOP), so without repair they would never get their ADD (or UPDATE) row and `memory_stats` would miss them
forever. Two repairs, both idempotent:

- `relabel`: a NOOP whose content no ledger row has added or merged yet, and that no earlier chunk of this
  run accounted for, is what the killed run did: ADD when it is the row's own content, else UPDATE. The
  ledger then reads exactly as after an undisturbed run (same events, same counts).
- `orphan_rows`: rows of the store with no ADD event at all (e.g. an LLM that answers differently on the
  rerun never re-sends them) get an ADD row marked as reconciled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Protocol


class _Event(Protocol):
    event: str
    memory_id: str
    content_hash: str
    by_model: bool


def unledgered_noops(events: Iterable[_Event], seen: set[str]) -> set[str]:
    """Content hashes of NOOP events that this run has not accounted for yet (candidates for `relabel`)."""
    return {e.content_hash for e in events if e.event == "NOOP" and not e.by_model and e.content_hash not in seen}


def relabel(events: list[Any], ledgered: set[str], row_hashes: dict[str, str], seen: set[str]) -> list[Any]:
    """`events` with the NOOPs of an interrupted run turned back into its ADD/UPDATE; updates `seen`.

    `ledgered`: content hashes that already have an ADD or UPDATE row in `memory_events`;
    `row_hashes`: memory id -> the row's own content hash; `seen`: hashes this run already accounted for.
    """
    out = []
    for e in events:
        if e.event == "NOOP" and not e.by_model and e.content_hash not in ledgered and e.content_hash not in seen:
            kind = "ADD" if row_hashes.get(e.memory_id) == e.content_hash else "UPDATE"
            e = replace(e, event=kind, reason=f"{e.reason}; stored by an interrupted run, ledger reconciled")
        if e.event in ("ADD", "UPDATE"):
            seen.add(e.content_hash)
        out.append(e)
    return out


def orphan_rows(rows: Iterable[Any], added_ids: set[str]) -> list[Any]:
    """Stored rows (with `.id`) that no ADD event accounts for."""
    return [r for r in rows if r.id not in added_ids]
