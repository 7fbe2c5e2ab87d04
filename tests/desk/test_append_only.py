"""Signed versions, signatures, audit rows and sign-in attempts are only ever added: no statement anywhere in the
package (every layer, the desk included) updates, deletes, truncates or drops them. Checked on the source, so a new
write path that would rewrite history fails here before it ships."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = ("chronicle", "storage", "services", "cli", "flows", "tasks", "deployments", "desk")
APPEND_ONLY = ("weekly_report_versions", "report_signatures", "desk_audit", "desk_login_attempts")
REWRITE = re.compile(r"\b(?:UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|"
                     r"ALTER\s+TABLE|INSERT\s+OR\s+REPLACE\s+INTO|MERGE\s+INTO)\s+(?:\w+\.)?(" +
                     "|".join(APPEND_ONLY) + r")\b", re.I)


def _sources() -> list[Path]:
    files = [p for folder in PACKAGE if (REPO / folder).is_dir() for p in (REPO / folder).rglob("*.py")]
    shipped = sorted((REPO / "storage" / "migrations").glob("*.sql"))
    return files + [p for p in shipped if int(p.name[:4]) > 15]  # later migrations may not rewrite them either


def test_no_statement_rewrites_versions_signatures_or_audit_rows() -> None:
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in _sources()
             for m in REWRITE.finditer(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_check_sees_a_rewrite() -> None:
    assert REWRITE.search("conn.execute('UPDATE desk_audit SET outcome = ?')")
    assert REWRITE.search("DELETE FROM lake.report_signatures WHERE true")
    assert not REWRITE.search("UPDATE weekly_reports SET needs_review = false")
