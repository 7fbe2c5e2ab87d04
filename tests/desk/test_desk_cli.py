"""The desk's command line: accounts scripted without a terminal, corrections that name their author and reason,
acceptance as a signature, and stored text printed in time linear in its length."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD, PROJECT

runner = CliRunner()
WEEK = "2025-W30"


def _cli(*args: str, code: int = 0, stdin: str | None = None) -> str:
    from chronicle.cli.main import app

    result = runner.invoke(app, list(args), input=stdin, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_accounts_are_managed_from_the_command_line_with_the_password_on_stdin(settings: Settings,
                                                                                light_argon2: None) -> None:
    from chronicle.services.accounts import authenticate, get_account

    out = _cli("desk", "user", "add", "ana", "--name", "Dr. Ana Li", "--role", "XH201=reviewer", "--role", "*=reader",
               "--password-stdin", stdin=PASSWORD + "\n")
    assert "ana “Dr. Ana Li”: *=reader, XH201=reviewer" in out
    assert authenticate(settings, "ana", PASSWORD, remote="t").can_review("XH201")
    assert "is shorter than" in _cli("desk", "user", "passwd", "ana", "--password-stdin", stdin="short\n", code=2)
    _cli("desk", "user", "passwd", "ana", "--password-stdin", stdin="a new long password\n")
    assert authenticate(settings, "ana", "a new long password", remote="t")
    _cli("desk", "user", "grant", "ana", "-p", "XH201", "--role", "none")
    assert "(disabled)" in _cli("desk", "user", "disable", "ana")
    account = get_account(settings, "ana")
    assert account is not None and account.disabled and account.roles == {"*": "reader"}
    assert "PROJECT=ROLE" in _cli("desk", "user", "add", "bo", "--name", "Bo", "--role", "reviewer",
                                  "--password-stdin", stdin=PASSWORD + "\n", code=2)
    assert "exists already" in _cli("desk", "user", "add", "ana", "--name", "X", "--password-stdin",
                                    stdin=PASSWORD + "\n", code=2)
    # A password handed over: marked temporary until its owner changes it; `list` shows every account.
    assert "(temporary password)" in _cli("desk", "user", "add", "bo", "--name", "Bo", "--role", "XH201=reviewer",
                                          "--temporary", "--password-stdin", stdin=PASSWORD + "\n")
    listed = _cli("desk", "user", "list")
    assert "ana “Dr. Ana Li” (disabled): *=reader" in listed
    assert "bo “Bo” (temporary password): XH201=reviewer" in listed
    assert "temporary" not in _cli("desk", "user", "passwd", "bo", "--password-stdin", stdin="bo's own passphrase\n")
    assert "temporary" in _cli("desk", "user", "passwd", "bo", "--temporary", "--password-stdin", stdin=PASSWORD + "\n")


def test_report_edit_names_its_author_and_reason_and_accept_signs(written: Settings, reviewer: str,
                                                                   tmp_path: Path) -> None:
    from chronicle.services.reports import signatures
    from chronicle.weeks import IsoWeek

    fixed = tmp_path / "fixed.md"
    fixed.write_text("本周入组 9 人 [E9]。\n", encoding="utf-8")
    edit = ("report", "edit", "-p", PROJECT, "-w", WEEK, "--file", str(fixed))
    assert "--reason" in _cli(*edit, "--author", "x", code=2)  # a reason is required
    assert "say who corrects" in _cli(*edit, "--reason", "r", code=2)
    assert "no enabled desk account" in _cli(*edit, "--reason", "r", "--as", "nobody", code=2)
    out = _cli(*edit, "--reason", "recount", "--as", reviewer)
    assert "stored version 2" in out and "needs review: “入组 9 人” but the log counts enrolled this week = 3" in out
    assert "ana" in _cli("report", "history", "-p", PROJECT, "-w", WEEK)
    conflict = _cli(*edit, "--reason", "again", "--as", reviewer, "--base-version", "1", code=1)
    assert "you started from version 1, it is now version 2" in conflict and "+本周入组 9 人 [E9]。" in conflict

    assert "sign-in refused" in _cli("review", "accept", "-p", PROJECT, "-w", WEEK, "--as", reviewer,
                                     "--password-stdin", stdin="wrong\n", code=1)
    out = _cli("review", "accept", "-p", PROJECT, "-w", WEEK, "--as", reviewer, "--password-stdin",
               stdin=PASSWORD + "\n")
    assert "signed by Dr. Ana Li (ana)" in out and "meaning reviewed" in out
    (sig,) = signatures(written, PROJECT, IsoWeek.parse(WEEK))
    assert (sig.version, sig.meaning, sig.current) == (2, "reviewed", True)


def test_a_long_correction_is_printed_without_the_highlighter(written: Settings, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich's highlighter is quadratic on long runs without punctuation (minutes for `report show`): stored text is
    printed as plain Text, so no highlighter ever sees more than a short line."""
    from rich.highlighter import ReprHighlighter

    seen: list[int] = []
    highlight = ReprHighlighter.highlight

    def spy(self, text):  # type: ignore[no-untyped-def]
        seen.append(len(text.plain))
        return highlight(self, text)

    monkeypatch.setattr(ReprHighlighter, "highlight", spy)
    long = tmp_path / "long.md"
    long.write_text("入组" * 6000 + "1" * 6000 + " [E9]", encoding="utf-8")
    _cli("report", "edit", "-p", PROJECT, "-w", WEEK, "--file", str(long), "--reason", "long", "--author", "qa")
    for args in (("report", "show", "-p", PROJECT, "-w", WEEK), ("context", "--project", PROJECT),
                 ("report", "history", "-p", PROJECT, "-w", WEEK, "--full")):
        seen.clear()
        assert "入组入组入组" in _cli(*args)
        assert max(seen, default=0) < 2000, (args, max(seen))
