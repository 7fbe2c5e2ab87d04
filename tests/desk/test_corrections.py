"""The one write path for corrections and sign-offs (services/reports.py) on the sample trial's real DuckDB file:
the guard judges an edit's text, an edit is made against a version, never clears a flag, and a signature is bound
to one version's exact text."""

from __future__ import annotations

import hashlib
import re

import pytest

from chronicle.settings import Settings
from chronicle.weeks import IsoWeek
from tests.desk.conftest import PASSWORD, PROJECT

WEEK = IsoWeek.parse("2025-W30")
# The week's SAE (E30), AE (E21) and deviation (E12): a correction that leaves them out is flagged `omitted_event`.
EVENTS = "SAE、AE 与方案偏离各一例 [E30, E21, E12]。"


def _row(settings: Settings, week: IsoWeek = WEEK) -> dict:
    from chronicle.storage.db import read
    from chronicle.storage.reports import get_report

    return read(settings, get_report, PROJECT, week.number)


def _versions(settings: Settings, week: IsoWeek = WEEK) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute("SELECT version, status, summary, author, reason, needs_review FROM weekly_report_versions"
                            " WHERE project_id = ? AND week_number = ? ORDER BY version",
                            [PROJECT, week.number]).fetchall()


def test_the_guard_judges_a_correction_before_and_when_it_is_stored(written: Settings) -> None:
    from chronicle.services.reports import edit_report, preview_edit

    base = _row(written)
    enrolled = base["stats"]["enrolled"]
    for other in (0, 2, 7):  # the "入组 5 人" in a week with another count, whatever the numbers
        claimed = enrolled + 1 + other
        reasons = preview_edit(written, PROJECT, WEEK, f"本周新入组 {claimed} 人 [E9]。{EVENTS}").reasons
        assert [(r["kind"], r["claimed"], r["actual"]) for r in reasons] == [("count_mismatch", claimed, enrolled)]
    text = f"人工修正：本周入组 {claimed} 人 [E9]。{EVENTS}"
    preview = preview_edit(written, PROJECT, WEEK, text)
    assert [(r["kind"], r["claimed"], r["actual"]) for r in preview.reasons] == [("count_mismatch", claimed, enrolled)]
    assert preview.reasons[0]["sentence"] == f"人工修正：本周入组 {claimed} 人。"
    assert preview.base_version == base["version"] and preview.needs_review
    assert any(line.startswith("+人工修正") for line in preview.diff_lines)
    assert len(_versions(written)) == 1  # a preview writes nothing

    result = edit_report(written, PROJECT, WEEK, text, author="ana", reason="count", base_version=base["version"])
    row = _row(written)
    assert result.needs_review and row["needs_review"] and row["status"] == "edited"
    assert [r["kind"] for r in row["review_reasons"]] == ["count_mismatch"]
    assert _versions(written)[-1][-1] is True  # the version row carries the flag too


def test_a_faithful_correction_is_not_flagged_and_english_counts_are_judged_too(written: Settings) -> None:
    from chronicle.services.reports import edit_report, preview_edit

    stats = _row(written)["stats"]
    faithful = f"本周入组 {stats['enrolled']} 人 [E9]。{EVENTS}"
    assert not preview_edit(written, PROJECT, WEEK, faithful).reasons
    # The same count without the week's safety events: the correction would hide them.
    omitted = preview_edit(written, PROJECT, WEEK, f"本周入组 {stats['enrolled']} 人 [E9]。").reasons
    assert {(r["kind"], r["field"]) for r in omitted} == {("omitted_event", k) for k in ("sae", "ae", "deviations")}
    wrong = preview_edit(written, PROJECT, WEEK, f"{stats['sae'] + 3} new SAEs were reported [E30].")
    assert [r["field"] for r in wrong.reasons if r["kind"] == "count_mismatch"] == ["sae"]
    denied = preview_edit(written, PROJECT, WEEK, "本周无 SAE 发生 [E9]。")  # the week has one
    assert ("count_mismatch", "sae", 0) in {(r["kind"], r.get("field"), r.get("claimed")) for r in denied.reasons}
    result = edit_report(written, PROJECT, WEEK, faithful, author="ana", reason="shorter", base_version=1)
    assert not result.needs_review and not _row(written)["needs_review"]


def test_an_edit_never_clears_a_flag_a_signature_does(written: Settings, reviewer: str) -> None:
    from chronicle.services.reports import edit_report, sign_report

    flagged = edit_report(written, PROJECT, WEEK, f"本周入组 99 人 [E9]。{EVENTS}", author="ana", reason="x",
                          base_version=1)
    assert flagged.needs_review
    stats = _row(written)["stats"]
    clean = edit_report(written, PROJECT, WEEK, f"本周入组 {stats['enrolled']} 人 [E9]。{EVENTS}", author="ana",
                        reason="fixed the count", base_version=flagged.version)
    row = _row(written)
    assert row["needs_review"] and [r["kind"] for r in row["review_reasons"]] == ["edited_unreviewed"]
    assert [r["kind"] for r in clean.reasons] == ["edited_unreviewed"]
    sign_report(written, PROJECT, WEEK, version=clean.version, account=reviewer, password=PASSWORD,
                meaning="reviewed", remote="10.1.1.1")
    row = _row(written)
    assert not row["needs_review"] and (row["reviewed_by"], row["reviewed_version"]) == ("ana", clean.version)


def test_an_edit_against_an_old_version_is_refused_with_the_diff_and_nothing_written(written: Settings) -> None:
    from chronicle.services.audit import audit_trail
    from chronicle.services.reports import VersionConflict, edit_report

    first = edit_report(written, PROJECT, WEEK, "甲的更正 [E9]。", author="a", reason="r1", base_version=1)
    before = _versions(written)
    with pytest.raises(VersionConflict) as conflict:
        edit_report(written, PROJECT, WEEK, "乙的更正 [E9]。", author="b", reason="r2", base_version=1)
    assert (conflict.value.base_version, conflict.value.current_version) == (1, first.version)
    assert "+甲的更正 [E9]。" in conflict.value.diff_lines and conflict.value.diff_lines[:2] == [
        "--- version 1", f"+++ version {first.version}"]
    assert "version 1" in str(conflict.value) and "nothing was stored" in str(conflict.value)
    assert _versions(written) == before and _row(written)["summary"] == "甲的更正 [E9]。"
    trail = [(r.actor, r.action, r.outcome) for r in audit_trail(written, PROJECT, WEEK.number)]
    assert trail == [("a", "edit", "ok"), ("b", "edit", "refused:version-conflict")]


def test_a_regeneration_that_wrote_the_same_text_is_no_conflict_for_an_edit_but_is_for_a_signature(
        written: Settings, reviewer: str) -> None:
    from chronicle.services.reports import VersionConflict, edit_report, sign_report
    from chronicle.services.weekly import plan_week, run_week

    # the offline engine writes what was there
    run_week(written, plan_week(written, PROJECT, WEEK, force=True), "again")
    again = _versions(written)
    assert [v[0] for v in again] == [1, 2] and again[0][2] == again[1][2]
    # The clinician corrected exactly the text that stands: stored on top of version 2, nothing lost.
    landed = edit_report(written, PROJECT, WEEK, "甲的更正 [E9]。", author="a", reason="r", base_version=1)
    assert landed.version == 3 and _row(written)["summary"] == "甲的更正 [E9]。"
    with pytest.raises(VersionConflict) as conflict:  # now the text did change since version 1
        edit_report(written, PROJECT, WEEK, "乙的更正 [E9]。", author="b", reason="r", base_version=1)
    assert "+甲的更正 [E9]。" in conflict.value.diff_lines
    # A signature is bound to one version: version 2 is not version 1 even with the same text, and the refusal
    # says so instead of showing an empty diff.
    run_week(written, plan_week(written, PROJECT, IsoWeek.parse("2025-W29"), force=True), "again")
    with pytest.raises(VersionConflict) as refused:
        sign_report(written, PROJECT, IsoWeek.parse("2025-W29"), version=1, account=reviewer, password=PASSWORD,
                    meaning="reviewed", remote="10.1.1.1")
    assert refused.value.diff_lines == ["--- version 1", "+++ version 2", " (the text is the same)"]


BAD = [
    ("正文\x00二进制", "r", "a", "NUL byte"),
    ("正文\x1b[31m红色", "r", "a", "U+001B"),
    ("批准\u202e否决", "r", "a", "U+202E"),
    ("  \n\t ", "r", "a", "is empty"),
    ("x" * 1001, "r", "a", "1001 characters"),
    ("正文", "", "a", "the reason is required"),
    ("正文", "  ", "a", "the reason is required"),
    ("正文", "r", "", "the author is required"),
    ("正文", "r\x00", "a", "the reason contains"),
]


def test_a_bad_correction_is_refused_and_nothing_is_stored(written: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.services.reports import InvalidEdit, edit_report

    monkeypatch.setenv("CHRONICLE_EDIT_MAX_CHARS", "1000")
    for text, reason, author, words in BAD:
        with pytest.raises(InvalidEdit, match=re.escape(words)):
            edit_report(Settings(), PROJECT, WEEK, text, author=author, reason=reason, base_version=1)
    assert len(_versions(written)) == 1


def test_a_signature_is_bound_to_one_versions_exact_text(written: Settings, reviewer: str) -> None:
    from chronicle.services.accounts import LoginRefused, add_user
    from chronicle.services.reports import SignRefused, VersionConflict, edit_report, sign_report, signatures

    with pytest.raises(LoginRefused):  # re-authentication
        sign_report(written, PROJECT, WEEK, version=1, account=reviewer, password="wrong", meaning="approved",
                    remote="r")
    add_user(written, "rd", "Reader", PASSWORD, {PROJECT: "reader", "*": "reader"})
    with pytest.raises(SignRefused, match="not a reviewer"):
        sign_report(written, PROJECT, WEEK, version=1, account="rd", password=PASSWORD, meaning="reviewed",
                    remote="r")
    with pytest.raises(SignRefused, match="meaning"):
        sign_report(written, PROJECT, WEEK, version=1, account=reviewer, password=PASSWORD,
                    meaning="looked at", remote="r")  # type: ignore[arg-type]
    assert signatures(written, PROJECT, WEEK) == []

    text_v1 = _row(written)["summary"]
    sig = sign_report(written, PROJECT, WEEK, version=1, account=reviewer, password=PASSWORD, meaning="approved",
                      remote="r")
    assert sig.content_hash == hashlib.sha256(text_v1.encode("utf-8")).hexdigest()
    assert (sig.printed_name, sig.meaning, sig.version, sig.current) == ("Dr. Ana Li", "approved", 1, True)
    edit_report(written, PROJECT, WEEK, "更正 [E9]。", author="ana", reason="later", base_version=1)
    (kept,) = signatures(written, PROJECT, WEEK)
    assert (kept.version, kept.current, kept.content_hash) == (1, False, sig.content_hash)  # never carried over
    with pytest.raises(VersionConflict):  # signing a version that is no longer the week's text
        sign_report(written, PROJECT, WEEK, version=1, account=reviewer, password=PASSWORD, meaning="approved",
                    remote="r")
    assert _versions(written)[0][2] == text_v1  # the signed version's text is still there, unchanged


def test_signed_versions_and_audit_rows_survive_every_write_path(written: Settings, reviewer: str) -> None:
    from chronicle.services.audit import audit_trail
    from chronicle.services.reports import edit_report, sign_report, signatures
    from chronicle.services.review import accept
    from chronicle.services.weekly import plan_week, run_week

    edited = edit_report(written, PROJECT, WEEK, "本周入组 99 人 [E9]。", author="ana", reason="x", base_version=1)
    sign_report(written, PROJECT, WEEK, version=edited.version, account=reviewer, password=PASSWORD,
                meaning="approved", remote="r")
    signed_rows, trail = _versions(written), audit_trail(written, PROJECT, WEEK.number)
    # Regeneration over the edit, a forced regeneration, an acceptance, a late refresh: new rows only.
    run_week(written, plan_week(written, PROJECT, WEEK, force=True, overwrite_edited=True), "regen")
    run_week(written, plan_week(written, PROJECT, WEEK, force=True), "regen-2")
    accept(written, PROJECT, WEEK, reviewer="cli-user")
    after = _versions(written)
    assert after[: len(signed_rows)] == signed_rows and len(after) == len(signed_rows) + 2
    assert audit_trail(written, PROJECT, WEEK.number)[: len(trail)] == trail
    (sig,) = signatures(written, PROJECT, WEEK)
    assert sig.version == edited.version and not sig.current
    assert hashlib.sha256(after[edited.version - 1][2].encode()).hexdigest() == sig.content_hash


def test_a_correction_meets_the_redaction_the_operator_configured(written: Settings) -> None:
    """A clinician's text passes the same gate as the model's: the project's own subject-id pattern stays readable,
    its extra patterns are hidden, and where commit hashes are declared unsafe a 40-hex run is hidden too."""
    from chronicle.services.reports import preview_edit

    strict = written.redact.model_copy(update={"subject_id_pattern": r"SUBJ[A-Za-z0-9]{16}",
                                               "commit_hashes_safe": False, "extra_patterns": [r"STUDY-\d{3}"]})
    settings = written.model_copy(update={"redact": strict})
    key = "e6df66213da98871b52d90a24cae413501926061"
    subject = "SUBJ7Fq9Z2xK4mWbR8tY"  # a generated id: hidden as a secret unless its pattern is declared
    shown = preview_edit(settings, PROJECT, WEEK, f"受试者 {subject} 随访，STUDY-123，密钥 {key}。{EVENTS}").text
    assert subject in shown, shown
    assert "STUDY-123" not in shown and key not in shown, shown
