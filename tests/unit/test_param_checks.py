"""The parameter rules every entry point shares (chronicle.param_checks): pure, one message per mistake."""

from __future__ import annotations

from datetime import date

import pytest

from chronicle.param_checks import (
    ParameterError,
    check_between,
    check_paths,
    check_project,
    check_range,
    check_roots,
    name_part,
    parse_day,
    parse_week,
    week_label,
    weeks_in_year,
)
from chronicle.weeks import IsoWeek


@pytest.mark.parametrize(("text", "week"), [("2026-W05", IsoWeek(2026, 5)), (" 2020-W53 ", IsoWeek(2020, 53)),
                                            ("2026-w01", IsoWeek(2026, 1)), ("", None), (None, None), ("  ", None)])
def test_weeks_that_parse(text: str | None, week: IsoWeek | None) -> None:
    assert parse_week(text, "start_week") == week


@pytest.mark.parametrize(("text", "says"), [
    ("2025-W53", "start_week '2025-W53' does not exist: 2025 has ISO weeks W01 to W52"),
    ("2026-W60", "start_week '2026-W60' does not exist: 2026 has ISO weeks W01 to W53"),
    ("2026-W00", "does not exist"),
    ("2026-13", "start_week '2026-13' is not an ISO week: write YYYY-Www, e.g. 2026-W05"),
    ("2026W05", "is not an ISO week"), ("2026-W5", "is not an ISO week"), ("0000-W01", "is not an ISO week"),
    ("next week", "is not an ISO week"),
])
def test_weeks_that_do_not_parse_name_the_parameter_the_value_and_the_format(text: str, says: str) -> None:
    with pytest.raises(ParameterError) as caught:
        parse_week(text, "start_week")
    assert says in str(caught.value)
    assert "YYYY-Www, e.g. 2026-W05" in str(caught.value)


def test_weeks_in_year() -> None:
    assert [weeks_in_year(y) for y in (2020, 2024, 2025, 2026)] == [53, 52, 52, 53]


def test_reversed_range_names_both_ends() -> None:
    check_range(IsoWeek(2025, 20), IsoWeek(2025, 30), "start_week", "end_week")
    check_range(None, IsoWeek(2025, 30), "start_week", "end_week")
    with pytest.raises(ParameterError, match=r"start_week 2025-W30 is after end_week 2025-W20: the range is reversed"):
        check_range(IsoWeek(2025, 30), IsoWeek(2025, 20), "start_week", "end_week")


def test_unknown_project_names_it_the_known_ones_and_the_closest() -> None:
    assert check_project(" XH201 ", ["XH201", "XH305"]) == "XH201"
    with pytest.raises(ParameterError) as caught:
        check_project("XH999", ["XH201", "XH305"])
    assert str(caught.value) == "unknown project 'XH999'; known projects: XH201, XH305"
    with pytest.raises(ParameterError, match=r"unknown project 'XH210' \(did you mean 'XH201'\?\); known projects"):
        check_project("XH210", ["XH201", "XH305"])
    with pytest.raises(ParameterError, match="no project has entries yet"):
        check_project("XH201", [])
    with pytest.raises(ParameterError, match="project_id is empty"):
        check_project("  ", ["A"])
    many = [f"P{i:03d}" for i in range(30)]
    with pytest.raises(ParameterError, match="and 10 more"):
        check_project("zzz", many)


def test_days_paths_and_ranges() -> None:
    assert parse_day("2026-04-26", "until") == date(2026, 4, 26)
    assert parse_day(date(2026, 4, 26), "until") == date(2026, 4, 26)
    assert parse_day("", "until") is None
    with pytest.raises(ParameterError, match=r"until '2026-02-30' is not a day: write YYYY-MM-DD"):
        parse_day("2026-02-30", "until")
    assert check_between(7, "days", 1, 366) == 7
    with pytest.raises(ParameterError, match="days 0 is out of range: 1 to 366"):
        check_between(0, "days", 1, 366)
    with pytest.raises(ParameterError, match="paths is empty"):
        check_paths([], [])
    with pytest.raises(ParameterError, match=r"no such file or folder: /nope$"):
        check_paths(["/nope"], ["/nope"])


def test_a_refused_path_among_several_is_named_by_its_place_too() -> None:
    """A generated file name is redacted wherever the message is shown; its place still says which one it was."""
    from chronicle.redaction.redactor import Redactor

    given = ["/logs/a.jsonl", "/exports/run_a8Fk29dLq0Zx3Vn7.jsonl", "/logs/b.jsonl"]
    with pytest.raises(ParameterError) as missing:
        check_paths(given, given[1:2])
    shown = Redactor.build().redact(str(missing.value))
    assert shown.endswith("(no. 2 of the 3 given)") and "a8Fk29dLq0Zx3Vn7" not in shown, shown
    with pytest.raises(ParameterError, match=r"outside the input roots: /logs/a.jsonl, /logs/b.jsonl "
                                             r"\(no. 1, 3 of the 3 given\) \(add the folder"):
        check_roots(given, [given[0], given[2]])


@pytest.mark.parametrize(("value", "label"), [("2026-W05", "2026W05"), ("", "first"), (None, "first"),
                                              ("2025-W53", "2025-W53"), ("x/../y z", "x_.._y_z"), (42, "42")])
def test_run_name_parts_never_raise(value: object, label: str) -> None:
    assert week_label(value, "first") == label


def test_name_part_is_bounded() -> None:
    assert len(name_part("p" * 500, "all")) == 40
    assert name_part("", "all") == "all" and name_part("  ", "all") == "all"


def test_conninfo_password_is_masked_and_the_message_around_it_kept() -> None:
    from chronicle.settings import mask_conninfo

    said = 'Failed to attach "host=db password=s3cr3t dbname=chronicle": Unable to connect'
    assert mask_conninfo(said) == 'Failed to attach "host=db password=**** dbname=chronicle": Unable to connect'
    assert mask_conninfo('password=ab"cd host=h') == "password=**** host=h"  # a quote inside stays masked
    assert mask_conninfo('password=pw') == "password=****"
    assert mask_conninfo('connect "dbname=x password=pw": Unable') == 'connect "dbname=x password=****": Unable'
    assert mask_conninfo("password='a b\\'c' host=h") == "password=**** host=h"
    assert mask_conninfo("postgresql://bob:pw@db/x") == "postgresql://bob:****@db/x"


def test_a_run_name_meets_the_redaction_the_operator_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's name is a sink like the others: an identifier shape the operator added is hidden there too."""
    assert name_part("MRN004211", "none") == "MRN004211"
    monkeypatch.setenv("CHRONICLE_REDACT_EXTRA_PATTERNS", '["MRN\\\\d{6}"]')
    assert name_part("MRN004211", "none") == "REDACTED_custom"
    monkeypatch.setenv("CHRONICLE_REDACT_EXTRA_PATTERNS", "not json")  # settings that fail: the built-in rules
    assert name_part("13912345678", "none") == "REDACTED_phone"
