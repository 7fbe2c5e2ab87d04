"""`chronicle memory proposals|approve|reject`: what a distillation may not write by itself, decided by a human."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.table import Table

from cli.common import console, err, load_settings

HomeOpt = typer.Option(None, "--home", help="Data folder (overrides CHRONICLE_HOME).")


def register(memory: typer.Typer) -> None:
    @memory.command()
    def proposals(as_json: bool = typer.Option(False, "--json"),
                  all_: bool = typer.Option(False, "--all", help="Approved and rejected ones too."),
                  home: str | None = HomeOpt) -> None:
        """Memories waiting for approval: aimed at a protected file (SOUL.md, IDENTITY.md) or suspected injection."""
        from services.proposals import list_proposals

        rows = list_proposals(load_settings(home), None if all_ else "pending")
        if as_json:
            print(json.dumps([asdict(p) for p in rows], ensure_ascii=False, default=str, indent=2))
            return
        if not rows:
            console.print("no proposals" + ("" if all_ else " waiting for approval"))
            return
        table = Table(title=f"{len(rows)} proposal(s) — chronicle memory approve|reject ID")
        table.add_column("id", no_wrap=True, min_width=18)  # the handle a human copies: never cut
        for name in ("file", "action", "injection?", "status", "note day", "content"):
            table.add_column(name)
        for p in rows:
            text = p.content if len(p.content) <= 100 else p.content[:99] + "…"
            table.add_row(p.proposal_id, p.target_file, p.action, "[red]yes[/]" if p.suspected_injection else "no",
                          p.status, p.note_date.isoformat(), text)
        console.print(table)

    @memory.command()
    def approve(proposal_id: str = typer.Argument(..., help="Proposal id (or a unique prefix)."),
                home: str | None = HomeOpt) -> None:
        """Write a proposal into its knowledge file (managed section, backup, atomic replace)."""
        from services.proposals import ProposalError
        from services.proposals import approve as approve_proposal

        try:
            decision = approve_proposal(load_settings(home), proposal_id)
        except ProposalError as exc:
            err.print(f"[red]{exc}[/]")
            raise typer.Exit(1) from exc
        p = decision.proposal
        where = f"written to {p.target_file}" if decision.file and decision.file.changed else \
            f"already in {p.target_file}"
        console.print(f"{p.proposal_id} approved: {where}" + (" (was approved before)" if not decision.changed else ""))

    @memory.command()
    def reject(proposal_id: str = typer.Argument(..., help="Proposal id (or a unique prefix)."),
               home: str | None = HomeOpt) -> None:
        """Drop a proposal; no knowledge file is touched."""
        from services.proposals import ProposalError
        from services.proposals import reject as reject_proposal

        try:
            decision = reject_proposal(load_settings(home), proposal_id)
        except ProposalError as exc:
            err.print(f"[red]{exc}[/]")
            raise typer.Exit(1) from exc
        console.print(f"{decision.proposal.proposal_id} rejected" + ("" if decision.changed else " (already)"))
