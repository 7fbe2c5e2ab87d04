"""`generate_sample`: simulate the trials, lay their events out as files, add notes and ground truth, write.

The last project's EDC queries go to a CSV export instead of its JSONL logs; every other event goes to
`logs/<project>/<YYYY-MM>.jsonl` by project-local month. The files are built as text first (pure), then
written in one pass, so what is written and what the manifest says come from the same dict.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from chronicle.sample.formats import CSV_COLUMN_MAP, csv_export, jsonl, readme, toml_text
from chronicle.sample.notes import daily_notes
from chronicle.sample.output import check_ours, write_tree
from chronicle.sample.schedule import FIRST_START, PERIOD_END, STAGGER_WEEKS, TIMEZONE
from chronicle.sample.stream import Event
from chronicle.sample.trial import Trial
from chronicle.sample.truth import project_truth


@dataclass(frozen=True)
class SampleManifest:
    """What `generate_sample` wrote; paths are absolute."""

    out_dir: Path
    projects: tuple[str, ...]
    files: tuple[Path, ...]
    column_map: dict[str, str] = field(hash=False)
    csv_project: str
    first_week: dict[str, int] = field(hash=False)
    last_week: dict[str, int] = field(hash=False)
    ground_truth: Path
    config: Path
    seed: int


def _log_files(trial: Trial, events: list[Event], in_csv: bool) -> dict[str, str]:
    """One project's logs: JSONL per local month, its queries in the CSV export if `in_csv`."""
    months: dict[str, list[Event]] = {}
    for e in events:
        if not (in_csv and e.type == "query"):
            months.setdefault(e.at.strftime("%Y-%m"), []).append(e)
    files = {f"logs/{trial.project}/{month}.jsonl": jsonl(trial.project, evs) for month, evs in months.items()}
    if queries := [e for e in events if in_csv and e.type == "query"]:
        files[f"logs/{trial.project}/edc_queries.csv"] = csv_export(trial.project, queries)
    return files


def generate_sample(out_dir: Path, *, seed: int = 7, weeks: int = 56,
                    projects: tuple[str, ...] = ("XH201", "XH305")) -> SampleManifest:
    """Write the synthetic sample under `out_dir` and return what was written.

    Projects start on Mondays four weeks apart from 2025-03-03 and run `weeks` weeks each; the last
    project's period must end before 2026-06-01. The last project's EDC queries go to a CSV export.
    """
    if not projects or len(set(projects)) != len(projects):
        raise ValueError("projects must be a non-empty tuple of distinct ids")
    if weeks < 4:
        raise ValueError("weeks must be at least 4")
    end = FIRST_START + timedelta(weeks=STAGGER_WEEKS * (len(projects) - 1) + weeks)
    if end > PERIOD_END:
        last = end - timedelta(days=1)
        raise ValueError(f"sample period would end {last}; it must end before {PERIOD_END}")
    out_dir = Path(out_dir)
    previous = check_ours(out_dir)

    trials = [Trial(p, i, weeks, seed) for i, p in enumerate(projects)]
    csv_project = projects[-1]
    files: dict[str, str] = {}
    truth: dict[str, object] = {}
    spans: dict[str, tuple[int, int]] = {}
    for trial in trials:
        events = trial.run()
        files |= _log_files(trial, events, trial.project == csv_project)
        records = [{"ts": e.ts, "type": e.type, "actor": e.actor} for e in events]
        project = project_truth(records)
        spans[trial.project] = (int(project["first_week"]), int(project["last_week"]))
        truth[trial.project] = project | {
            "sites": {s.code: s.name for s in trial.team.sites}, "csv": trial.project == csv_project}

    notes, canaries = daily_notes(random.Random(f"{seed}:notes"), trials, end - timedelta(days=1))
    files |= notes
    ground = {
        "timezone": TIMEZONE, "seed": seed, "projects": truth, "column_map": CSV_COLUMN_MAP,
        "daily_notes": {"files": len(notes), "paths": sorted(notes), "canaries": canaries},
    }
    files["ground_truth.json"] = json.dumps(ground, ensure_ascii=False, indent=2) + "\n"
    files["README.md"] = readme(seed, trials, csv_project)
    files["chronicle.toml"] = toml_text(seed)
    write_tree(out_dir, files, previous=previous)

    return SampleManifest(
        out_dir=out_dir.resolve(),
        projects=tuple(projects),
        files=tuple(sorted((out_dir / rel).resolve() for rel in files)),
        column_map=dict(CSV_COLUMN_MAP),
        csv_project=csv_project,
        first_week={p: span[0] for p, span in spans.items()},
        last_week={p: span[1] for p, span in spans.items()},
        ground_truth=(out_dir / "ground_truth.json").resolve(),
        config=(out_dir / "chronicle.toml").resolve(),
        seed=seed,
    )
