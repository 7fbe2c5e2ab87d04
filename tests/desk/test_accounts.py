"""Desk accounts on a real DuckDB file: argon2 hashes, roles per project, throttling shared through the database,
disabled accounts, and an audit row for every sign-in and refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronicle.settings import Settings

PASSWORD = "a long enough secret"


def _db(settings: Settings, sql: str) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute(sql).fetchall()


def test_a_password_is_stored_as_an_argon2_hash_and_checked(settings: Settings) -> None:
    from chronicle.services.accounts import LoginRefused, add_user, authenticate

    add_user(settings, "ana", "Dr. Ana Li", PASSWORD, {"XH201": "reviewer"})
    ((stored,),) = _db(settings, "SELECT password_hash FROM desk_accounts")
    assert stored.startswith("$argon2") and PASSWORD not in stored
    account = authenticate(settings, "ana", PASSWORD, remote="10.0.0.1")
    assert (account.username, account.printed_name) == ("ana", "Dr. Ana Li")
    with pytest.raises(LoginRefused) as refused:
        authenticate(settings, "ana", PASSWORD + "x", remote="10.0.0.1")
    assert refused.value.reason == "wrong-password" and "wrong username or password" in str(refused.value)
    with pytest.raises(LoginRefused) as unknown:
        authenticate(settings, "nobody", PASSWORD, remote="10.0.0.1")
    assert unknown.value.reason == "unknown-user" and str(unknown.value) == str(refused.value)  # no name probing


def test_roles_per_project_and_for_every_project(settings: Settings, light_argon2: None) -> None:
    from chronicle.services.accounts import add_user, get_account, grant

    add_user(settings, "rd", "Reader", PASSWORD, {"A": "reader"})
    reader = get_account(settings, "rd")
    assert reader is not None and reader.can_read("A") and not reader.can_review("A") and not reader.can_read("B")
    assert [p for p in ("A", "B", "C") if reader.can_read(p)] == ["A"]
    everywhere = grant(settings, "rd", "*", "reviewer")
    assert everywhere.can_review("B") and everywhere.role_for("A") == "reviewer"  # the stronger of the two
    revoked = grant(settings, "rd", "*", None)
    assert revoked.roles == {"A": "reader"} and not revoked.can_read("B")


def test_bad_account_input_is_refused_with_a_reason(settings: Settings, light_argon2: None) -> None:
    from chronicle.services.accounts import AccountError, add_user, grant

    for args, words in ((("a b", "N", PASSWORD), "username"), (("ok", "", PASSWORD), "printed name"),
                        (("ok", "N", "short"), "shorter than"), (("ok", "N\x07", PASSWORD), "control")):
        with pytest.raises(AccountError, match=words):
            add_user(settings, *args)
    with pytest.raises(AccountError, match="unknown role"):
        add_user(settings, "ok", "N", PASSWORD, {"A": "owner"})
    add_user(settings, "ok", "N", PASSWORD)
    with pytest.raises(AccountError, match="exists already"):
        add_user(settings, "ok", "Other", PASSWORD)
    with pytest.raises(AccountError, match="no account"):
        grant(settings, "ghost", "A", "reader")
    assert _db(settings, "SELECT count(*) FROM desk_accounts") == [(1,)]


def test_throttling_counts_failures_per_account_and_address_in_the_database(home: Path, light_argon2: None,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.services.accounts import LoginRefused, add_user, authenticate

    monkeypatch.setenv("CHRONICLE_DESK_LOGIN_MAX_FAILURES", "3")
    settings = Settings()
    add_user(settings, "ana", "Ana", PASSWORD, {"*": "reader"})
    for _ in range(3):
        with pytest.raises(LoginRefused, match="wrong username"):
            authenticate(settings, "ana", "guess", remote="10.0.0.9")
    with pytest.raises(LoginRefused) as throttled:  # even the right password, from that address
        authenticate(settings, "ana", PASSWORD, remote="10.0.0.9")
    assert throttled.value.reason == "throttled"
    # Another process (a second desk worker) reads the same count: a fresh Settings, the same file.
    with pytest.raises(LoginRefused, match="too many"):
        authenticate(Settings(), "ana", PASSWORD, remote="10.0.0.9")
    assert authenticate(settings, "ana", PASSWORD, remote="10.0.0.10").username == "ana"  # other address


def test_throttling_ends_with_the_window_and_a_success_resets_the_count(home: Path, light_argon2: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.services.accounts import LoginRefused, add_user, authenticate

    monkeypatch.setenv("CHRONICLE_DESK_LOGIN_MAX_FAILURES", "2")
    settings = Settings()
    add_user(settings, "ana", "Ana", PASSWORD, {"*": "reader"})
    with pytest.raises(LoginRefused):
        authenticate(settings, "ana", "guess", remote="r")
    authenticate(settings, "ana", PASSWORD, remote="r")  # resets
    with pytest.raises(LoginRefused, match="wrong"):
        authenticate(settings, "ana", "guess", remote="r")
    with pytest.raises(LoginRefused, match="wrong"):
        authenticate(settings, "ana", "guess", remote="r")
    with pytest.raises(LoginRefused, match="too many"):
        authenticate(settings, "ana", PASSWORD, remote="r")
    # The window is counted in the database: failures older than it no longer count.
    _db(settings, "UPDATE desk_login_attempts SET tried_at = tried_at - INTERVAL 2 HOUR")
    assert authenticate(settings, "ana", PASSWORD, remote="r").username == "ana"


def test_a_disabled_account_cannot_sign_in_and_keeps_its_history(settings: Settings, light_argon2: None) -> None:
    from chronicle.services.accounts import LoginRefused, add_user, authenticate, disable_user, set_password
    from chronicle.services.audit import audit_trail

    add_user(settings, "bob", "Bob", PASSWORD, {"A": "reviewer"})
    disabled = disable_user(settings, "bob")
    assert disabled.disabled and not disabled.can_read("A")
    with pytest.raises(LoginRefused) as refused:
        authenticate(settings, "bob", PASSWORD, remote="r")
    assert refused.value.reason == "disabled"
    disable_user(settings, "bob", disabled=False)
    set_password(settings, "bob", "another long secret")
    with pytest.raises(LoginRefused):
        authenticate(settings, "bob", PASSWORD, remote="r")
    assert authenticate(settings, "bob", "another long secret", remote="r").can_review("A")
    trail = [(r.action, r.outcome, r.actor, r.remote) for r in audit_trail(settings, None)]
    assert trail == [("user-add", "ok", "cli", "cli"), ("user-disable", "ok", "cli", "cli"),
                     ("login", "refused:disabled", "bob", "r"), ("user-enable", "ok", "cli", "cli"),
                     ("user-passwd", "ok", "cli", "cli"), ("login", "refused:wrong-password", "bob", "r"),
                     ("login", "ok", "bob", "r")]
    assert all(r.at.tzinfo is None for r in audit_trail(settings, None))  # stored UTC, naive like every column
