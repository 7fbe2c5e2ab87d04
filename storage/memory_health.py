"""A damaged memory store (LanceDB folder) answered in one line with its repair, never a Rust traceback.

A manifest that cannot be read (a disk full mid-commit, a bad copy) fails the table's open; a missing data file
fails the first read that reaches it. Both surface as Lance's `RuntimeError("lance error: ...")`: here they are
recognised and explained, with what to do for this folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from chronicle.settings import Settings

TABLE = "memories"
_MISSING = re.compile(r"Not found: (?:Wrapped error: Not found: )?(\S*?/data/[^\s,]+?\.lance)")


_MANIFEST_WORDS = ("manifest", "too small", "sufficient data", "decode", "protobuf", "version")


def _short(text: str) -> str:
    """Lance's reason without its wrapping, source paths and bytes: `lance error: LanceError(IO): X, /src/...`."""
    reason = re.sub(r"^.*?LanceError\(\w+\):\s*", "", text.splitlines()[0])
    return re.split(r",\s*(?:/|bytes:)", reason)[0][:120]


def _lance_error(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, (RuntimeError, OSError)) and ("lance error" in text.lower() or "LanceError" in text)


def explain(settings: Settings, exc: BaseException) -> str | None:
    """One line naming the damage and its repair when `exc` is a Lance storage error, else None."""
    if not _lance_error(exc):
        return None
    uri = settings.lance_uri
    folder = Path(uri.removeprefix("file://")) / f"{TABLE}.lance"
    missing = _MISSING.search(str(exc))
    if missing:
        what = f"its data file {Path(missing.group(1)).name} is missing"
    elif any(word in str(exc).lower() for word in _MANIFEST_WORDS):
        what = "its newest manifest cannot be read"
    else:
        what = f"it cannot be read ({_short(str(exc))})"
    newest = _newest_manifest(folder)
    back = (f"go back to its previous version by moving {newest} out of {folder / '_versions'} "
            "(repeat until `chronicle memory list` answers)" if newest else "restore its previous version")
    return (f"the memory store {folder} is damaged: {what}. Repair: restore the folder from a backup, or {back}; "
            "then run `chronicle memory reindex` (and `chronicle distill` to re-add what the notes hold)")


def _newest_manifest(folder: Path) -> str | None:
    """The newest manifest's file name (Lance names them so the newest sorts first, or by version number)."""
    try:
        names = [p.name for p in (folder / "_versions").glob("*.manifest")]
    except OSError:
        return None
    if not names:
        return None
    numbers = {n: int(n.split(".")[0]) for n in names if n.split(".")[0].isdigit()}
    if not numbers:
        return None
    # V2 names count down from u64::MAX (newest = smallest); V1 names count up (newest = largest).
    descending = min(numbers.values()) > (1 << 63)
    return min(numbers, key=numbers.get) if descending else max(numbers, key=numbers.get)


def check(settings: Settings) -> str | None:
    """Read every row's id once (every data file is touched): the damage line, or None when the store reads.
    Run before a distillation starts, so a damaged store is one line and not a flow's traceback."""
    if "://" in settings.lance_uri and not settings.lance_uri.startswith("file://"):
        return None  # object stores: their reads fail with the store's own errors, mapped by the caller
    import lancedb  # where the store is read (storage/lance.py `open_lance` says why)

    try:
        db = lancedb.connect(settings.lance_uri)
        try:
            table = db.open_table(TABLE)
        except ValueError:  # never written: nothing to be damaged
            return None
        table.search().select(["id"]).limit(None).to_arrow()
    except (RuntimeError, OSError) as exc:
        return explain(settings, exc)
    return None
