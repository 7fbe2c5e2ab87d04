"""`chronicle memory proposals|approve|reject`: what a distillation may not write by itself, and what an assistant
asked to forget (ids `f-…`), decided by a human."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer

from chronicle.cli.common import HomeOpt, console, err, read_settings
from chronicle.cli.output import Format, emit, format_option


def register(memory: typer.Typer) -> None:
    @memory.command()
    def proposals(as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
                  all_: bool = typer.Option(False, "--all", help="Approved and rejected ones too."),
                  fmt: Format = format_option(), home: str | None = HomeOpt) -> None:
        """Memories waiting for approval: aimed at a protected file (SOUL.md, IDENTITY.md) or suspected injection."""
        from chronicle.storage.db import read
        from chronicle.storage.proposals import forget_requests, list_proposals

        settings = read_settings(home)
        rows = read(settings, list_proposals, None if all_ else "pending")
        asked = read(settings, forget_requests, None if all_ else "pending")
        if as_json or fmt is not Format.table:
            emit([asdict(p) for p in rows] + [asdict(f) | {"action": "forget"} for f in asked],
                 Format.json if as_json else fmt)
            return
        # The id is the handle a human copies: first column, never cut (emit never truncates a cell).
        emit([{"id": p.proposal_id, "file": p.target_file, "action": p.action,
               "injection?": "yes" if p.suspected_injection else "no", "status": p.status,
               "note day": p.note_date.isoformat(), "content": p.content} for p in rows]
             + [{"id": f.request_id, "file": "", "action": "forget", "injection?": "", "status": f.status,
                 "note day": "", "content": _selector(f) + f" — {f.source}: {f.reason}"} for f in asked],
             title=f"{len(rows) + len(asked)} proposal(s) — chronicle memory approve|reject ID",
             empty="no proposals" + ("" if all_ else " waiting for approval"))

    @memory.command()
    def approve(proposal_id: str = typer.Argument(..., help="Proposal id (or a unique prefix)."),
                home: str | None = HomeOpt) -> None:
        """Write a proposal into its knowledge file (managed section, backup, atomic replace); for a forget
        request (`f-…`), forget what it names, as `chronicle memory forget` does."""
        decision = _decided(proposal_id, True, home)
        if decision is None:
            return
        p = decision.proposal
        where = f"written to {p.target_file}" if decision.file and decision.file.changed else \
            f"already in {p.target_file}"
        console.print(f"{p.proposal_id} approved: {where}" + (" (was approved before)" if not decision.changed else ""))

    @memory.command()
    def reject(proposal_id: str = typer.Argument(..., help="Proposal id (or a unique prefix)."),
               home: str | None = HomeOpt) -> None:
        """Drop a proposal (or a forget request); no knowledge file is touched."""
        decision = _decided(proposal_id, False, home)
        if decision is None:
            return
        console.print(f"{decision.proposal.proposal_id} rejected" + ("" if decision.changed else " (already)"))


def _decided(proposal_id: str, approve: bool, home: str | None) -> Any:
    """Approve or reject a proposal; None for a forget request (`f-…`), decided as `chronicle memory forget` does."""
    from chronicle.services import proposals

    if proposal_id.startswith("f-"):
        _decide_forget(proposal_id, approve, home)
        return None
    try:
        return (proposals.approve if approve else proposals.reject)(read_settings(home), proposal_id)
    except proposals.ProposalError as exc:
        err.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from exc


def _selector(f: object) -> str:
    from chronicle.services.forget import Selector

    return "forget " + Selector(f.memory_id, f.about, f.match).describe()  # type: ignore[attr-defined]


def _decide_forget(request_id: str, approve: bool, home: str | None) -> None:
    from chronicle.services.forget import SelectorError, decide_forget_request

    try:
        request, done = decide_forget_request(read_settings(home), request_id, approve=approve)
    except SelectorError as exc:
        err.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from exc
    if done is not None and not done.memories:
        console.print(f"{request.request_id} approved: nothing left to forget"
                      + (f" (forgotten by change {request.change_id})" if request.change_id else ""))
    elif done is not None:
        changed = ", ".join(f.name for f in done.files if f.lines) or "no knowledge file"
        console.print(f"{request.request_id} approved: {len(done.memories)} memory(ies) forgotten "
                      f"(change {done.change_id}); {changed} changed")
    elif request.status == "rejected":
        console.print(f"{request.request_id} rejected: nothing was forgotten")
    else:
        console.print(f"{request.request_id} was approved before (change {request.change_id})")
