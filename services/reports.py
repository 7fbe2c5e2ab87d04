"""Report use cases: read a stored week with its current inputs, correct it (the edit is the truth), sign it.

The ONE write path for corrections and sign-offs, used by the CLI and the desk alike:

* `preview_edit` shows what an edit would store (redacted text, the faithfulness guard's reasons on it, the diff
  against the current version) without writing anything;
* `edit_report` stores it as a new version, only when the week is still at the version the edit was made against
  (`VersionConflict` with the diff otherwise: nothing is overwritten unseen);
* `sign_report` re-authenticates the signer and binds the signature to the sha256 of that version's exact text;
  a later version never carries it (`signatures` tells which are current).

Versions, signatures and audit rows are only ever added; none of these functions changes or deletes one.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from chronicle.redaction.configured import redactor_for
from chronicle.services.accounts import Account, authenticate
from chronicle.services.audit import audit_row
from chronicle.services.corrections import (
    FLAGGED_REASON,
    MAX_AUTHOR,
    MAX_REASON,
    InvalidEdit,
    clean_field,
    clean_text,
    diff_lines,
    guard_reasons,
)
from chronicle.services.weekly import read_week
from chronicle.settings import Settings
from chronicle.storage import desk, reports
from chronicle.storage.db import read, transactions
from chronicle.weekly.faithfulness import cited_ids
from chronicle.weekly.model import WeekInput
from chronicle.weeks import IsoWeek, utc_now

__all__ = ["EditPreview", "EditResult", "InvalidEdit", "NoReportError", "ReportView", "SignRefused", "Signature",
           "VersionConflict", "content_hash", "edit_report", "preview_edit", "sign_report", "signatures",
           "view_report"]
Meaning = Literal["reviewed", "approved"]
MEANINGS = ("reviewed", "approved")


class NoReportError(LookupError):
    """The week has no stored report yet (generate it before reading or correcting it)."""


@dataclass(frozen=True)
class ReportView:
    """A stored report and the week's inputs now (to tell whether the text is stale)."""

    row: dict[str, Any]
    current: WeekInput

    @property
    def stale(self) -> bool:
        return bool(self.row["stale"]) or self.current.input_hash != self.row["input_hash"]


def view_report(settings: Settings, project_id: str, week: IsoWeek) -> ReportView:
    row = read(settings, reports.get_report, project_id, week.number)
    if row is None:
        raise NoReportError(f"no report for {project_id} {week}")
    return ReportView(row, read_week(settings, project_id, week)[0])


class VersionConflict(Exception):
    """The week is no longer at the version the edit or signature was made against; nothing was written.

    `diff_lines`: what changed between that version and the current one (a unified diff)."""

    def __init__(self, base_version: int, current_version: int, diff_lines: list[str]) -> None:
        super().__init__(f"the week changed while you worked: you started from version {base_version}, it is now "
                         f"version {current_version}; nothing was stored — read the current version and redo the "
                         "change on it")
        self.base_version, self.current_version, self.diff_lines = base_version, current_version, diff_lines


class SignRefused(Exception):
    """A signature refused (no reviewer role on the project, unknown meaning); the audit trail keeps it."""


@dataclass(frozen=True)
class EditPreview:
    text: str
    """The correction as it would be stored (redacted, line ends normalised)."""
    reasons: list[dict[str, Any]]
    """The faithfulness guard's reasons on the new text, each with the `sentence` it concerns."""
    unknown_citations: tuple[str, ...]
    diff_lines: list[str]
    """A unified diff from the current version to the new text."""
    base_version: int
    redacted: dict[str, int] = field(default_factory=dict)

    @property
    def needs_review(self) -> bool:
        return bool(self.reasons)


@dataclass(frozen=True)
class EditResult:
    version: int
    unknown_citations: tuple[str, ...]
    """Citations in the new text that are not entries of the week (kept as text only)."""
    redacted: dict[str, int] = field(default_factory=dict)
    """Secrets hidden in the edit, by kind (an edit is a report: it feeds the chronicle, `ask` and the LLM)."""
    reasons: list[dict[str, Any]] = field(default_factory=list)
    """The guard's reasons stored with the version (non-empty: the week awaits review)."""

    @property
    def needs_review(self) -> bool:
        return bool(self.reasons)


@dataclass(frozen=True)
class Signature:
    signer: str
    printed_name: str
    meaning: str
    signed_at: Any
    """UTC (naive datetime, as stored)."""
    version: int
    content_hash: str
    current: bool
    """Whether the week's current text is still the signed one (False once a later version exists)."""


def content_hash(text: str) -> str:
    """What a signature is bound to: sha256 of the exact stored text, UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prepare(settings: Settings, project_id: str, week: IsoWeek, text: str,
             hidden: Counter[str]) -> tuple[str, WeekInput, Any]:
    text = clean_text(text, settings.weekly.edit_max_chars)
    text = redactor_for(settings).redact(text, hidden)
    week_input, stored = read_week(settings, project_id, week)
    if stored is None:
        raise NoReportError(f"no report for {project_id} {week}; generate it before correcting it")
    return text, week_input, stored


def preview_edit(settings: Settings, project_id: str, week: IsoWeek, text: str) -> EditPreview:
    """What `edit_report` would store for `text` and what the guard says about it; writes nothing."""
    hidden: Counter[str] = Counter()
    text, week_input, stored = _prepare(settings, project_id, week, text, hidden)
    known = week_input.citation_map
    return EditPreview(text, guard_reasons(text, week_input, was_flagged=stored.needs_review),
                       tuple(s for s in cited_ids(text) if s not in known),
                       diff_lines(stored.summary, text, old_label=f"version {stored.version}", new_label="correction"),
                       stored.version, dict(hidden))


def edit_report(settings: Settings, project_id: str, week: IsoWeek, text: str, *, author: str, reason: str,
                base_version: int, remote: str | None = None) -> EditResult:
    """Store a human correction made against `base_version` as the week's new version (status `edited`).

    Refused before anything is written: InvalidEdit (empty, control bytes, too long, no reason or author, no
    change), VersionConflict (the week moved on since `base_version`). The guard's reasons on the new text are
    stored with it; an edit never clears a flag. The edit and its audit row land in one transaction.
    """
    author = clean_field(author, "the author", MAX_AUTHOR)
    reason = clean_field(reason, "the reason", MAX_REASON)
    hidden: Counter[str] = Counter()
    text, week_input, stored = _prepare(settings, project_id, week, text, hidden)
    redactor = redactor_for(settings)
    # Who and why are stored with the version and shown by `report history`: the same sink as the text.
    author, reason = redactor.redact(author, hidden), redactor.redact(reason, hidden)
    if stored.version == base_version and text == stored.summary.strip():
        raise InvalidEdit(f"the text is version {base_version}'s as it stands: nothing to store")
    reasons = guard_reasons(text, week_input, was_flagged=False)
    known = week_input.citation_map
    cited = cited_ids(text)
    try:
        for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
            with attempt as conn:  # the guard keeps version numbers unique across lake writers
                version = reports.save_edit(conn, project_id, week.number, text,
                                            citations={s: known[s] for s in cited if s in known},
                                            input_hash=week_input.input_hash, stats=week_input.stats, author=author,
                                            reason=reason, base_version=base_version, review_reasons=reasons,
                                            flagged_reason=dict(FLAGGED_REASON))
                stored_reasons = reports.get_report(conn, project_id, week.number)["review_reasons"] or []
                desk.insert_audit(conn, audit_row(
                    actor=author, action="edit", project_id=project_id, week_number=week.number, version=version,
                    detail={"reason": reason, "base_version": base_version, "redacted": dict(hidden),
                            "review": [r.get("kind") for r in stored_reasons]}, remote=remote))
    except reports.StaleBase as exc:
        _refused(settings, author, "edit", project_id, week, base_version, exc.current_version, remote)
        raise VersionConflict(base_version, exc.current_version, diff_lines(
            exc.base_text, exc.current_text, old_label=f"version {base_version}",
            new_label=f"version {exc.current_version}")) from None
    return EditResult(version, tuple(s for s in cited if s not in known), dict(hidden), list(stored_reasons))


def _refused(settings: Settings, actor: str, action: str, project_id: str, week: IsoWeek, base: int, current: int,
             remote: str | None) -> None:
    row = audit_row(actor=actor, action=action, outcome="refused:version-conflict", project_id=project_id,
                    week_number=week.number, version=base, detail={"current_version": current}, remote=remote)
    for attempt in transactions(settings):
        with attempt as conn:
            desk.insert_audit(conn, row)


def sign_report(settings: Settings, project_id: str, week: IsoWeek, *, version: int, account: Account | str,
                password: str, meaning: Meaning, remote: str, note: str | None = None) -> Signature:
    """Sign `version` of the week as `account` (its password asked again: LoginRefused when wrong).

    The signature records the printed name, UTC time and meaning, bound to the sha256 of that version's exact text;
    it must be the week's current version (VersionConflict otherwise), and it clears the review flag of that
    version only. SignRefused: not a reviewer of the project, a temporary password, or an unknown meaning.
    """
    username = account.username if isinstance(account, Account) else account
    signer = authenticate(settings, username, password, remote=remote, action="reauth",
                          concerning={"project_id": project_id, "week_number": week.number, "version": version})
    # A password an administrator set is known to two people: it signs nothing until its owner has changed it.
    why = ("meaning" if meaning not in MEANINGS else "role" if not signer.can_review(project_id)
           else "temporary-password" if signer.temporary else None)
    if why is not None:
        for attempt in transactions(settings):
            with attempt as conn:
                desk.insert_audit(conn, audit_row(actor=username, action="sign", outcome=f"refused:{why}",
                                                  project_id=project_id, week_number=week.number, version=version,
                                                  detail={"meaning": meaning}, remote=remote))
        raise SignRefused({"meaning": f"unknown meaning {meaning!r}: reviewed or approved",
                           "role": f"{username} is not a reviewer of {project_id}",
                           "temporary-password": f"{username}'s password was set by an administrator: change it "
                                                 "(the desk's Your account page) before signing"}[why])
    for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
        with attempt as conn:
            sig = _sign(conn, project_id, week, version, signer, meaning, note, remote)
    if isinstance(sig, VersionConflict):
        _refused(settings, username, "sign", project_id, week, version, sig.current_version, remote)
        raise sig
    return Signature(sig.signer, sig.printed_name, sig.meaning, sig.signed_at, sig.version, sig.content_hash, True)


def _sign(conn: Any, project_id: str, week: IsoWeek, version: int, signer: Account, meaning: str,
          note: str | None, remote: str) -> desk.SignatureRow | VersionConflict:
    current = reports.get_report(conn, project_id, week.number)
    if current is None:
        raise NoReportError(f"no report for {project_id} {week}")
    if current["version"] != version:
        old = reports.version_text(conn, project_id, week.number, version) or ""
        return VersionConflict(version, current["version"], diff_lines(
            old, current["summary"], old_label=f"version {version}", new_label=f"version {current['version']}"))
    text = reports.version_text(conn, project_id, week.number, version)
    assert text is not None and text == current["summary"], "the current row and its version row disagree"
    now = utc_now()
    sig = desk.SignatureRow(project_id, week.number, version, content_hash(text), signer.username,
                            signer.printed_name, meaning, now)
    desk.insert_signature(conn, sig)
    desk.clear_review(conn, project_id, week.number, version, reviewer=signer.username, note=note, now=now)
    desk.insert_audit(conn, audit_row(actor=signer.username, action="sign", project_id=project_id,
                                      week_number=week.number, version=version, remote=remote,
                                      detail={"meaning": meaning, "content_hash": sig.content_hash,
                                              "printed_name": signer.printed_name, "note": note}))
    return sig


def signatures(settings: Settings, project_id: str, week: IsoWeek) -> list[Signature]:
    """Every signature of the week, oldest first; `current` only for those bound to the text the week has now."""
    def load(conn: Any) -> tuple[list[desk.SignatureRow], dict[str, Any] | None]:
        return desk.signature_rows(conn, project_id, week.number), reports.get_report(conn, project_id, week.number)

    rows, now = read(settings, load)
    now_hash = content_hash(now["summary"]) if now else None
    return [Signature(r.signer, r.printed_name, r.meaning, r.signed_at, r.version, r.content_hash,
                      now is not None and r.version == now["version"] and r.content_hash == now_hash) for r in rows]
