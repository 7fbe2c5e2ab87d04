"""The chronicle's read side: `build_history_context` (seed 000's block) and `ask_chronicle`.

One short read of `weekly_reports` (edited text where it exists), rollups built only for folded periods
whose covered reports changed (offline: extractively; with an endpoint through the LLM gate, purpose
"rollup"), and one short write of them. The planning and rendering are the pure `chronicle.weekly.context`.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from chronicle.redaction.configured import redactor_for
from chronicle.services.llm_gate import llm_call, reserve_llm
from chronicle.services.run_tracking import current_flow_run_id
from chronicle.settings import Settings
from chronicle.storage import claims, reports, rollups
from chronicle.storage.db import connect, from_json, transactions
from chronicle.weekly.context import Block, ChronicleWeek, covered_hash, one_line, plan_blocks, render, week_line
from chronicle.weekly.engine import chunk_lines, engine_model
from chronicle.weekly.faithfulness import strip_citations
from chronicle.weekly.offline import offline_rollup
from chronicle.weekly.prompt import ask_messages, rollup_messages
from chronicle.weekly.search import rank_weeks, stats_question, weeks_with
from chronicle.weekly.tokens import estimate_tokens, is_chinese

CONTEXT_TOKENS = 32_000
"""Token budget of the chronicle block `chronicle ask` sends; older weeks fold into rollups beyond it."""


def _rollup_tokens(weeks: list[ChronicleWeek], max_chars: int) -> int:
    # Upper bound of one rollup line: its length limit in the chronicle's language.
    sample = [w.text for w in weeks[-20:]]
    return estimate_tokens(("字" if is_chinese(sample) else "a") * max_chars) + 12


def _llm_rollup(settings: Settings, project_id: str, block: Block, texts: list[str]) -> str:
    call = llm_call(settings, current_flow_run_id(), project_id=project_id)
    lang = "zh" if is_chinese(texts) else "en"
    # A long period is folded in budget-sized parts first; nothing is truncated.
    while estimate_tokens("\n".join(texts)) > settings.llm.context_tokens and len(texts) > 1:
        texts = [call(rollup_messages(project_id, block.period, chunk, max_chars=settings.weekly.report_max_chars,
                                      language=lang), "rollup").strip()
                 for chunk in chunk_lines(texts, settings.llm.context_tokens)]
    return call(rollup_messages(project_id, block.period, texts, max_chars=settings.weekly.report_max_chars,
                                language=lang), "rollup").strip()


def _missing(blocks: list[Block], stored: dict[tuple[str, str], rollups.Rollup], model: str,
             texts: dict[tuple[str, str], str]) -> list[tuple[Block, str]]:
    """Folded blocks without a stored rollup for their covered hash and model (the others go into `texts`)."""
    missing: list[tuple[Block, str]] = []
    for block in blocks:
        digest = covered_hash(block.weeks)
        kept = stored.get((block.level, block.period))
        if kept is not None and kept.covered_hash == digest and kept.model == model:
            texts[(block.level, block.period)] = kept.summary
        else:
            missing.append((block, digest))
    return missing


def rollup_claim_key(project_id: str) -> str:
    return f"rollups:{project_id}"


def _build_rollups(settings: Settings, project_id: str, blocks: list[Block],
                   stored: dict[tuple[str, str], rollups.Rollup]) -> dict[tuple[str, str], str]:
    """Rollup texts for the folded blocks: stored ones whose covered hash still matches, new ones built."""
    folded = [b for b in blocks if b.level != "week"]
    if not folded:
        return {}
    model = engine_model(settings)
    texts: dict[tuple[str, str], str] = {}
    if not _missing(folded, stored, model, texts):
        return texts
    # Builders of one project's rollups take turns (a claim, in PostgreSQL in the lake): the lake has no
    # unique key to stop two processes inserting the same period, and an LLM rollup is paid for once.
    # Under the claim, read again: what the previous holder stored is reused, not rebuilt.
    with claims.hold(settings, [rollup_claim_key(project_id)], ttl_s=30.0):
        with connect(settings) as conn:
            stored = rollups.load(conn, project_id)
        texts.clear()
        missing = _missing(folded, stored, model, texts)
        fresh: list[rollups.Rollup] = []
        # One `llm` slot for the whole rebuild (not one reservation per rollup); the offline engine takes none.
        with nullcontext() if settings.llm.offline or not missing else reserve_llm(settings, 1):
            for block, digest in missing:
                if settings.llm.offline:
                    summary = offline_rollup(block.period,
                                             [(w.week_number, w.source, w.stats) for w in block.weeks],
                                             settings.weekly.report_max_chars)
                else:
                    summary = _llm_rollup(settings, project_id, block,
                                          [f"[Week {w.week_number}]: {w.text}" for w in block.weeks])
                texts[(block.level, block.period)] = summary
                fresh.append(rollups.Rollup(project_id, block.level, block.period, block.first, block.last,
                                            tuple(w.week_number for w in block.weeks), digest, summary, model))
        if fresh:
            for attempt in transactions(settings):
                with attempt as conn:
                    rollups.save(conn, fresh)
    return texts


def build_history_context(settings: Settings, project_id: str, max_tokens: int | None = None) -> str:
    """Seed 000's `=== 项目编年史 (Project Chronicle) ===` block for one project, oldest week first.

    Each line is `[Week YYYYWW]: summary` with citations stripped (the human edit where there is one).
    Over `max_tokens` the oldest months (then quarters, years) become rollup lines, newest weeks stay verbatim.
    """
    folding = max_tokens is not None
    with connect(settings) as conn:  # one short window for the reports and, when folding, the rollups
        rows = reports.chronicle_rows(conn, project_id)
        flagged = reports.flagged_week_numbers(conn, project_id)
        stored = rollups.load(conn, project_id) if folding else {}
    if settings.weekly.context_flagged_weeks == "omit":
        rows = [r for r in rows if r[0] not in flagged]
    weeks = [ChronicleWeek(n, week_line(s, flagged=n in flagged), json.loads(st), strip_citations(s)) if folding
             else ChronicleWeek(n, week_line(s, flagged=n in flagged)) for n, s, st in rows]
    blocks = plan_blocks(weeks, max_tokens, _rollup_tokens(weeks, settings.weekly.report_max_chars))
    return render(blocks, _build_rollups(settings, project_id, blocks, stored) if folding else None)


@dataclass(frozen=True)
class HistoryAnswer:
    """`chronicle ask`'s result: the model's answer, or (offline) the matching weeks."""

    engine: str
    text: str
    weeks: list[dict[str, Any]]


def ask_chronicle(settings: Settings, project_id: str, question: str, *, limit: int = 6) -> HistoryAnswer:
    """Answer `question` from the project's chronicle: via the endpoint, or offline by term matching.

    The question is redacted first (a user may paste a credential into it): it goes to the model, into
    `llm_calls` and, offline, back to the screen as the matched terms.
    """
    question = redactor_for(settings).redact(question)
    if settings.llm.offline:
        with connect(settings) as conn:
            rows = reports.chronicle_rows(conn, project_id)
        texts = {n: one_line(s) for n, s, _ in rows}
        field = stats_question(question)
        if field is not None:  # "哪几周发生了 SAE？": the counted stats answer it, every such week, not the prose
            counted = weeks_with(field, [(n, from_json(st)) for n, _, st in rows])
            return HistoryAnswer("offline-stats", f"{len(counted)} week(s) with {field} > 0",
                                 [{"week": n, "score": c, "terms": [f"{field}={c}"], "text": texts[n]}
                                  for n, c in counted])
        ranked = rank_weeks(question, list(texts.items()), limit=limit)
        weeks = [{"week": n, "score": score, "terms": terms, "text": texts[n]} for n, score, terms in ranked]
        return HistoryAnswer("offline", "", weeks)
    context = build_history_context(settings, project_id, CONTEXT_TOKENS)
    call = llm_call(settings, current_flow_run_id(), project_id=project_id)
    return HistoryAnswer(settings.llm.model, call(ask_messages(context, question), "ask").strip(), [])
