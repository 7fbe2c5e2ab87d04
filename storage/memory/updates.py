"""Knowledge updates on write: which current rows an upsert's new rows supersede (the decision is
`chronicle.memory.supersede`'s; this fetches what it needs and folds the marks into the upsert plan)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from chronicle.memory.dedup import PlannedRow, UpsertPlan
from chronicle.memory.supersede import Supersession, facts, plan_supersessions
from chronicle.storage.memory.schema import StoredMemory

CurrentRows = Callable[[list[str]], list[tuple[StoredMemory, np.ndarray]]]
"""subjects -> their stored current rows, with vectors (a superseded row is rewritten whole)."""
RowsById = Callable[[list[str]], list[tuple[StoredMemory, np.ndarray]]]
"""ids -> those stored rows, with vectors."""


def mark_superseded(plan: UpsertPlan, current: CurrentRows, by_id: RowsById) -> None:
    """Mark, in `plan`, the current rows its new rows replace (same subject and attribute, another value; or as the
    model decided, `plan.replaces`) and the new rows an already stored, later fact replaces. The marks ride in the
    plan's one commit, so a reader never sees a successor without the old row marked, or the other way round. ADD
    events name what changed."""
    changes = _decided(plan, by_id)
    new = [p.row for p in plan.rows.values() if p.is_new and p.row.subject and facts(p.row.content, p.row.subject)]
    if new:  # most memories state no attribute value: no lookup at all
        stored = {row.id: (row, vec) for row, vec in current(sorted({r.subject for r in new}))
                  if row.id not in plan.rows}
        candidates = [p.row for p in plan.rows.values()] + [row for row, _ in stored.values()]
        for change in plan_supersessions(candidates, [r.id for r in new]):
            if change.old_id not in plan.rows:
                row, vec = stored[change.old_id]
                plan.rows[change.old_id] = PlannedRow(row, vec, False)
            changes.append(change)
    _apply(plan, changes)


def _decided(plan: UpsertPlan, by_id: RowsById) -> list[Supersession]:
    """The model's decisions, kept only where they hold now: the old row is stored, still current, of the same
    subject, and older than its successor (a decision about a row forgotten or replaced meanwhile lapses)."""
    if not plan.replaces:
        return []
    wanted = sorted({old for olds in plan.replaces.values() for old in olds} - set(plan.rows))
    stored = {row.id: PlannedRow(row, vec, False) for row, vec in by_id(wanted)} if wanted else {}
    out = []
    for new_id, olds in plan.replaces.items():
        new = plan.rows[new_id].row
        for old_id in olds:
            old = plan.rows.get(old_id) or stored.get(old_id)
            if old is None or old.is_new or old.row.superseded_by or old.row.subject != new.subject \
                    or old.row.created > new.created:
                continue
            plan.rows.setdefault(old_id, old)
            out.append(Supersession(old_id, new_id, new.created))
    return out


def _apply(plan: UpsertPlan, changes: list[Supersession]) -> None:
    reasons: dict[str, str] = {}
    replaced: dict[str, tuple[str, ...]] = {}
    for change in changes:
        if plan.rows[change.old_id].row.superseded_by:  # the model and the rules may name one pair twice
            continue
        target = plan.rows[change.old_id]
        target.row = replace(target.row, superseded_by=change.new_id, superseded_at=change.at)
        reasons[change.new_id] = reasons.get(change.new_id, "") + f"; supersedes {change.old_id}"
        reasons[change.old_id] = reasons.get(change.old_id, "") + f"; superseded by {change.new_id}"
        replaced[change.new_id] = (*replaced.get(change.new_id, ()), change.old_id)
    plan.events[:] = [replace(e, reason=e.reason + reasons[e.memory_id], supersedes=replaced.get(e.memory_id, ()))
                      if e.event == "ADD" and e.memory_id in reasons else e for e in plan.events]
