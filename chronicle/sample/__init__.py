"""Deterministic synthetic sample data: a Chinese multi-site clinical trial plus assistant daily notes.

`generate_sample` writes what the ingest stage reads (monthly JSONL logs per project, one project's EDC
queries as a CSV export with foreign column names, OpenClaw-style `memory/*.md` notes) and a
`ground_truth.json` with per-ISO-week counts, computed from the written timestamps alone so the
pipeline's week bucketing can be checked against an independent answer.

Everything is driven by seeded `random.Random` instances; there is no wall clock and no global random
state, so the same arguments always give byte-identical files.

Reading order: `generate` (the whole run) → `trial` (one project, week by week) → the week's activities
`oversight`, `clinic`, `safety` → `stream` (how an event gets its time) and `team` (who is in the logs);
then `truth` (ground truth), `notes` (daily notes), `formats` and `output` (files on disk). `schedule`
holds the calendar, `text` the phrase tables.
"""

from chronicle.sample.formats import CSV_COLUMN_MAP, MARKER
from chronicle.sample.generate import SampleManifest, generate_sample
from chronicle.sample.schedule import TIMEZONE
from chronicle.sample.truth import week_number

__all__ = ["CSV_COLUMN_MAP", "MARKER", "TIMEZONE", "SampleManifest", "generate_sample", "week_number"]
