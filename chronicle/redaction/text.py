"""`Redacted`: text that went through the redactor, as a type the sinks can insist on (pure).

Only `Redactor.redact` makes one. Any operation on it (concatenation, formatting, `join`) gives a plain `str`
again, so a prompt assembled from redacted pieces is *not* `Redacted` — the gate in front of a sink redacts
the assembled text once more, as the sink will see it (lines joined, entries side by side), which is what
catches a label on one line and its value on the next. `gate(text, redactor)` is that one call per sink: a
no-op for text already `Redacted`, the redactor otherwise (idempotent: markers are never redacted twice).

Python does not enforce annotations, so the sinks check at run time: `require_redacted` raises
`NotRedactedError` for a plain `str` (the embedding calls of the memory store and the embeddings endpoint, the
memory store's writes). `tests/test_architecture.py` checks that nothing outside the redactor builds one.
"""

from __future__ import annotations

from collections.abc import Iterable
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


class NotRedactedError(TypeError):
    """Plain text reached a sink that takes only `Redacted` text: the code skipped the gate (a bug, not data)."""


def require_redacted(texts: Iterable[str], sink: str) -> list[Redacted]:
    """`texts` as a list, or `NotRedactedError` naming `sink` when one is not `Redacted` (the message never
    quotes the text: it is the unredacted one)."""
    out = list(texts)
    for n, text in enumerate(out):
        if not isinstance(text, Redacted):
            raise NotRedactedError(f"{sink} takes only redacted text (chronicle.redaction.text.gate); item {n} is a "
                                   f"plain {type(text).__name__}")
    return out  # type: ignore[return-value]  # checked above
