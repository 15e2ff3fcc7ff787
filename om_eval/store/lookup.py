"""Finding a memory snapshot another run already built: this run's file first, then the others, read-only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from om_eval.store.files import STORE_DIR, file_signature
from om_eval.store.rows import snapshot_data

if TYPE_CHECKING:
    from om_eval.store.writer import RunStore


class SnapshotLookup:
    """Memory snapshots from the writer's own file first, then (read-only) from other runs' files.

    Answer-only variants share a memory key with the run that built the memory; this finds that run's snapshot
    so they replay nothing. Files another process is writing cannot be opened and are skipped. Each file is
    opened only for the read and closed at once (an open reader would stop its writer from starting), and a
    file that has not changed since it was last found lacking the snapshot is not opened again.

    Args:
        results_dir: the results folder whose ``store/`` holds the run files.
        writer: this run's store; ``put`` writes there.
    """

    def __init__(self, results_dir: Path | str, writer: RunStore) -> None:
        self.store_dir = Path(results_dir) / STORE_DIR
        self.writer = writer
        self.found_in: dict[tuple[str, str], Path] = {}
        """Where each snapshot taken from another run's file came from."""
        self._index: dict[Path, tuple[tuple[Any, ...], frozenset[tuple[str, str]]]] = {}

    def get(self, key: str, question_id: str) -> dict[str, Any] | None:
        data = self.writer.get(key, question_id)
        if data is not None:
            return data
        own = self.writer.path.resolve()
        for path in sorted(self.store_dir.glob("*.duckdb")):
            if path.resolve() == own:
                continue
            signature = file_signature(path)
            known = self._index.get(path)
            if known is not None and known[0] == signature and (key, question_id) not in known[1]:
                continue
            data = self._read(path, signature, key, question_id)
            if data is not None:
                self.found_in[(key, question_id)] = path
                return data
        return None

    def put(self, key: str, question_id: str, data: Mapping[str, Any]) -> None:
        self.writer.put(key, question_id, data)

    def _read(self, path: Path, signature: tuple[Any, ...], key: str, question_id: str) -> dict[str, Any] | None:
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error:
            return None  # being written by another job (locked), or not a readable store: skip
        try:
            pairs = frozenset(con.execute("SELECT memory_key, question_id FROM memory_snapshots").fetchall())
            self._index[path] = (signature, pairs)
            if (key, question_id) not in pairs:
                return None
            # SELECT *: a file of schema 2, never opened by a writer since, has no snapshot_zlib column
            cursor = con.execute("SELECT * FROM memory_snapshots WHERE memory_key = ? AND question_id = ?",
                                 [key, question_id])
            row = cursor.fetchone()
            if row is None:
                return None
            values = dict(zip([column[0] for column in cursor.description], row))
            return snapshot_data((values.get("snapshot"), values.get("snapshot_zlib"), values.get("stats")))
        except (duckdb.Error, ValueError):  # ValueError: a row without a snapshot, or one that is not JSON
            return None
        finally:
            con.close()
