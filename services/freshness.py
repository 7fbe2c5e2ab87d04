"""`chronicle status`: is everything up to date, and if not, what is missing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from chronicle.ingest.model import refused_lines
from chronicle.ops import FlowAge, ProjectFreshness, judge_flows
from chronicle.services.ingest import safety_rejects
from chronicle.settings import Settings
from chronicle.storage.db import connect
from chronicle.storage.freshness import first_run_at, last_runs, project_freshness


@dataclass(frozen=True)
class Freshness:
    projects: list[ProjectFreshness]
    flows: list[FlowAge]
    failures: dict[str, int]
    """Failed or crashed runs of each flow since its last success."""
    safety_rejects: list[tuple[str, int | None]]
    """(file, line) of refused lines that name a safety event: in no week's report until fixed."""

    @property
    def up_to_date(self) -> bool:
        return (all(p.up_to_date for p in self.projects) and not any(f.overdue for f in self.flows)
                and not self.safety_rejects)

    def problems(self) -> list[str]:
        out = [f"{p.project_id}: {problem}" for p in self.projects for problem in p.problems()]
        for f in self.flows:
            if f.overdue:
                out.append(f"{f.flow_name}: {f.verdict.lower()}; last success "
                           f"{f.last_completed.isoformat(timespec='minutes') + ' UTC' if f.last_completed else 'never'}"
                           f", its schedule allows {f.allowed}; last run {f.last_state or 'none'}"
                           + (f", {self.failures[f.flow_name]} failure(s) since" if self.failures.get(f.flow_name)
                              else ""))
        if self.safety_rejects:
            out.append(f"{len(self.safety_rejects)} refused log line(s) name a safety event (SAE/AE) and are in no "
                       f"week's report until fixed and ingested again: {refused_lines(self.safety_rejects, 5)} "
                       "(table rejects)")
        return out


def freshness(settings: Settings) -> Freshness:
    """Read both freshness views (embedded file or lake) and judge each flow's age against its schedule."""
    now = datetime.now(UTC).replace(tzinfo=None)
    with connect(settings, read_only=True) as conn:
        projects = project_freshness(conn)
        runs = last_runs(conn)
        first_run = first_run_at(conn)
    flows = judge_flows({name: (done, state) for name, (done, state, _) in runs.items()}, now,
                        settings.ingest.interval_minutes, first_run)
    return Freshness(projects, flows, {name: n for name, (_, _, n) in runs.items()}, safety_rejects(settings))
