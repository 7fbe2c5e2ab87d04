"""No function only forwards its arguments across a layer unless scripts/forwarders.py says why it stays."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from scripts.forwarders import ALLOWED, canon, find

REPO = Path(__file__).resolve().parents[1]


def test_every_forwarder_is_allowed_with_a_reason() -> None:
    found = {f.name: f for f in find(REPO)}
    allowed = {canon(name) for name in ALLOWED}
    unexplained = sorted(set(found) - allowed)
    assert not unexplained, f"functions that only forward across a layer: {unexplained} (call the target, or "
    "use chronicle.storage.db.read, or add them to ALLOWED in scripts/forwarders.py with the reason they stay)"
    assert not sorted(allowed - set(found)), "stale ALLOWED entries: remove them"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_script_finds_a_read_forwarder(tmp_path: Path) -> None:
    """The shape the issue names: `with connect(): return sql.f(conn, ...)` in a use case."""
    (tmp_path / "services").mkdir()
    (tmp_path / "services" / "reads.py").write_text(textwrap.dedent('''
        from chronicle.storage import reports
        from chronicle.storage.db import connect


        def list_reports(settings, project_id):
            """A docstring does not make it more than a hop."""
            with connect(settings, read_only=True) as conn:
                return reports.list_reports(conn, project_id)


        def computed(settings, project_id):
            with connect(settings) as conn:
                return reports.list_reports(conn, project_id.upper())
        '''))
    expected = [("services.reads.list_reports", canon("chronicle.storage.reports.list_reports"))]
    assert [(f.name, f.target) for f in find(tmp_path)] == expected


def test_the_command_line_exits_zero_on_this_tree() -> None:
    done = subprocess.run([sys.executable, "scripts/forwarders.py"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
