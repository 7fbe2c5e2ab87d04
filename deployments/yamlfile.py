"""`prefect.yaml` rendered from the deployment registry, and the check that the file on disk matches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from chronicle.deployments.definitions import DEPLOYMENTS, WORK_POOL
from chronicle.settings import Settings

HEADER = f"""\
# Chronicle deployments for `prefect deploy --all` (process work pool `{WORK_POOL}`).
#
# GENERATED from deployments/definitions.py by `chronicle deploy-check --write` -- edit the registry,
# not this file; `chronicle deploy-check` (and the test suite) fail when the two disagree.
# Schedules use the configured timezone and the ingest deployment reads `source_paths`: a site with
# other settings re-renders this file with `chronicle deploy-check --write` before deploying.
#
#   chronicle setup                                  # work pool + global concurrency limits (idempotent)
#   prefect deploy --all                             # from this folder
#   prefect worker start --pool {WORK_POOL}    # in this folder, with the project's venv active
#
# No `pull:` section on purpose: `prefect deploy` then records the folder it ran in
# (set_working_directory), so runs see the same chronicle.toml / .env / relative CHRONICLE_HOME
# as the `chronicle` CLI does there. Entrypoints are module paths of the installed package.
"""


def render(settings: Settings) -> dict[str, Any]:
    """The whole `prefect.yaml` document for these settings."""
    return {
        "name": "chronicle",
        "build": None,
        "push": None,
        "deployments": [spec.to_yaml(settings) for spec in DEPLOYMENTS],
    }


def render_text(settings: Settings) -> str:
    return HEADER + "\n" + yaml.safe_dump(render(settings), sort_keys=False, allow_unicode=True, width=100)


def differences(path: Path, settings: Settings) -> list[str]:
    """Human-readable differences between `path` and the registry rendered with `settings`; empty = in sync."""
    if not path.exists():
        return [f"{path} does not exist (create it with `chronicle deploy-check --write`)"]
    on_disk = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    wanted = render(settings)
    problems = [f"top-level {key!r}: file has {on_disk.get(key)!r}, registry renders {value!r}"
                for key, value in wanted.items() if key != "deployments" and on_disk.get(key) != value]
    have = {d.get("name"): d for d in on_disk.get("deployments") or []}
    want = {d["name"]: d for d in wanted["deployments"]}
    problems += [f"deployment {n!r} is in the file but not in the registry" for n in have.keys() - want.keys()]
    problems += [f"deployment {n!r} is missing from the file" for n in want.keys() - have.keys()]
    for name in sorted(want.keys() & have.keys()):
        for key in sorted(want[name].keys() | have[name].keys()):
            if want[name].get(key) != have[name].get(key):
                problems.append(f"deployment {name!r} field {key!r}: file has {have[name].get(key)!r}, "
                                f"registry renders {want[name].get(key)!r}")
    return problems
