"""Where run files live, and how the one writer of a file opens it: its lock, and its connection.

Why a lock file beside the database: DuckDB refuses a second read-write process with a generic IO error, and it
refuses a writer just the same while any *reader* (a catalog, a report, another job's snapshot lookup) has the file
open. The sidecar ``<file>.lock`` tells the two apart: only writers take it (``flock``, exclusive, non-blocking), it
is held for the writer's lifetime and the kernel drops it when the process dies, SIGKILL included, so a crashed run
never leaves a stale lock. A held lock means another process runs this same configuration (``StoreBusyError``); a
free lock but a busy database means a reader, which is waited out.
"""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import duckdb

from om_eval.common.files import open_lock, try_lock

STORE_DIR = "store"
"""Sub-folder of a results folder that holds the run files."""

#: DuckDB's error for a file already open in this process (DuckDB 1.2 and later).
_IN_USE: tuple[type[Exception], ...] = tuple(
    getattr(duckdb, name) for name in ("ResourceInUseException",) if hasattr(duckdb, name))
#: What opening a run store raises when the file is held elsewhere (a lock) or in this process.
_CONNECT_ERRORS: tuple[type[Exception], ...] = (duckdb.IOException, *_IN_USE)
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a run id must look like to name a file."""


class StoreError(RuntimeError):
    """A run file cannot be used as asked."""


class StoreBusyError(StoreError):
    """Another process has the run file open."""


def store_path(results_dir: Path | str, run_id: str) -> Path:
    """Where run ``run_id`` lives: ``<results_dir>/store/<run_id>.duckdb``."""
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} is not usable as a file name")
    return Path(results_dir) / STORE_DIR / f"{run_id}.duckdb"


def store_files(results_dir: Path | str) -> list[Path]:
    """Every run file of a results folder, sorted by name."""
    return sorted((Path(results_dir) / STORE_DIR).glob("*.duckdb"))


def file_signature(path: Path) -> tuple[Any, ...]:
    """Modification times and sizes of a run file and its WAL: changes whenever anything was committed."""
    parts: list[Any] = []
    for candidate in (path, path.with_name(path.name + ".wal")):
        try:
            stat = candidate.stat()
            parts.append((stat.st_mtime_ns, stat.st_size))
        except FileNotFoundError:
            parts.append(None)
    return tuple(parts)


def acquire_writer_lock(path: Path) -> int:
    """Take the writer's lock of ``path`` (its file descriptor), or raise ``StoreBusyError`` naming the holder."""
    lock_path = path.with_name(path.name + ".lock")
    fd = open_lock(lock_path)
    try:
        locked = try_lock(fd)
    except BaseException:
        os.close(fd)
        raise
    if not locked:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown process"
        os.close(fd)
        raise StoreBusyError(
            f"{path} is being written by another process ({holder}): another process is running this same "
            "configuration. Let it finish (its finished questions will be skipped) or stop it first.")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
    return fd


def connect_writer(path: Path, timeout: float) -> duckdb.DuckDBPyConnection:
    """A read-write connection to ``path``, waiting up to ``timeout`` seconds for readers to let go of it."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(path))
        except _CONNECT_ERRORS as error:
            in_use = isinstance(error, _IN_USE)  # open elsewhere in this very process
            if not in_use and "lock" not in str(error).lower():
                raise
            if time.monotonic() >= deadline:
                holder = "this process (a Catalog left open?)" if in_use else "another process"
                raise StoreBusyError(
                    f"{path} is held open by {holder}, most likely a reader (a catalog, a report or another "
                    f"run's snapshot lookup); close it and retry. DuckDB said: {error}") from error
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
