"""Deleting a run: its store file, DuckDB's sidecars and its official exports; never memories or cached calls.

Why this exists: a run that failed for a reason outside it (no API key, a wrong dataset) stays in ``report`` and
``view`` for good otherwise, and deleting files by hand risks hitting a run another process is writing. Memory
snapshots and the response cache are shared by every run with the same memory or requests, so they stay.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from om_eval.common.files import open_lock, try_lock
from om_eval.store.files import STORE_DIR, StoreBusyError

#: Files DuckDB and the writer keep beside a run file.
SIDECARS = (".wal", ".lock")


@dataclass(frozen=True)
class Removed:
    run_id: str
    paths: tuple[Path, ...]


def remove_run(results_dir: Path | str, run_id: str) -> Removed:
    """Delete run ``run_id`` (a full id) from ``results_dir``.

    Raises:
        StoreBusyError: a process is writing the run now (it holds the writer lock); stop it first.
        FileNotFoundError: there is no such run file.
    """
    results = Path(results_dir)
    store = results / STORE_DIR / f"{run_id}.duckdb"
    if not store.exists():
        raise FileNotFoundError(f"no run file {store}")
    lock = store.with_name(store.name + ".lock")
    fd = open_lock(lock)
    try:
        if not try_lock(fd):  # the writer's own lock: held while a job runs
            raise StoreBusyError(f"run {run_id} is being written by another process; stop it first")
        removed = [store]
        store.unlink()
        for suffix in SIDECARS:
            sidecar = store.with_name(store.name + suffix)
            if sidecar.exists():
                sidecar.unlink()
                removed.append(sidecar)
    finally:
        os.close(fd)
    exports = results / "runs" / run_id
    if exports.is_dir():
        shutil.rmtree(exports)
        removed.append(exports)
    return Removed(run_id, tuple(removed))
