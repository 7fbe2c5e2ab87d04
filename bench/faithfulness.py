"""bench/faithfulness: how much the weekly faithfulness guard catches, how often it cries wolf, what it costs.

Real weeks (the sample trial, this machine's Debian changelog weeks, MemoryBank-CN; `bench/faithfulness_data.py`)
are ingested through Chronicle's own ingest; each week gets two faithful reports (the offline engine's and a
human-style paraphrase) and labelled corruptions of each (`KINDS`). Figures, per language (zh, en):

- recall per corruption kind: corrupted reports flagged / corrupted reports of that kind;
- false alarms: faithful reports flagged / faithful reports;
- cost: CPU per week of `check_report` (median of `--repeat`), against the v1 guard's count rules over the same
  reports (same run). Goals: recall >= 0.9 each kind, false alarms <= 2 %, <= 2 ms CPU/week.

`--show KIND` prints the missed corruptions of one kind (and `--show faithful` the false alarms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._util import load_sampler, result
from bench._weekly_util import bench_env

SAMPLE_MAP = {"study": "project_id", "time": "ts", "user": "actor", "event": "type", "text": "content"}
"""The sample trial's CSV columns -> Chronicle's (as in tests/conftest.py)."""


def _weeks(settings: Any, project: str) -> list[Any]:
    from chronicle.redaction.configured import redactor_for
    from chronicle.storage import week_inputs
    from chronicle.storage.db import connect
    from chronicle.weekly.model import make_week_input
    from chronicle.weeks import IsoWeek, week_range

    with connect(settings) as conn:
        span = week_inputs.week_span(conn, project)
        if span is None:
            return []
        rows = week_inputs.week_rows(conn, project, span[0], span[1])
        running = week_inputs.enrolled_before(conn, project, span[0])
    out, tz, redactor = [], settings.tz_for(project), redactor_for(settings)
    for week in week_range(IsoWeek.from_number(span[0]), IsoWeek.from_number(span[1])):
        week_input = make_week_input(project, week, rows.get(week.number, []), running, tz, redactor)
        running = week_input.stats["enrolled_total"]
        out.append(week_input)
    return out


def load_corpora(home: Path, debian_from: str, debian_to: str) -> dict[str, list[Any]]:
    """{corpus: weeks} ingested into a private CHRONICLE_HOME under `home`."""
    bench_env(home / "home")
    from bench.faithfulness_data import MEMORYBANK, memorybank_jsonl
    from bench.offline_data import write_jsonl
    from chronicle.sample import generate_sample
    from chronicle.services.ingest import FileIngestor
    from chronicle.settings import Settings
    from chronicle.storage import queries
    from chronicle.storage.db import connect

    os.environ["CHRONICLE_COLUMN_MAP"] = json.dumps(SAMPLE_MAP)
    settings = Settings()
    generate_sample(home / "sample")
    for path in sorted((home / "sample" / "logs").rglob("*")):
        if path.is_file():
            FileIngestor(settings).ingest(path)
    corpora: dict[str, list[Any]] = {}
    with connect(settings) as conn:
        sample_projects = queries.projects(conn)
    corpora["sample"] = [w for p in sample_projects for w in _weeks(settings, p)]
    debian = home / "debian.jsonl"
    write_jsonl(debian, datetime.fromisoformat(debian_from), datetime.fromisoformat(debian_to))
    FileIngestor(settings).ingest(debian)
    corpora["debian"] = _weeks(settings, "debian")
    if MEMORYBANK.exists():
        memorybank_jsonl(home / "memorybank.jsonl")
        FileIngestor(settings).ingest(home / "memorybank.jsonl")
        corpora["memorybank"] = [w for i in range(15) for w in _weeks(settings, f"mb{i:02d}")]
    return corpora


def evaluate(corpora: dict[str, list[Any]], max_chars: int, show: str | None = None) -> dict[str, Any]:
    """Flag every case; returns counts per (language, kind), per (language, style) false alarms, and the cases."""
    from bench.faithfulness_data import cases
    from chronicle.weekly.engine import offline_week
    from chronicle.weekly.faithfulness import check_report, describe

    hits: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_corpus: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    faithful: list[tuple[Any, str]] = []
    for corpus, weeks in corpora.items():
        for lang, style, kind, week, report in cases(weeks, lambda w: offline_week(w, max_chars).summary):
            reasons = check_report(report, week)
            flagged = bool(reasons)
            hits[(lang, kind)][0] += flagged
            hits[(lang, kind)][1] += 1
            by_corpus[(corpus, f"{style}:{kind}")][0] += flagged
            by_corpus[(corpus, f"{style}:{kind}")][1] += 1
            if kind == "faithful":
                faithful.append((week, report))
            if show and kind == show and (flagged if kind == "faithful" else not flagged):
                print(f"--- {corpus} {style} {week.project_id} {week.week} {kind}\n{report}")
                for r in reasons:
                    print("   >", describe(r))
    return {"hits": hits, "by_corpus": by_corpus, "faithful": faithful}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="start", default="2021-01-01")
    parser.add_argument("--to", dest="end", default="2023-01-01")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--show", default=None, help="print the misses of one kind (faithful: the false alarms)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-faithfulness-"))
    corpora = load_corpora(home, args.start, args.end)

    from bench.faithfulness_data import KINDS
    from chronicle.settings import Settings

    max_chars = Settings().weekly.report_max_chars
    print(", ".join(f"{name}: {sum(1 for w in weeks if w.entries)} weeks" for name, weeks in corpora.items()))
    sampler = load_sampler()
    with sampler:
        out = evaluate(corpora, max_chars, args.show)
        faithful = out["faithful"]
        cpu, base = _cpu_times(faithful, args.repeat)
    per_week = statistics.median(cpu) / len(faithful)
    recall = _recall(out["hits"], out["by_corpus"])
    worst_recall = min(v for k, v in recall.items() if not k.endswith(":faithful"))
    worst_fa = max(v for k, v in recall.items() if k.endswith(":faithful"))
    v1_ms = 1000 * statistics.median(base) / len(faithful)
    print(f"guard: {1000 * per_week:.3f} ms/week CPU (v1 count rules {v1_ms:.3f} ms); worst recall "
          f"{worst_recall:.3f}, worst false-alarm rate {worst_fa:.3f}")
    result("faithfulness", measure=f"faithfulness guard: worst recall over {len(KINDS)} corruption kinds / false "
                                   f"alarms, zh+en ({len(faithful)} faithful reports); CPU per week",
           ours=per_week, baseline=statistics.median(base) / len(faithful), unit="s",
           baseline_name="v1 guard (count rules) on the same reports",
           goal="recall>=0.9 each kind, false alarms<=2%, <=2 ms/week",
           ok=worst_recall >= 0.9 and worst_fa <= 0.02 and per_week <= 0.002,
           extra={"recall": recall, "worst_recall": worst_recall, "worst_false_alarm_rate": worst_fa,
                  "weeks": {k: sum(1 for w in v if w.entries) for k, v in corpora.items()},
                  "repeat": args.repeat, **sampler.record()})


def _cpu_times(faithful: list[tuple[Any, str]], repeat: int) -> tuple[list[float], list[float]]:
    """CPU seconds of the guard over every faithful report, and of the v1 count rules alone, `repeat` times each
    (after one warm-up pass of the guard)."""
    from chronicle.weekly.faithfulness import check_report, count_claims

    def guard() -> None:
        for week, report in faithful:
            check_report(report, week)

    def v1() -> None:  # the count rules alone: what the guard did before v2
        for _, report in faithful:
            count_claims(report)

    guard()
    cpu, base = [], []
    for _ in range(repeat):
        c0 = time.process_time()
        guard()
        cpu.append(time.process_time() - c0)
        c0 = time.process_time()
        v1()
        base.append(time.process_time() - c0)
    return cpu, base


def _recall(hits: dict[tuple[str, str], list[int]], by_corpus: dict[tuple[str, str], list[int]]) -> dict[str, float]:
    """Per language and kind, the share flagged (printed, with the counts per corpus)."""
    from bench.faithfulness_data import KINDS

    recall = {}
    for lang in ("zh", "en"):
        for kind in ("faithful", *KINDS):
            flagged, n = hits.get((lang, kind), [0, 0])
            if n:
                recall[f"{lang}:{kind}"] = round(flagged / n, 3)
                label = "false alarms" if kind == "faithful" else "recall"
                print(f"{lang} {kind:22s} {label} {flagged / n:6.1%}  ({flagged}/{n})")
    for (corpus, key), (flagged, n) in sorted(by_corpus.items()):
        print(f"   {corpus:10s} {key:30s} {flagged}/{n}")
    return recall


if __name__ == "__main__":
    main()
