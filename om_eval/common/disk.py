"""Telling a full disk, a read-only folder or a refused permission apart from a bug, and saying what to do.

Why: these are the user's to fix, and a traceback (Hydra's most of all) hides the one thing that matters, the path.
Every command's entry point asks :func:`disk_problem` about an error it did not expect and prints
:meth:`DiskProblem.describe` as one line when it is one of these. DuckDB reports them as its own errors with the
operating system's words in the message (``Could not write file "...wal": No space left on device``), so both forms
are read.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from dataclasses import dataclass

#: The errors a user fixes on the machine, with what each means for them.
DISK_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted",
}
_QUOTED_PATH = re.compile(r"\"([^\"]+)\"|'([^']+)'")
#: DuckDB's errors that can come from a file it could not write (a failed commit names the WAL); a "permission
#: denied" in any other of its errors (a value in a cast, say) is not the disk's.
_DUCKDB_FILE_ERRORS = ("IOException", "TransactionException", "PermissionException", "FatalException")


@dataclass(frozen=True)
class DiskProblem:
    """A write (or a folder's creation) refused by the machine: which path, and why."""

    errno: int
    path: str | None

    @property
    def reason(self) -> str:
        return DISK_ERRNOS[self.errno]

    def describe(self, elsewhere: str | None = None) -> str:
        """One line: the path, the reason, and what to do (``elsewhere``: how the command writes somewhere else,
        such as ``choose another --out``; ``None`` when it cannot)."""
        where = f"cannot write {self.path}" if self.path else "cannot write a file"
        other = f" (or {elsewhere})" if elsewhere else ""
        if self.errno in (errno.ENOSPC, errno.EDQUOT):
            todo = f"free some space there{other} and run the same command again"
        elif self.errno == errno.EROFS:
            todo = f"make that folder writable{other}"
        else:
            todo = f"give this user write access to that folder{other}"
        return f"{where}: {self.reason}; {todo}"


def disk_problem(error: BaseException) -> DiskProblem | None:
    """The disk problem behind ``error`` (itself or what caused it), or ``None`` when it is not one."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _own_problem(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def _own_problem(error: BaseException) -> DiskProblem | None:
    if isinstance(error, OSError):
        if error.errno not in DISK_ERRNOS:
            return None
        path = error.filename if error.filename is not None else error.filename2
        return DiskProblem(error.errno, os.fsdecode(path) if path is not None else None)
    duckdb = sys.modules.get("duckdb")  # only an error DuckDB raised can be one of its errors
    kinds = tuple(getattr(duckdb, name) for name in _DUCKDB_FILE_ERRORS if hasattr(duckdb, name))
    if not kinds or not isinstance(error, kinds):
        return None
    message = str(error)
    for code in DISK_ERRNOS:
        if os.strerror(code).lower() in message.lower():
            quoted = _QUOTED_PATH.search(message)
            return DiskProblem(code, next(part for part in quoted.groups() if part) if quoted else None)
    return None
