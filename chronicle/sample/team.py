"""Who appears in a trial's logs: its sites, the study team, and the enrolled subjects.

The team is drawn once per project from `text.NAME_POOL` so that nobody works on two projects: a name
in a note or a report then points at exactly one team.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from chronicle.sample import text as txt


@dataclass
class Site:
    code: str
    name: str
    crc: str
    pi: str
    cra: str


@dataclass
class Subject:
    sid: str
    site: Site
    week: int  # trial week of randomisation


@dataclass(frozen=True)
class Team:
    sites: tuple[Site, ...]
    cras: tuple[str, str]
    dm: str
    monitor: str
    pm: str
    lead_pi: str
    everyone: tuple[str, ...]  # chat speakers; a CRC appears twice because CRCs talk most


def build_team(rng: random.Random, index: int) -> Team:
    """The sites and staff of the project at position `index`."""
    n_sites = rng.choice((3, 4))
    # Project 0 takes the head of the pool, the others draw from the tail.
    if index == 0:
        names, site_names = list(txt.NAME_POOL[:15]), list(txt.SITE_POOL[:n_sites])
    else:
        names, site_names = list(txt.NAME_POOL[15:]), rng.sample(txt.SITE_POOL, n_sites)
        rng.shuffle(names)
    # Order fixes the doc names on project 0: CRC-王敏, PI-李建国, CRA-陈静, DM-赵磊, 医学监查-周涛.
    crc0, pi0, cra0, dm, mm, cra1, pm, *others = names
    cras = (f"CRA-{cra0}", f"CRA-{cra1}")
    sites: list[Site] = []
    for i, name in enumerate(site_names):
        crc, pi = (crc0, pi0) if i == 0 else (others[2 * i - 2], others[2 * i - 1])
        sites.append(Site(f"{i + 1:02d}", name, f"CRC-{crc}", f"PI-{pi}", cras[i % 2]))
    dm, monitor, pm = f"DM-{dm}", f"医学监查-{mm}", f"项目经理-{pm}"
    everyone = (pm, dm, monitor, *cras, *(a for s in sites for a in (s.crc, s.crc, s.pi)))
    return Team(tuple(sites), cras, dm, monitor, pm, sites[0].pi, everyone)
