"""What a correction must be before it is stored, and how it is compared: the checks shared by the CLI and the desk.

A correction is refused (InvalidEdit, nothing stored) when it is empty, carries control or NUL bytes (a binary file
pinned as the week's truth), invisible direction overrides (text that reads differently than it is stored), is
absurdly long, or comes without a reason or an author. The faithfulness guard of generated reports judges the new
text against the week's entries and stats; its reasons are stored with the version and flag it.
"""

from __future__ import annotations

import difflib
import unicodedata
from typing import Any

from chronicle.weekly.faithfulness import check_report
from chronicle.weekly.guard.text import sentences, strip_citations
from chronicle.weekly.model import WeekInput

MAX_REASON = 2000
MAX_AUTHOR = 200
_ALLOWED_CONTROLS = {"\n", "\t"}
# Bidirectional overrides and isolates: they make text display in another order than it is stored.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
FLAGGED_REASON = {"kind": "edited_unreviewed",
                  "detail": "corrected from a flagged version; awaits a reviewer's sign-off"}
"""The reason an edit of a flagged week carries when the guard finds nothing in it (a sign-off clears it)."""


class InvalidEdit(ValueError):
    """A correction refused before anything is stored; the message says what to fix."""


def _bad_char(text: str) -> tuple[int, str] | None:
    for i, ch in enumerate(text):
        if ch in _ALLOWED_CONTROLS:
            continue
        if ch in _BIDI or unicodedata.category(ch) in ("Cc", "Cs"):
            return i, ch
    return None


def clean_field(value: str | None, what: str, limit: int) -> str:
    """A required one-line-ish field (reason, author): stripped, present, printable, not too long."""
    value = (value or "").replace("\r\n", "\n").strip()
    if not value:
        raise InvalidEdit(f"{what} is required (it is kept with the version in the history)")
    if len(value) > limit:
        raise InvalidEdit(f"{what} is {len(value)} characters long; at most {limit}")
    if (bad := _bad_char(value)) is not None:
        raise InvalidEdit(f"{what} contains the control character U+{ord(bad[1]):04X}")
    return value


def clean_text(text: str | None, max_chars: int) -> str:
    """The correction as it will be stored (line ends normalised, outer blank space removed), or InvalidEdit."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise InvalidEdit("the corrected text is empty: nothing stored (an edit replaces the report's text; write "
                          "the corrected report)")
    if len(text) > max_chars:
        raise InvalidEdit(f"the corrected text is {len(text)} characters long; a report is at most {max_chars} "
                          "(CHRONICLE_EDIT_MAX_CHARS)")
    if (bad := _bad_char(text)) is not None:
        i, ch = bad
        line = text.count("\n", 0, i) + 1
        what = "a NUL byte" if ch == "\x00" else f"the control character U+{ord(ch):04X}"
        raise InvalidEdit(f"the corrected text contains {what} (line {line}, character {i + 1}); nothing stored — "
                          "is it a text file?")
    return text


def diff_lines(old: str, new: str, *, old_label: str, new_label: str) -> list[str]:
    """A unified diff of two texts, line by line (no trailing newlines).

    Never empty: two versions with the same text (a regeneration that wrote what was there) still name both, so
    a refusal or a history page never shows a blank where the reader expects what changed."""
    lines = [line.rstrip("\n") for line in difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=old_label, tofile=new_label, lineterm="")]
    return lines or [f"--- {old_label}", f"+++ {new_label}", " (the text is the same)"]


def _with_sentence(reason: dict[str, Any], text: str) -> dict[str, Any]:
    """A guard reason with the sentence it concerns (count reasons name only the phrase)."""
    if reason.get("sentence") or not reason.get("text"):
        return reason
    for s in sentences(text):
        if reason["text"] in s.bare:
            return {**reason, "sentence": " ".join(strip_citations(s.bare).split())}
    return reason


def guard_reasons(text: str, week: WeekInput, *, was_flagged: bool) -> list[dict[str, Any]]:
    """The faithfulness guard's reasons on a correction, each with its sentence; a correction of a flagged week
    that the guard finds nothing in still awaits a sign-off (an edit never clears a flag by itself)."""
    reasons = [_with_sentence(r, text) for r in check_report(text, week)]
    if was_flagged and not reasons:
        reasons.append(dict(FLAGGED_REASON))
    return reasons
