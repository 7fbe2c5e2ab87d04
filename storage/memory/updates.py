"""Knowledge updates on write: which current rows an upsert's new rows supersede (the decision is
`chronicle.memory.supersede`'s; this fetches what it needs and folds the marks into the upsert plan)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from chronicle.storage.memory.schema import StoredMemory

from chronicle.memory.dedup import PlannedRow, UpsertPlan
from chronicle.memory.supersede import facts, plan_supersessions

CurrentRows = Callable[[list[str]], list[tuple[StoredMemory, np.ndarray]]]
"""subjects -> their stored current rows, with vectors (a superseded row is rewritten whole)."""


def mark_superseded(plan: UpsertPlan, current: CurrentRows) -> None:
    """Mark, in `plan`, the current rows its new rows replace (same subject and attribute, another value) and
    the new rows an already stored, later fact replaces. The marks ride in the plan's one commit, so a reader
    never sees a successor without the old row marked, or the other way round. ADD events name what changed."""
    new = [p.row for p in plan.rows.values() if p.is_new and p.row.subject and facts(p.row.content, p.row.subject)]
    if not new:  # most memories state no attribute value: no lookup at all
        return
    stored = {row.id: (row, vec) for row, vec in current(sorted({r.subject for r in new})) if row.id not in plan.rows}
    candidates = [p.row for p in plan.rows.values()] + [row for row, _ in stored.values()]
    reasons: dict[str, str] = {}
    replaced: dict[str, tuple[str, ...]] = {}
    for change in plan_supersessions(candidates, [r.id for r in new]):
        if change.old_id not in plan.rows:
            row, vec = stored[change.old_id]
            plan.rows[change.old_id] = PlannedRow(row, vec, False)
        target = plan.rows[change.old_id]
        target.row = replace(target.row, superseded_by=change.new_id, superseded_at=change.at)
        reasons[change.new_id] = reasons.get(change.new_id, "") + f"; supersedes {change.old_id}"
        reasons[change.old_id] = reasons.get(change.old_id, "") + f"; superseded by {change.new_id}"
        replaced[change.new_id] = (*replaced.get(change.new_id, ()), change.old_id)
    plan.events[:] = [replace(e, reason=e.reason + reasons[e.memory_id], supersedes=replaced.get(e.memory_id, ()))
                      if e.event == "ADD" and e.memory_id in reasons else e for e in plan.events]
