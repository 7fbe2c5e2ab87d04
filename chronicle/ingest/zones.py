"""Time-zone names a log line's `ts` may end with, and what each means (pure data).

`2026-11-22 20:00:00 UTC`, `… PST` and `… Europe/Berlin` carry their zone in words. DuckDB's own cast
drops `UTC` silently (the line would be read as project-local time) and reads `PST` as Los Angeles time
with daylight saving (so a July "PST" becomes −07:00). Chronicle reads them by these rules instead:

- an abbreviation below is a FIXED offset, as its name says (`PST` is −08:00 all year);
- an abbreviation used for several zones (`CST`: China +08:00, US Central −06:00, Cuba −05:00) is
  refused with a reason — guessing would misplace the entry by up to 14 hours;
- an IANA name (`Europe/Berlin`, `America/Los_Angeles`) is read with its daylight-saving rules;
- anything else, and a numeric offset beyond ±14:00, is refused with a reason.
"""

from __future__ import annotations

MAX_OFFSET_MINUTES = 14 * 60
"""Real offsets span −12:00 … +14:00; ±14:00 bounds both sides, so `+25:00` is refused."""

UTC_NAMES = ("UTC", "GMT", "UT", "ZULU")

FIXED_ABBREVIATIONS: dict[str, int] = {
    # North America
    "PST": -480, "PDT": -420, "MST": -420, "MDT": -360, "EST": -300, "EDT": -240,
    "AKST": -540, "AKDT": -480, "HST": -600, "NST": -210, "NDT": -150,
    # Europe
    "WET": 0, "WEST": 60, "CET": 60, "CEST": 120, "MET": 60, "MEST": 120, "EET": 120, "EEST": 180, "MSK": 180,
    # Asia / Pacific
    "JST": 540, "KST": 540, "HKT": 480, "SGT": 480, "PHT": 480, "WIB": 420, "ICT": 420, "PKT": 300,
    "AWST": 480, "ACST": 570, "ACDT": 630, "AEST": 600, "AEDT": 660, "NZST": 720, "NZDT": 780,
}
"""Minutes east of UTC."""

AMBIGUOUS_ABBREVIATIONS: dict[str, str] = {
    "CST": "China +08:00, US Central -06:00 or Cuba -05:00",
    "CDT": "US Central -05:00 or Cuba -04:00",
    "IST": "India +05:30, Ireland +01:00 or Israel +02:00",
    "BST": "British Summer +01:00 or Bangladesh +06:00",
    "AST": "Atlantic -04:00 or Arabia +03:00",
    "ADT": "Atlantic -03:00 or Arabia +04:00",
    "SST": "Samoa -11:00 or Singapore +08:00",
    "GST": "Gulf +04:00 or South Georgia -02:00",
}
"""Abbreviations refused as ambiguous, with what they could mean (shown in the reject's detail)."""

NOT_ZONES = ("AM", "PM")
"""Trailing words that are part of a 12-hour time, not a zone (`8:00 PM` is left to the plain cast)."""
