"""Desk back-end fixtures: the sample trial (ingested once per session through the real flow, so tests using
`written` start the session's Prefect API) with a few weeks written, and accounts."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronicle.settings import Settings
from chronicle.weeks import IsoWeek
from tests.weekly.conftest import ingested_db, trial  # noqa: F401  (the shared sample fixtures)

PROJECT = "XH201"
WEEKS = ("2025-W29", "2025-W30", "2025-W31")
PASSWORD = "correct horse battery"


@pytest.fixture
def written(trial: Path) -> Settings:  # noqa: F811
    """The trial's home with XH201 2025-W29..W31 written by the offline engine (no flow run needed)."""
    from chronicle.services.weekly import plan_week, run_week

    settings = Settings()
    for week in WEEKS:
        run_week(settings, plan_week(settings, PROJECT, IsoWeek.parse(week)), "test-run")
    return settings


@pytest.fixture
def reviewer(written: Settings, light_argon2: None) -> str:
    from chronicle.services.accounts import add_user

    add_user(written, "ana", "Dr. Ana Li", PASSWORD, {PROJECT: "reviewer"})
    return "ana"


@pytest.fixture
def people(written: Settings, light_argon2: None) -> Settings:
    """The written sample weeks with three accounts: a reviewer and a reader of XH201, a reviewer of XH305."""
    from chronicle.services.accounts import add_user

    add_user(written, "ana", "Dr. Ana Li", PASSWORD, {PROJECT: "reviewer"})
    add_user(written, "rita", "Rita Reader", PASSWORD, {PROJECT: "reader"})
    add_user(written, "otto", "Otto Other", PASSWORD, {"XH305": "reviewer"})
    return written


@pytest.fixture()
def light_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id at its lightest cost, for tests whose subject is decided around the hash (roles, throttling,
    disabled accounts, the command line, the pages and signatures of `reviewer` and `people`): the shipped cost
    (64 MiB, 3 passes, 4 lanes) is slow on purpose, a quarter of a second of every core per hash or check. Still
    real argon2 hashes, salted and verified; tests/desk/test_accounts.py's first test keeps the shipped hasher."""
    from pwdlib import PasswordHash
    from pwdlib.hashers.argon2 import Argon2Hasher

    from chronicle.services import accounts

    light = PasswordHash((Argon2Hasher(time_cost=1, memory_cost=1024, parallelism=1),))
    monkeypatch.setattr(accounts, "_hasher", lambda: light)
    monkeypatch.setattr(accounts, "_dummy_hash", lambda: light.hash("chronicle-no-such-account"))
