"""Read one file's bytes, or say in one reason why it cannot be read: nothing about a file ends a run.

A path found by discovery may be gone by the time it is read (rotation), unreadable (permissions), not a
file at all (a FIFO, socket, device or directory named like a log) or a symlink loop; each is a `Reject`
for that path and the other files of the batch are read. A file that grows while it is read is read up to
what was there (`growing`); the rest is read by the next run.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass

from chronicle.ingest.lines import escape, sniff_encoding
from chronicle.ingest.model import Reject

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


@dataclass(frozen=True)
class FileBytes:
    """What was read of a regular file: its bytes, stat and whether it grew while being read."""

    data: bytes
    size: int
    mtime_ns: int
    growing: bool


def _kind(mode: int) -> str | None:
    return next((name for test, name in _KINDS if test(mode)), None)


def _refusal(path: str, exc: OSError) -> Reject:
    code = exc.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return Reject(path, None, None, "vanished", "the file was removed or renamed after the folder was listed "
                      "(a rotation?); content moved to a new name is read there", "")
    if code in (errno.EACCES, errno.EPERM):
        return Reject(path, None, None, "unreadable_file", f"permission denied{_owner(path)} for uid {os.geteuid()}: "
                      "give the user running Chronicle read access, then ingest again", "")
    if code == errno.ELOOP:
        return Reject(path, None, None, "symlink_loop", "a symbolic link that points back at itself (directly or "
                      "through other links): fix or remove the link", "")
    if code == errno.EISDIR:
        return _not_a_file(path, "a directory")
    return Reject(path, None, None, "unreadable_file", f"cannot read: {exc.strerror or exc}", "")


def _owner(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f" (mode {stat.filemode(st.st_mode)}, owner uid {st.st_uid})"


def _not_a_file(path: str, kind: str) -> Reject:
    return Reject(path, None, None, "not_a_regular_file", f"{kind} named like a log file, not a file to read: "
                  "rename it or move it out of the folder", "")


def read_file(path: str) -> FileBytes | Reject:
    """The bytes of the regular file at `path`, or why not. Opened non-blocking: a FIFO never stalls a run."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a FIFO's peer gone): say what it is
            try:
                kind = _kind(os.stat(path).st_mode)
            except OSError:
                kind = None
            return _not_a_file(path, kind or "a special file")
        return _refusal(path, exc)
    try:
        before = os.fstat(fd)
        kind = _kind(before.st_mode)
        if kind or not stat.S_ISREG(before.st_mode):
            return _not_a_file(path, kind or "a special file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read()
        after = os.fstat(fd)
    except OSError as exc:
        return _refusal(path, exc)
    finally:
        os.close(fd)
    growing = after.st_size != len(data) or after.st_mtime_ns != before.st_mtime_ns
    return FileBytes(data, len(data), before.st_mtime_ns if not growing else -1, growing)


# --- encodings: read correctly or refuse whole, naming what the bytes look like ------------------
def utf16_without_bom(path: str, data: bytes) -> Reject | None:
    """Text with every other byte NUL and no byte-order mark: UTF-16 whose BOM was lost, refused naming it
    (read as bytes it would be "binary")."""
    head = data[:65536]
    if len(head) < 4 or head.count(0) * 3 < len(head) or sniff_encoding(head[:4]) != "utf-8":
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if max(even, odd) < len(head) // 2 * 0.6 or min(even, odd) > len(head) // 2 * 0.1:
        return None  # NULs everywhere, not in one column of byte pairs: binary, judged as such
    return _encoding_reject(path, data, "UTF-16BE without BOM" if even > odd else "UTF-16LE without BOM")


def foreign_encoding(path: str, data: bytes) -> Reject | None:
    """A file that is not UTF-8 but reads whole as GB18030: refused whole, naming it.

    A UTF-8 file with a few broken lines is judged line by line (those lines are refused, the rest read);
    a file whose non-ASCII lines mostly fail UTF-8 and that decodes whole as GB18030 (GBK's superset: Excel's
    CSV in China) is another encoding: read as UTF-8 it would be mojibake or every line refused alike."""
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError:
        pass
    lines = [raw for raw in data.split(b"\n") if _HIGH.search(raw)]
    good = 0
    for raw in lines:
        try:
            raw.decode("utf-8")
            good += 1
        except UnicodeDecodeError:
            pass
    if good * 2 >= len(lines):  # mostly UTF-8: a few broken lines, judged one by one
        return None
    try:
        data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    # Nearly any run of high bytes followed by a letter also decodes as GB18030 (Latin-1 "St\xf6rung" does):
    # Chinese text is written almost only with GB2312's characters, both of whose bytes are 0xA1 or more.
    pairs = _GB_PAIR.findall(data)
    if sum(1 for p in pairs if len(p) == 2 and p[0] >= 0xA1 and p[1] >= 0xA1) < 0.9 * len(pairs):
        return None
    return _encoding_reject(path, data, "GB18030/GBK")


_HIGH = re.compile(rb"[\x80-\xff]")
_GB_PAIR = re.compile(rb"[\x81-\xfe](?:[\x30-\x39][\x81-\xfe][\x30-\x39]|[\x40-\x7e\x80-\xfe])")
_ICONV = {"GB18030/GBK": "GB18030", "UTF-16LE without BOM": "UTF-16LE", "UTF-16BE without BOM": "UTF-16BE"}


def _encoding_reject(path: str, data: bytes, name: str) -> Reject:
    return Reject(path, None, None, "invalid_encoding",
                  f"not UTF-8: the bytes look like {name}; re-save it as UTF-8 (e.g. `iconv -f {_ICONV[name]} "
                  "-t UTF-8`) and ingest again", escape(data, 4096))
