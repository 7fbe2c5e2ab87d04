"""One week, start to finish, without I/O: the cache decision, then the offline or the LLM engine.

The LLM is reached only through the `call(messages, purpose)` function the task layer passes in
(a `ChatClient` behind the shared `llm` concurrency slot), so everything here is testable with a
scripted callable and holds no database connection.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chronicle.llm.call import LLMCall
from chronicle.settings import Settings
from chronicle.weekly.faithfulness import check_report, cited_ids
from chronicle.weekly.model import EMPTY_MODEL, OFFLINE_MODEL, StoredReport, WeekDigest, WeekInput, WeekReport
from chronicle.weekly.offline import EMPTY_SUMMARY, OFFLINE_VERSION, clean_length, language_of, offline_report
from chronicle.weekly.prompt import (
    PROMPT_VERSION,
    cite_messages,
    entry_line,
    map_messages,
    shorten_messages,
    weekly_messages,
)
from chronicle.weekly.stats import parse_llm_stats
from chronicle.weekly.tokens import estimate_tokens
from chronicle.weeks import IsoWeek

MAX_SHORTEN = 2  # seed 000 wants ≤ 500 字; two polite requests, then a human decides
MAX_CITE = 1  # a reply citing nothing is asked once more, then stored flagged (`uncited` reasons)
MAX_MAP_LEVELS = 3
_EXTRAS_RE = re.compile(r"```json\s*(\{.*?\})\s*```", re.S)


@dataclass(frozen=True)
class Decision:
    """What to do with one week: write it, answer from the stored report, or leave a human edit alone."""

    action: Literal["generate", "cached", "skip-edited"]
    why: str
    stale: bool = False  # skip-edited only: the week's inputs changed since the edit

    @property
    def kept_as(self) -> str:
        """The outcome of a week answered from its stored report: "cached", or "skipped-edited" (an edit kept)."""
        return "cached" if self.action == "cached" else "skipped-edited"


@dataclass(frozen=True)
class WeekJob:
    """One project-week to run, as planned: its input, its stored report then, and the cache decision made
    then — once, at planning; running it never decides again (only a report written since the plan is
    weighed, by the week's claim). `overwrite_edited`: the run's option the decision was made under, which
    its write obeys too. `lease_owner`: the fan-out whose leases the week is owned on, if it runs in the
    fan-out's process."""

    input: WeekInput
    stored: StoredReport | None
    decision: Decision
    overwrite_edited: bool = False
    lease_owner: str | None = None

    @property
    def project_id(self) -> str:
        return self.input.project_id

    @property
    def week(self) -> IsoWeek:
        return self.input.week

    def claim_key(self, engine_model: str) -> str:
        """The week's cache key (project, week, input hash, model, prompt version) as the key its writer owns."""
        week = self.input
        model = target_model(week, engine_model)
        return f"week:{week.project_id}:{week.week.number}:{week.input_hash}:{model}:{version_for(model)}"


def engine_model(settings: Settings) -> str:
    """The model a fresh report records: the offline engine unless an endpoint is configured."""
    return OFFLINE_MODEL if settings.llm.offline else settings.llm.model


def target_model(week: WeekInput | WeekDigest, engine_model: str) -> str:
    """The model a fresh report would record: zero-entry weeks need none."""
    return engine_model if week.entry_count else EMPTY_MODEL


def version_for(model: str) -> str:
    """The `prompt_version` a report by `model` records: the offline engine's own version (its text is written by
    code, not by a prompt), else the prompt's."""
    return OFFLINE_VERSION if model == OFFLINE_MODEL else PROMPT_VERSION


def decide(stored: StoredReport | None, week: WeekInput | WeekDigest, engine_model: str, *, force: bool = False,
           overwrite_edited: bool = False) -> Decision:
    """The cache decision. The stored (input_hash, model, prompt_version) IS the cache key."""
    model = target_model(week, engine_model)
    if stored is None:
        return Decision("generate", "no report yet")
    if stored.status == "edited":
        if overwrite_edited:
            return Decision("generate", "edited report overwritten on request")
        return Decision("skip-edited", "human edit is the truth", stale=stored.input_hash != week.input_hash)
    if force:
        return Decision("generate", "forced")
    if stored.input_hash != week.input_hash:
        return Decision("generate", "inputs changed")
    if stored.model != model:
        return Decision("generate", f"model changed ({stored.model} -> {model})")
    if stored.prompt_version != (version := version_for(model)):
        return Decision("generate", f"prompt changed ({stored.prompt_version} -> {version})")
    if stored.stale:
        return Decision("generate", "marked stale")
    return Decision("cached", "inputs, model and prompt unchanged")


_READ_WHY = {
    "no report yet": "first text of the week",
    "inputs changed": "rewritten: the week's log entries changed",
    "forced": "rewritten on request",
    "marked stale": "rewritten: the week's log entries had changed",
    "edited report overwritten on request": "rewritten over a person's correction, on request",
}
_READ_CHANGED = {"model": "rewritten by another engine", "prompt": "rewritten by a newer version of the engine"}


def why_written(why: str, model: str) -> str:
    """A generated version's reason (a `Decision.why`, as runs log it) as a reviewer reads it in the history: "no
    report yet" describes the state before the version, not the version itself."""
    if model == EMPTY_MODEL and why == "no report yet":
        return "no entries this week"
    if (changed := re.fullmatch(r"(model|prompt) changed \((.*) -> (.*)\)", why)) is not None:
        kind, old, new = changed.groups()
        return f"{_READ_CHANGED[kind]} ({old} → {new})"
    return _READ_WHY.get(why, why)


def recheck(stored: StoredReport, week: WeekInput) -> list[dict[str, Any]]:
    """Review reasons of a kept generated report against the week's current stats (no new text)."""
    kept = [r for r in stored.review_reasons if r.get("kind") == "over_length"]  # length does not change
    extras = stored.llm_stats if stored.llm_stats and "_rejected" not in stored.llm_stats else None
    return kept + check_report(stored.summary, week, llm_stats=extras)


def _report(week: WeekInput, summary: str, model: str, engine: str, **extra: Any) -> WeekReport:
    known = week.citation_map
    citations = {sid: known[sid] for sid in cited_ids(summary) if sid in known}
    return WeekReport(week.project_id, week.week, summary, week.stats, citations, model, version_for(model),
                      week.input_hash, len(week.entries), engine, **extra)


def empty_report(week: WeekInput) -> WeekReport:
    """A week without entries gets a fixed text, so the chronicle has no gaps (no LLM call)."""
    return _report(week, EMPTY_SUMMARY, EMPTY_MODEL, "empty")


def _over_length(text: str, max_chars: int, attempts: int) -> list[dict[str, Any]]:
    chars = clean_length(text)
    if chars <= max_chars:
        return []
    return [{"kind": "over_length", "chars": chars, "limit": max_chars, "attempts": attempts}]


def offline_week(week: WeekInput, max_chars: int) -> WeekReport:
    """The extractive report, checked like any other."""
    if not week.entries:
        return empty_report(week)
    text = offline_report(week, max_chars)
    reasons = _over_length(text, max_chars, 0) + check_report(text, week)
    return _report(week, text, OFFLINE_MODEL, "offline", needs_review=bool(reasons), review_reasons=reasons)


def split_extras(text: str) -> tuple[str, Any | None, str | None]:
    """(report without its ```json block, parsed block or None, parse error or None)."""
    # The last block is the extras; a report may legitimately quote JSON earlier.
    blocks = list(_EXTRAS_RE.finditer(text))
    match = blocks[-1] if blocks else None
    if match is None:
        return text.strip(), None, None
    body = (text[: match.start()] + text[match.end():]).strip()
    try:
        return body, json.loads(match.group(1)), None
    except ValueError as exc:
        return body, None, f"invalid JSON: {exc}"
    except RecursionError:  # a hostile block of a thousand `[`: refused like any bad block, the report stands
        return body, None, "invalid JSON: nested too deeply"


def chunk_lines(lines: Sequence[str], budget: int) -> list[list[str]]:
    """Consecutive groups of whole lines, each within `budget` tokens; a line over it is cut into pieces that are."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line) + 1
        sized = [(line, cost)] if cost <= budget else [(p, estimate_tokens(p) + 1) for p in _pieces(line, budget)]
        for piece, size in sized:
            if current and used + size > budget:
                chunks.append(current)
                current, used = [], 0
            current.append(piece)
            used += size
    if current:
        chunks.append(current)
    return chunks


_LABEL = re.compile(r"\[E\d+\]")


def _pieces(line: str, budget: int) -> list[str]:
    """A line over `budget` tokens (a document pasted into one log entry) as consecutive pieces within it, each
    after the first opened by the line's citation label: the map steps read every character of it and can cite it,
    where one request holding it whole was over any model's context and failed its week."""
    label = f"{m.group(0)} … " if (m := _LABEL.match(line)) else ""
    room = max(1, budget - 1 - estimate_tokens(label))
    pieces, start = [], 0
    while start < len(line):
        lo, hi = start + 1, min(len(line), start + 4 * room)  # a token is at most 4 characters
        while lo < hi:  # the longest piece from `start` within `room`
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if estimate_tokens(line[start:mid]) <= room else (lo, mid - 1)
        pieces.append(line[start:lo])
        start = lo
    return [pieces[0], *(label + piece for piece in pieces[1:])]


def _condense(week: WeekInput, lines: list[str], call: LLMCall, *, budget: int, max_chars: int,
              lang: str) -> tuple[list[str], int]:
    """Map steps until the notes fit the budget; returns (notes, calls made). Nothing is truncated."""
    calls = 0
    for _ in range(MAX_MAP_LEVELS):
        if estimate_tokens("\n".join(lines)) <= budget:
            break
        chunks = chunk_lines(lines, budget)
        notes = []
        for i, chunk in enumerate(chunks, start=1):
            notes.append(call(map_messages(week, chunk, part=i, parts=len(chunks), language=lang,
                                           max_chars=max_chars), "map").strip())
            calls += 1
        lines = notes
    return lines, calls


def _ask_for_citations(week: WeekInput, call: LLMCall, text: str, calls: int, extras: Any, extras_error: str | None,
                       lang: str, max_chars: int) -> tuple[str, int, Any, str | None]:
    """A reply that cites no entry is asked once more (purpose `cite`); the answer is kept only if it cites
    something and is not over the length limit the shorten loop enforced, else the first reply stands (and the
    guard flags its sentences)."""
    for _ in range(MAX_CITE):
        if cited_ids(text) or not text.strip():
            break
        answer = call(cite_messages(text, language=lang, max_chars=max_chars), "cite")
        calls += 1
        again, again_extras, again_error = split_extras(answer)
        if cited_ids(again) and clean_length(again) <= max(max_chars, clean_length(text)):
            text = again
            if again_extras is not None or again_error:
                extras, extras_error = again_extras, again_error
    return text, calls, extras, extras_error


def llm_week(week: WeekInput, call: LLMCall, *, model: str, max_chars: int, context_tokens: int) -> WeekReport:
    """Write the report with the LLM: map-reduce for big weeks, shorten loop, faithfulness check."""
    if not week.entries:
        return empty_report(week)
    lang = language_of(week)
    lines = [entry_line(e) for e in week.entries]
    calls = 0
    if estimate_tokens("\n".join(lines)) > context_tokens:
        notes, calls = _condense(week, lines, call, budget=context_tokens, max_chars=max_chars, lang=lang)
        answer = call(weekly_messages(week, notes, max_chars=max_chars, language=lang, partial=True), "reduce")
    else:
        answer = call(weekly_messages(week, lines, max_chars=max_chars, language=lang), "weekly_report")
    calls += 1
    text, extras, extras_error = split_extras(answer)
    attempts = 0
    while clean_length(text) > max_chars and attempts < MAX_SHORTEN:
        attempts += 1
        shorter = call(shorten_messages(text, chars=clean_length(text), max_chars=max_chars, language=lang),
                       "shorten")
        calls += 1
        text, again, again_error = split_extras(shorter)
        if again is not None or again_error:
            extras, extras_error = again, again_error
    text, calls, extras, extras_error = _ask_for_citations(week, call, text, calls, extras, extras_error, lang,
                                                           max_chars)
    llm_stats = None
    if extras is not None:
        llm_stats, extras_error = parse_llm_stats(extras)
    reasons = _over_length(text, max_chars, attempts) + check_report(text, week, llm_stats=llm_stats)
    if extras_error:
        llm_stats = {"_rejected": extras_error}  # kept visible, never used as counts
    return _report(week, text, model, "llm", needs_review=bool(reasons), review_reasons=reasons,
                   llm_stats=llm_stats, llm_calls=calls)
