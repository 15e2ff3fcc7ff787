"""Deleting a run: every file kept for it alone; never memories or cached calls other runs share.

Why this exists: a run that failed for a reason outside it (no API key, a wrong dataset) stays in ``report`` and
``view`` for good otherwise, and deleting files by hand risks hitting a run another process is writing. Memory
snapshots and the response cache are shared by every run with the same memory or requests, so they stay.

What belongs to a run, all named by its id: the store file and what the writer and DuckDB keep beside it (WAL,
lock, the call journal and its rewrite's temporary file), the official exports under ``runs/<id>/`` and the
archives ``om-eval export`` wrote under ``exports/``. The journal matters most: left behind, the calls of the
deleted run came back into the ledger (and the budget) of the next run with the same configuration. Archives
written elsewhere (``export --out``) are the user's to keep or share: they are listed, never deleted.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from om_eval.common.files import open_lock, try_lock
from om_eval.store.files import STORE_DIR, StoreBusyError

log = logging.getLogger(__name__)

#: Files the writer and DuckDB keep beside a run file, removed before the lock (the last one).
SIDECARS = (".calls.jsonl", ".wal", ".lock")
#: Where ``om-eval run`` writes the official layouts (a folder per run) and ``om-eval export`` its archives.
RUN_EXPORTS, ARCHIVES = "runs", "exports"


#: Suffix of the list, under ``exports/``, of a run's archives written elsewhere (``om-eval export --out``).
ELSEWHERE = ".elsewhere.txt"


@dataclass(frozen=True)
class Removed:
    run_id: str
    paths: tuple[Path, ...]
    """Every file and folder removed, in the order they were."""
    kept: tuple[Path, ...] = ()
    """The run's archives written elsewhere with ``export --out`` that still exist after the removal: left where the
    user put them."""


def note_archive_elsewhere(results_dir: Path | str, run_id: str, archive: Path) -> None:
    """Remember an archive of ``run_id`` that :func:`run_artefacts` does not find as the run's (written with
    ``export --out`` anywhere but ``<results>/exports/<id>...``), so ``runs rm`` can name it. Best effort: a results
    folder that cannot take the note (read-only, full) costs only the note, never the archive just written."""
    if is_run_archive(results_dir, run_id, archive):
        return
    listing = Path(results_dir) / ARCHIVES / f"{run_id}{ELSEWHERE}"
    try:
        if archive.resolve() not in archives_elsewhere(results_dir, run_id, existing=False):
            listing.parent.mkdir(parents=True, exist_ok=True)
            with listing.open("a", encoding="utf-8") as handle:
                handle.write(f"{archive.resolve()}\n")
    except OSError as error:
        log.warning("could not note archive %s in %s (%s); om-eval runs rm will not name it", archive, listing, error)


def archives_elsewhere(results_dir: Path | str, run_id: str, *, existing: bool = True) -> list[Path]:
    """The archives of ``run_id`` noted by :func:`note_archive_elsewhere` (``existing``: those still there)."""
    listing = Path(results_dir) / ARCHIVES / f"{run_id}{ELSEWHERE}"
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    paths = [Path(line) for line in dict.fromkeys(lines) if line.strip()]
    return [path for path in paths if path.is_file()] if existing else paths


def is_run_archive(results_dir: Path | str, run_id: str, path: Path) -> bool:
    """Whether ``path`` is one of the run's files under ``<results>/exports``: its name is the id followed by a dot,
    a dash or an underscore (``<id>.zip``, ``<id>-partial.zip``), so another run's id that merely starts the same
    way never matches; a leading dot is an unfinished write's temporary file (``.<id>.zip.<host>....tmp``)."""
    if path.resolve().parent != (Path(results_dir) / ARCHIVES).resolve():
        return False
    name = path.name[1:] if path.name.startswith(".") and path.name.endswith(".tmp") else path.name
    return name.startswith(run_id) and name[len(run_id):][:1] in (".", "-", "_")


def run_artefacts(results_dir: Path | str, run_id: str) -> list[Path]:
    """The files and folders of run ``run_id`` (a full id) in ``results_dir`` that exist now, the store file first
    (archives: :func:`is_run_archive`)."""
    results = Path(results_dir)
    store = results / STORE_DIR / f"{run_id}.duckdb"
    found = [store, *(store.with_name(store.name + suffix) for suffix in SIDECARS)]
    found += sorted(store.parent.glob(f".{store.name}.*.tmp"))  # a journal rewrite cut short (atomic_write's name)
    found.append(results / RUN_EXPORTS / run_id)
    archives = results / ARCHIVES
    if archives.is_dir():
        found += sorted(path for path in archives.iterdir() if is_run_archive(results, run_id, path))
    return [path for path in found if path.exists() or path.is_symlink()]


def remove_run(results_dir: Path | str, run_id: str) -> Removed:
    """Delete run ``run_id`` (a full id) from ``results_dir``: every path :func:`run_artefacts` lists.

    Raises:
        StoreBusyError: a process is writing the run now (it holds the writer lock); stop it first.
        FileNotFoundError: there is no such run file.
        OSError: a file could not be removed (what was removed before it stays removed).
    """
    results = Path(results_dir)
    store = results / STORE_DIR / f"{run_id}.duckdb"
    if not store.exists():
        raise FileNotFoundError(f"no run file {store}")
    lock = store.with_name(store.name + ".lock")
    noted = archives_elsewhere(results, run_id, existing=False)  # read before the list goes with the run's files
    fd = open_lock(lock)
    removed: list[Path] = []
    try:
        if not try_lock(fd):  # the writer's own lock: held while a job runs
            raise StoreBusyError(f"run {run_id} is being written by another process; stop it first")
        # The store file first: stopped halfway, what is left lies beside no run file, where the next writer of
        # this id drops the journal unread and the next run rewrites runs/<id>/.
        for path in run_artefacts(results, run_id):
            if path != lock:
                _delete(path)
                removed.append(path)
        lock.unlink(missing_ok=True)  # last, and while held: no writer can open the run in between
        removed.append(lock)
    finally:
        os.close(fd)
    return Removed(run_id, tuple(removed), tuple(path for path in noted if path.is_file()))


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
