"""bench/redaction_real: what failing closed costs on real text — the share of tokens the redactor hides.

Corpora with no secret in them (LoCoMo's dialogues, MemoryBank-CN's chats, the sample trial's logs and notes,
the commit messages of a git repository): every token the redactor hides there is a false redaction. A token
is an ASCII word (with inner `._'-`) or a run of CJK characters — the run counted once, so the Chinese
corpora's rate is an upper bound. Goal: ≤ 1 % of tokens per corpus. Also the offline cost: the redactor's time
per sample-trial week and per note, against the same run's redactor without the fail-closed passes.

`python -m bench.redaction_real [git-dir ...]` (default: this repository).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[._'-][A-Za-z0-9]+)*|[\u4e00-\u9fff]+")


def locomo() -> Iterator[str]:
    for sample in json.loads((ROOT / "tests/data/locomo/locomo10.json").read_text(encoding="utf-8")):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                yield from (t["text"] for t in turns)


def memorybank() -> Iterator[str]:
    for person in json.loads((ROOT / "tests/data/memorybank/memory_bank_cn.json").read_text(encoding="utf-8")).values():
        for turns in person["history"].values():
            for turn in turns:
                yield turn["query"]
                yield turn["response"]


def sample_trial(weeks: int = 12) -> Iterator[str]:
    from chronicle.sample.generate import generate_sample

    with tempfile.TemporaryDirectory() as tmp:
        generate_sample(Path(tmp), weeks=weeks)
        for path in sorted(Path(tmp).rglob("*")):
            if path.is_file() and path.suffix in {".md", ".log", ".jsonl", ".csv", ".txt"}:
                yield from (line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def commits(git_dir: Path) -> Iterator[str]:
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--format=%B%x00", "-n", "3000"],
                         capture_output=True, text=True, check=True).stdout
    yield from (m.strip() for m in out.split("\0") if m.strip())


PERSONAL = {"email", "phone", "cn_id", "bank_card", "iban"}
"""Personal data hidden by policy (the `Co-authored-by:` e-mails of a commit log): counted apart, not as false."""


def false_rate(texts: list[str], redactor: object) -> dict[str, object]:
    total = hidden = personal = 0
    examples: list[str] = []
    for text in texts:
        found: list[tuple[str, str]] = []
        redactor.redact(text, found=found)  # type: ignore[attr-defined]
        total += len(_TOKEN.findall(text))
        for kind, value in found:
            n = max(1, len(_TOKEN.findall(value)))
            if kind in PERSONAL:
                personal += n
                continue
            hidden += n
            if len(examples) < 12:
                examples.append(f"{kind}: {value[:60]!r}")
    return {"texts": len(texts), "tokens": total, "hidden": hidden, "rate": hidden / total if total else 0.0,
            "personal": personal, "examples": examples}


def _timed(redactor: object, texts: list[str], repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            redactor.redact(text, found=[])  # type: ignore[attr-defined]  # `found` bypasses the cache
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


class _Pseudonymised:
    """Pseudonyms, then the redactor: what a trial week's entries go through before an LLM."""

    def __init__(self, redactor: object) -> None:
        from chronicle.redaction.pseudonyms import Pseudonyms, _cn_names, _cut, _free_spans

        for cached in (_cn_names, _cut, _free_spans):
            cached.cache_clear()  # a first run over new weeks: nothing segmented or found yet
        self.names, self.redactor = Pseudonyms(), redactor

    def redact(self, text: str, found: list[tuple[str, str]]) -> str:
        return self.redactor.redact(self.names.apply(text), found=found)  # type: ignore[attr-defined]


def main(argv: list[str]) -> None:
    from bench._util import result
    from chronicle.redaction import redactor as module
    from chronicle.redaction.redactor import Redactor

    red = Redactor.build()
    git_dirs = [Path(a) for a in argv] or [ROOT / ".git"]
    corpora = {"locomo": list(locomo()), "memorybank_cn": list(memorybank()), "sample_trial": list(sample_trial())}
    for git_dir in git_dirs:
        corpora[f"commits:{git_dir.parent.name or git_dir.name}"] = list(commits(git_dir))
    rates = {name: false_rate(texts, red) for name, texts in corpora.items()}
    print("| corpus | texts | tokens | secrets hidden (false) | rate | personal data hidden |")
    print("|---|---|---|---|---|---|")
    for name, row in rates.items():
        print(f"| {name} | {row['texts']} | {row['tokens']} | {row['hidden']} | {100 * row['rate']:.2f} % "
              f"| {row['personal']} |")
        for line in row["examples"]:
            print("   ", line)
    trial = corpora["sample_trial"]
    ours = _timed(red, trial)
    _timed(_Pseudonymised(red), trial[:50], repeat=1)  # jieba loads its dictionary once per process
    with_names = statistics.median(_timed(_Pseudonymised(red), trial, repeat=1) for _ in range(3))
    saved = module._fail_closed
    module._fail_closed = lambda text, *_: text  # the same redactor without the fail-closed passes
    try:
        base = _timed(red, trial)
    finally:
        module._fail_closed = saved
    weeks = 12 * 2  # the sample's two projects
    print(f"offline cost: {1000 * ours / weeks:.1f} ms per trial week ({1000 * base / weeks:.1f} ms without the "
          f"fail-closed passes; {1000 * with_names / weeks:.1f} ms with subjects' names pseudonymised first), "
          f"{1e6 * ours / len(trial):.0f} µs per line")
    worst = max(float(r["rate"]) for r in rates.values())  # type: ignore[arg-type]
    result("redaction_real", measure="largest share of tokens hidden on a corpus without secrets",
           ours=worst, baseline=0.01, baseline_name="goal (1 %)", unit="share", goal="<= 0.01 on every corpus",
           ok=worst <= 0.01, extra={"corpora": {k: {m: v[m] for m in ("texts", "tokens", "hidden", "rate", "personal")}
                                              for k, v in rates.items()},
                                    "ms_per_week": 1000 * ours / weeks, "ms_per_week_before": 1000 * base / weeks,
                                    "ms_per_week_with_pseudonyms": 1000 * with_names / weeks})


if __name__ == "__main__":
    main(sys.argv[1:])
