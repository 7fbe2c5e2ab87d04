"""The operator's redactor: the built-in rules with `[redact]`'s patterns and safe shapes, built in one place for
every sink (`tests/test_architecture.py` finds any other reader of those settings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chronicle.redaction.redactor import Redactor
from chronicle.redaction.tokens import SafeShapes

if TYPE_CHECKING:
    from chronicle.settings import Settings


def redactor_for(settings: Settings) -> Redactor:
    """The redactor the operator configured (`[redact]`: its extra patterns, the project's subject-id pattern,
    whether commit hashes are safe), compiled once. Every sink whose caller has the settings gates with this one:
    a stricter choice that held for the LLM's prompts but not for a clinician's correction or a memory was a leak.
    """
    redact = settings.redact
    return Redactor.build(redact.extra_patterns, SafeShapes(subject_id=redact.subject_id_pattern,
                                                            commit_hashes=redact.commit_hashes_safe))


def entry_redactor() -> Redactor:
    """`redactor_for` the entry point's settings, for a sink reached before any settings are passed down (a run's
    name, a command's echo); the built-in rules when the settings are what failed to load."""
    from chronicle.settings import load_settings
    from chronicle.settings_errors import SETTINGS_ERRORS

    try:
        return redactor_for(load_settings())
    except SETTINGS_ERRORS:
        return Redactor.build()
