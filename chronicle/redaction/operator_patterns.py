"""The operator's own patterns (`[redact]` extra patterns, the project's subject-id pattern): refused when the
settings load if they cannot compile or visibly stall, and bounded wherever they run.

The built-in patterns are written so that no line can stall a gate (possessive and bounded repeats). An
operator's are not reviewed: `(a|aa)+$` against a long run of `a` backtracks for longer than a trial lasts,
and the gate that runs it would hold every flow behind it. So they run on the `regex` module, whose matching
takes a timeout, and a search that times out fails closed: the text it was judging is hidden whole (an extra
pattern), or the token is not declared safe (the subject-id pattern). The same engine checks them at load
against long runs of one character, where such patterns give themselves away, so a bad one is a one-line
settings error rather than a slow run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

SEARCH_S = 0.25
"""How long one search of an operator's pattern may take: a sane pattern takes microseconds on a log line and a
few milliseconds on a week's whole prompt."""

_PROBE_S = 0.05
_PROBES = tuple(c * 64 + end for c in ("a", "A", "0", " ", "-", "_", ".", "中") for end in ("!", "\n"))
"""Long runs of one character, then one that ends the run: where nested repeats backtrack exponentially."""

log = logging.getLogger("chronicle.redaction")


@lru_cache(maxsize=64)
def check_pattern(source: str) -> str:
    """`source` if it compiles and does not stall on the probes; ValueError saying which and what to do otherwise."""
    import regex  # ~90 ms: only a home with patterns of its own pays it

    try:
        compiled = regex.compile(source)
    except regex.error as exc:
        raise ValueError(f"{source!r} is not a regular expression ({exc})") from None
    if compiled.search("") is not None:
        raise ValueError(f"{source!r} matches the empty string, so it would cut every text at every character: "
                         "make it match at least one (`+` for `*`)")
    for probe in _PROBES:
        try:
            compiled.search(probe, timeout=_PROBE_S)
        except TimeoutError:
            raise ValueError(f"{source!r} backtracks without end on a run of {probe[0]!r}: a repeat over parts that "
                             "can split the same run many ways (`(a|aa)+`, `(\\d|\\d\\d)+`) tries every split; "
                             "write it so each character is matched one way (`a+`)") from None
    return source


@dataclass(frozen=True)
class OperatorPattern:
    """An operator's pattern, compiled with `regex`; every search is bounded by `SEARCH_S`."""

    source: str
    compiled: Any = field(compare=False, repr=False)

    @classmethod
    def of(cls, source: str) -> OperatorPattern:
        import regex

        return cls(source, regex.compile(source))

    def finditer(self, text: str) -> list[Any]:
        """Every match; when the search does not end in time, one match of the whole text (it is hidden whole)."""
        try:
            return list(self.compiled.finditer(text, timeout=SEARCH_S))
        except TimeoutError:
            import regex

            log.warning("the redaction pattern %r did not finish within %.2f s on a text of %d characters; the text "
                        "is hidden whole (rewrite the pattern so that each character is matched one way)",
                        self.source, SEARCH_S, len(text))
            return [regex.fullmatch(r"(?s).+", text)]

    def fullmatch(self, text: str) -> bool:
        """Whether `text` matches whole; False when the search did not end in time (the token is then not safe)."""
        try:
            return self.compiled.fullmatch(text, timeout=SEARCH_S) is not None
        except TimeoutError:
            log.warning("the subject-id pattern %r did not finish within %.2f s on a token of %d characters; the "
                        "token is not treated as a subject id", self.source, SEARCH_S, len(text))
            return False
