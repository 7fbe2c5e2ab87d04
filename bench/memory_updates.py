"""bench/memory_updates: the labelled knowledge-update set through the real pipeline (ingest -> offline distill).

tests/data/memory_updates/cases.jsonl (105 cases, zh+en, written for this bench, MIT): each case is two statements
by one person on two days, written as daily notes (`bench.memory_layouts.updates`). After the distill:

- current first: for the 83 real changes, the current-fact question searched with the person as scope ranks the
  newer statement above the older one (the older one may also be missing from the results) — goal >= 90 %;
  measured unscoped too;
- as-of: the same question with `as_of` = a day between the two statements returns the older statement first and
  not the newer one — goal >= 90 %;
- not a change: for the 22 cases that are not one (two people; a relative; another attribute), no statement is
  marked superseded — goal 0 wrong supersessions.

Run through `python -m bench.memory_e2e --corpus updates` (it starts the throw-away Prefect API).
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

from bench import memory_layouts as layouts
from bench._util import result


def _is(memory: Any, statement: dict[str, str]) -> bool:
    """Whether `memory` was distilled from `statement` (its speaker's subject, its day's note): the text itself may
    differ (a phone number or e-mail address is redacted before it is stored)."""
    from chronicle.memory.subjects import normalise_subject

    return memory.subject == normalise_subject(statement["subject"]) and statement["day"] in memory.source


def _position(hits: list[Any], statement: dict[str, str]) -> int | None:
    """Rank (0-based) of the first hit distilled from `statement`, None when none is."""
    return next((n for n, h in enumerate(hits) if _is(h, statement)), None)


def measure_updates() -> dict[str, Any]:
    from bench.memory_e2e import distill_corpus
    from chronicle.memory.subjects import normalise_subject
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    load_before = os.getloadavg()
    cases = layouts.update_cases()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home", llm_url=None, embedding_url=None, input_roots=[tmp])
        days = sorted(date.fromisoformat(d) for d in layouts.updates(Path(tmp) / "memory", cases))
        distill_corpus(settings, Path(tmp) / "memory", days[0], days[-1], "updates", False)
        store = MemoryStore(settings)
        rows = store.list(limit=100_000)
        tally: Counter[str] = Counter()
        failures: list[str] = []
        for case in cases:
            _check_case(store, rows, case, tally, failures)
        leaks = sum(1 for m in rows if m.subject and m.subject not in
                    {normalise_subject(c[s]["subject"]) for c in cases for s in ("old", "new")})
    return _report(len(cases), tally, failures, leaks, load_before)


def _check_case(store: Any, rows: list[Any], case: dict[str, Any], tally: Counter[str], failures: list[str]) -> None:
    """One labelled case: a fact that did not change supersedes nothing; a change ranks the new fact above the
    old one (within its subject and unscoped), and the old one answers as of the day it held."""
    old, new = case["old"], case["new"]
    if not case["change"]:
        marked = [m for m in rows if m.superseded_by and (_is(m, old) or _is(m, new))]
        tally["wrong"] += bool(marked)
        if marked:
            failures.append(f"{case['id']}: superseded although not a change")
        return
    tally["changes"] += 1
    for scope in (old["subject"], None):
        hits = store.search(case["question"], subject=scope, limit=10)
        p_new, p_old = _position(hits, new), _position(hits, old)
        ok = p_new is not None and (p_old is None or p_new < p_old)
        if scope is None:
            tally["current_unscoped"] += ok
        else:
            tally["current"] += ok
            if not ok:
                failures.append(f"{case['id']}: current not first (new {p_new}, old {p_old})")
    hits = store.search(case["question"], subject=old["subject"], limit=10, as_of=date.fromisoformat(case["as_of"]))
    ok = bool(hits) and _is(hits[0], old) and _position(hits, new) is None
    tally["as_of"] += ok
    if not ok:
        failures.append(f"{case['id']}: as-of {case['as_of']} answered "
                        f"{hits[0].content[:40] if hits else 'nothing'!r}")


def _report(n_cases: int, tally: Counter[str], failures: list[str], leaks: int, load_before: Any) -> dict[str, Any]:
    current, current_unscoped, as_of, wrong, changes = (
        tally[k] for k in ("current", "current_unscoped", "as_of", "wrong", "changes"))
    distinct = n_cases - changes
    print(f"updates: {n_cases} cases ({changes} changes): current first {current}/{changes} scoped, "
          f"{current_unscoped}/{changes} unscoped; as-of right {as_of}/{changes}; wrong supersessions "
          f"{wrong}/{distinct}", flush=True)
    for failure in failures:
        print("  miss:", failure)
    return result(
        "memory_updates",
        measure=(f"labelled update set ({n_cases} cases zh+en) as daily notes -> offline distill -> search: "
                 f"current fact ranked above the superseded one {current}/{changes} scoped, {current_unscoped}/"
                 f"{changes} unscoped; as-of answer right {as_of}/{changes}; wrong supersessions {wrong}/{distinct}"
                 f"; figure: share of current-first (scoped)"),
        ours=current / changes,
        baseline=1.0,
        baseline_name="every case",
        unit="",
        goal="current first >= 0.90; as-of right >= 0.90; 0 wrong supersessions",
        ok=current / changes >= 0.9 and as_of / changes >= 0.9 and wrong == 0,
        extra={"current_first": current / changes, "current_first_unscoped": current_unscoped / changes,
               "as_of_right": as_of / changes, "wrong_supersessions": wrong, "cases": n_cases,
               "changes": changes, "failures": failures, "subjects_outside_set": leaks,
               "load_avg_before": load_before, "load_avg_after": os.getloadavg()},
    )
