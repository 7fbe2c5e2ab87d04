"""The operator's own patterns: refused at load when they cannot compile, match nothing at all or visibly stall; and
bounded where they run, failing closed, for a stall no check at load can foresee."""

from __future__ import annotations

import pytest

from chronicle.redaction.operator_patterns import check_pattern
from chronicle.redaction.redactor import Redactor
from chronicle.redaction.tokens import SafeShapes
from chronicle.settings import Settings
from chronicle.settings_errors import settings_problem


@pytest.mark.parametrize(("variable", "pattern", "said"), [
    ("CHRONICLE_REDACT_EXTRA_PATTERNS", '["(unclosed"]', "is not a regular expression"),
    ("CHRONICLE_REDACT_EXTRA_PATTERNS", '["STUDY-\\\\d*", "(a|aa)+$"]', "backtracks without end on a run of 'a'"),
    ("CHRONICLE_REDACT_EXTRA_PATTERNS", '["(\\\\d|\\\\d\\\\d)+$"]', "backtracks without end on a run of '0'"),
    ("CHRONICLE_REDACT_EXTRA_PATTERNS", '["X?"]', "matches the empty string"),
    ("CHRONICLE_REDACT_SUBJECT_ID_PATTERN", "([A-Z]|[A-Z]{2})+\\d*$", "backtracks without end on a run of 'A'"),
    ("CHRONICLE_REDACT_SUBJECT_ID_PATTERN", "[A-Z", "is not a regular expression"),
])
def test_a_pattern_that_cannot_work_is_one_settings_line(monkeypatch: pytest.MonkeyPatch, variable: str,
                                                         pattern: str, said: str) -> None:
    monkeypatch.setenv(variable, pattern)
    with pytest.raises(ValueError) as refused:
        Settings()
    problem = settings_problem(refused.value)
    assert problem.startswith(f"setting {variable}: ") and said in problem and "\n" not in problem, problem


def test_sane_patterns_pass_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_REDACT_EXTRA_PATTERNS", '["XH-\\\\d+", "(?i)internal[-_ ]?code\\\\s*\\\\w+"]')
    monkeypatch.setenv("CHRONICLE_REDACT_SUBJECT_ID_PATTERN", "SUBJ[A-Za-z0-9]{16}")
    redact = Settings().redact
    assert redact.extra_patterns == ["XH-\\d+", "(?i)internal[-_ ]?code\\s*\\w+"]
    assert check_pattern(redact.subject_id_pattern) == "SUBJ[A-Za-z0-9]{16}"


def test_a_stall_the_load_check_missed_hides_the_text_and_returns() -> None:
    """`(q|qq)+$` gives itself away only on a run of `q`, which the load check does not try: the search is
    bounded, and the text it could not judge is hidden whole rather than let through or waited on."""
    redactor = Redactor.build(["(q|qq)+$"])
    stalling = "q" * 80 + "!"
    assert redactor.redact(stalling) == "[REDACTED:custom]"
    assert redactor.redact("qq") == "[REDACTED:custom]"  # a match is still a match
    assert redactor.redact("nothing to see") == "nothing to see"


def test_a_subject_id_pattern_that_stalls_declares_nothing_safe() -> None:
    shapes = SafeShapes(subject_id="(Q|QQ)+X")
    assert shapes.safe("QQQX")
    assert not shapes.safe("Q" * 80 + "Y")
    assert SafeShapes().safe("XH201-01-003")  # the default stays on the built-in engine
