"""Files and folders Chronicle creates are private to their owner, whatever the umask (pure helper, no I/O).

The database and its WAL, the snapshot, the lake data, LanceDB, backups, knowledge files, state files and
sockets hold what the logs hold — secrets and patient data the redactor may have missed in a 0600 log. Many
of them are created by libraries (DuckDB, LanceDB, Prefect), so a chmod after each create would always miss
one: every entry point (a flow run's `load_settings`, a CLI command, the warm runner) narrows the process
umask instead, so nothing it creates is readable by the group or others. A umask that is already stricter
stays as it is.
"""

from __future__ import annotations

import os

PRIVATE = 0o077
"""Permission bits no file or folder Chronicle creates grants (group and others)."""


def private_umask() -> int:
    """Narrow the process umask to owner-only (keeping any stricter bits); returns the umask it replaced."""
    old = os.umask(PRIVATE)
    os.umask(old | PRIVATE)
    return old
