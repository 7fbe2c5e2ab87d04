"""bench/orders: what failing closed on orders costs — proposals the order screen creates on real corpora.

Every line of each corpus is screened as the distiller screens a memory (`chronicle.distill.orders`); a line that
reads as an order to the assistant would become a pending proposal instead of a knowledge-file line. Corpora: the
LoCoMo dialogues (English, two people talking), the OpenClaw notes (an agent's daily notes), MemoryBank-CN (a user
talking to an AI companion: many lines say "你"), and the sample trial's daily notes. The adversarial set (the
orders of the issue and their rewordings) gives the recall side. `python -m bench.orders` prints the table.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._util import result
from chronicle.distill.injection import matched_phrase
from chronicle.distill.orders import order_reason

GOAL_PER_1000 = 10.0
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def locomo_lines() -> list[str]:
    samples = json.loads((DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    return [f"{t['speaker']}: {t['text']}" for s in samples for k, turns in s["conversation"].items()
            if k.startswith("session_") and isinstance(turns, list) for t in turns]


def note_lines(folder: Path) -> list[str]:
    lines = []
    for path in sorted(folder.rglob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip().lstrip("-*0123456789. ").strip()
            if line and not line.startswith(("#", "```", "|")):
                lines.append(line)
    return lines


def memorybank_lines() -> list[str]:
    data = json.loads((DATA / "memorybank" / "memory_bank_cn.json").read_text(encoding="utf-8"))
    return [turn[k] for person in data.values() for day in person.get("history", {}).values()
            for turn in day for k in ("query", "response") if turn.get(k)]


def sample_lines() -> list[str]:
    from datetime import date

    from chronicle.sample.notes import daily_notes
    from chronicle.sample.trial import Trial
    trials = [Trial(p, i, 20, 7) for i, p in enumerate(("XH201", "XH305"))]
    notes, _ = daily_notes(random.Random("7:notes"), trials, date(2025, 8, 1))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in notes.items():
            (Path(tmp) / Path(name).name).write_text(text, encoding="utf-8")
        return note_lines(Path(tmp))


def measure(lines: list[str], screen: Callable[[str], str | None] = order_reason) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    examples = []
    for line in lines:
        why = screen(line)
        if why:
            kinds[why.split(":")[0].split(" (")[0]] += 1
            examples.append(f"{why} ← {line[:100]}")
    flagged = sum(kinds.values())
    return {"lines": len(lines), "proposals": flagged, "distinct_proposals": len(set(examples)),
            "per_1000_lines": round(1000 * flagged / max(1, len(lines)), 2),
            "by_kind": dict(kinds), "examples": sorted(set(examples))[:12]}


def main() -> None:
    corpora = {"locomo": locomo_lines(), "openclaw": note_lines(DATA / "openclaw"),
               "memorybank_cn": memorybank_lines(), "sample_notes": sample_lines()}
    table = {name: measure(lines) for name, lines in corpora.items()}
    before = {name: measure(lines, matched_phrase) for name, lines in corpora.items()}
    total = sum(len(lines) for lines in corpora.values())
    ours = 1000 * sum(row["proposals"] for row in table.values()) / total
    baseline = 1000 * sum(row["proposals"] for row in before.values()) / total
    # The sample's notes hold the user's genuine rules for the assistant: proposals on purpose, not a cost.
    worst = max(row["per_1000_lines"] for name, row in table.items() if name != "sample_notes")
    result("orders", measure="proposals per 1000 lines of real corpora (all four)", ours=round(ours, 2),
           baseline=round(baseline, 2), baseline_name="the phrase list alone (before the order screen)",
           unit="per 1000 lines", goal=f"<= {GOAL_PER_1000} per 1000 lines on each third-party corpus",
           ok=worst <= GOAL_PER_1000,
           extra={"corpora": {name: {k: v for k, v in row.items() if k != "examples"} for name, row in table.items()},
                  "baseline_corpora": {name: row["proposals"] for name, row in before.items()}})
    for name, row in table.items():
        print(f"\n{name}: {row['proposals']} / {row['lines']} lines ({row['per_1000_lines']} per 1000), "
              f"{row['distinct_proposals']} distinct")
        for example in row["examples"]:
            print("   ", example)


if __name__ == "__main__":
    main()
