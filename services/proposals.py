"""Use cases of memory proposals: list them, approve one into its knowledge file, reject one.

An approval writes through the same path as a distillation (managed section of the note's day, timestamped
backup, atomic replace, workspace lock) and only then records the decision, so a crash in between leaves the
proposal pending and approving it again finds the bullet already there. A rejection touches no file.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass

from chronicle.distill.knowledge import KnowledgeWrite, effective_action, sync_file
from chronicle.distill.proposals import Proposal, approved_item, proposals_markdown
from chronicle.redaction.configured import redactor_for
from chronicle.settings import Settings
from chronicle.storage import proposals as sql
from chronicle.storage.db import connect, read, write


class ProposalError(ValueError):
    """No such proposal, an ambiguous id prefix, or a decision that contradicts an earlier one."""


@dataclass(frozen=True)
class ProposalDecision:
    proposal: Proposal
    changed: bool
    """False when the proposal already had this status (deciding twice is harmless)."""
    file: KnowledgeWrite | None = None


def run_overview(settings: Settings, ids: list[str], flow_run_id: str) -> str:
    """Markdown of a run's proposals (as stored: an earlier decision shows) and of what waits in total."""
    with connect(settings, read_only=True) as conn:
        rows = sql.list_proposals(conn, None, ids) if ids else []
        pending = sql.pending_count(conn)
    return proposals_markdown(rows, pending_total=pending, title=f"Memory proposals of run {flow_run_id}")


def _one(settings: Settings, id_or_prefix: str) -> Proposal:
    found = read(settings, sql.find_proposal, id_or_prefix.strip())
    if not found:
        raise ProposalError(f"no proposal {id_or_prefix!r} (see `chronicle memory proposals --all`)")
    if len(found) > 1:
        raise ProposalError(f"{id_or_prefix!r} matches {len(found)} proposals: "
                            f"{', '.join(p.proposal_id for p in found[:5])}")
    return found[0]


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (some containers)
        return "unknown"


def approve(settings: Settings, id_or_prefix: str, by: str | None = None) -> ProposalDecision:
    """Write the proposal into its knowledge file and mark it approved."""
    proposal = _one(settings, id_or_prefix)
    if proposal.status == "rejected":
        raise ProposalError(f"{proposal.proposal_id} was rejected on {proposal.decided_at:%Y-%m-%d}; not writing it")
    action, _ = effective_action(proposal.action, proposal.target_file, settings.memory.overwrite_allowed_files)
    result = sync_file(settings.workspace_dir, proposal.target_file, [approved_item(proposal, action)],
                       keep=settings.memory.backup_keep, redactor=redactor_for(settings))
    if result.skipped:
        raise ProposalError(result.skipped)
    if proposal.status == "approved":
        return ProposalDecision(proposal, result.changed, result)
    write(settings, lambda conn: sql.decide(conn, proposal.proposal_id, "approved", by or _who()))
    return ProposalDecision(_one(settings, proposal.proposal_id), True, result)


def reject(settings: Settings, id_or_prefix: str, by: str | None = None) -> ProposalDecision:
    """Mark the proposal rejected; no file is touched."""
    proposal = _one(settings, id_or_prefix)
    if proposal.status == "approved":
        raise ProposalError(f"{proposal.proposal_id} was approved and written to {proposal.target_file}; "
                            "remove its bullet there by hand")
    if proposal.status == "rejected":
        return ProposalDecision(proposal, False)
    write(settings, lambda conn: sql.decide(conn, proposal.proposal_id, "rejected", by or _who()))
    return ProposalDecision(_one(settings, proposal.proposal_id), True)
