"""`Redacted`: text that went through the redactor, as a type the sinks can insist on (pure).

Only `Redactor.redact` makes one. Any operation on it (concatenation, formatting, `join`) gives a plain `str`
again, so a prompt assembled from redacted pieces is *not* `Redacted` — the gate in front of a sink redacts
the assembled text once more, as the sink will see it (lines joined, entries side by side), which is what
catches a label on one line and its value on the next. `gate(text, redactor)` is that one call per sink: a
no-op for text already `Redacted`, the redactor otherwise (idempotent: markers are never redacted twice).
"""

from __future__ import annotations

from typing import Protocol


class Redacted(str):
    """A `str` the redactor produced. Sinks (LLM and embedding calls, the memory store, knowledge files,
    reports) take this type; build it with `Redactor.redact` or `gate`, never by hand."""

    __slots__ = ()


class _Redacts(Protocol):
    def redact(self, text: str) -> Redacted: ...


def gate(text: str, redactor: _Redacts) -> Redacted:
    """`text` as a sink may take it: unchanged when it is already `Redacted`, else redacted now."""
    return text if isinstance(text, Redacted) else redactor.redact(text)
