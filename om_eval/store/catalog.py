"""Every run of a results folder in one read-only SQL view.

An in-memory DuckDB attaches each ``store/*.duckdb`` read-only and unions each table over the files by column
name (a file written before a column existed reads NULL there). A file a job is writing cannot be attached
(DuckDB lets no other process open it); the catalog then reads a copy of it taken now (the file and its WAL,
which holds every committed question), so a report during a sweep shows the runs in progress up to their last
finished question. ``live_files`` names them; a copy that cannot be read either is skipped with a warning.

An open catalog keeps its files open, and DuckDB will not let a writer open a file that a reader holds: close
the catalog (or use it as a context manager) when the report is done, or a run resumed meanwhile waits.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from om_eval.store.files import store_files
from om_eval.store.rows import snapshot_text
from om_eval.store.schema import TABLES

if TYPE_CHECKING:
    import pandas

#: The tables the catalog exposes as views (``meta`` is per file and stays out).
VIEWS = ("runs", "items", "om_events", "llm_calls", "memory_snapshots", "judgments", "probe_verdicts")
_EMPTY = "_empty"
_UNPACK = "om_eval_unpack_text"  # the SQL name of snapshot_text's decompression


class Catalog:
    """Read-only SQL over all run files of ``results_dir``.

    Views ``runs``, ``items``, ``om_events``, ``llm_calls``, ``memory_snapshots`` and ``judgments`` hold the rows
    of every attached file, plus a ``store_file`` column naming the file a row came from. A folder without run files
    gives empty views. ``memory_snapshots.snapshot`` is the snapshot's JSON text in every file, though a file stores
    it compressed since schema 3.

    Attributes:
        attached: run files attached, by name.
        skipped_files: run files that could not be opened (being written, or unreadable).
        skip_reasons: why each skipped file was skipped.
    """

    def __init__(self, results_dir: Path | str, *, warn: bool = True) -> None:
        self.results_dir = Path(results_dir)
        self.attached: list[Path] = []
        self.skipped_files: list[Path] = []
        self.skip_reasons: dict[Path, str] = {}
        self.live_files: list[Path] = []
        self._copies: Path | None = None
        self._con = duckdb.connect(":memory:")
        self._con.create_function(_UNPACK, _unpack, ["BLOB"], "VARCHAR")
        self._con.execute(f"CREATE SCHEMA {_EMPTY}")
        self._con.execute(f"USE memory.{_EMPTY}")
        for ddl in TABLES.values():
            self._con.execute(ddl)
        self._con.execute("USE memory.main")
        aliases: list[str] = []
        for path in store_files(self.results_dir):
            alias = f"run_{len(aliases)}"
            try:
                self._con.execute(f"ATTACH {_literal(str(path))} AS {alias} (READ_ONLY)")
            except duckdb.Error as error:
                if not self._attach_copy(path, alias, error):
                    continue
            aliases.append(alias)
            self.attached.append(path)
        self._create_views(aliases)
        if self.live_files and warn:
            names = ", ".join(path.name for path in self.live_files)
            warnings.warn(f"{len(self.live_files)} run file(s) are being written by a job; shown up to their last "
                          f"finished question: {names}", RuntimeWarning, stacklevel=2)
        if self.skipped_files and warn:
            names = ", ".join(path.name for path in self.skipped_files)
            warnings.warn(f"catalog skipped {len(self.skipped_files)} run file(s) it could not open, most likely "
                          f"because a job is writing them: {names}", RuntimeWarning, stacklevel=2)

    def _attach_copy(self, path: Path, alias: str, error: duckdb.Error) -> bool:
        """Attach a copy of a file a job holds open; record why when even that fails."""
        reason = str(error).splitlines()[0]
        if "lock" in reason.lower():
            if self._copies is None:
                self._copies = Path(tempfile.mkdtemp(prefix="om-eval-catalog-"))
            copy = self._copies / path.name
            try:
                shutil.copyfile(path, copy)
                wal = path.with_name(path.name + ".wal")
                if wal.exists():
                    shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
                self._con.execute(f"ATTACH {_literal(str(copy))} AS {alias} (READ_ONLY)")
            except (OSError, duckdb.Error) as copy_error:
                reason = f"{reason}; its copy could not be read either ({str(copy_error).splitlines()[0]})"
            else:
                self.live_files.append(path)
                return True
        self.skipped_files.append(path)
        self.skip_reasons[path] = reason
        return False

    def _create_views(self, aliases: list[str]) -> None:
        present = set(self._con.execute("SELECT database_name, table_name FROM duckdb_tables() "
                                        "WHERE schema_name = 'main'").fetchall())
        for view in VIEWS:
            parts = [f"SELECT *, CAST(NULL AS VARCHAR) AS store_file FROM memory.{_EMPTY}.{view}"]
            for alias, path in zip(aliases, self.attached):
                if (alias, view) in present:
                    parts.append(f"SELECT *, {_literal(path.name)} AS store_file FROM {alias}.main.{view}")
            union = "\nUNION ALL BY NAME\n".join(parts)
            if view == "memory_snapshots":  # one text column, whichever schema wrote the row
                union = (f"SELECT * EXCLUDE (snapshot_zlib) REPLACE (coalesce({_UNPACK}(snapshot_zlib), snapshot) "
                         f"AS snapshot) FROM ({union})")
            self._con.execute(f"CREATE VIEW memory.main.{view} AS {union}")

    def query(self, sql: str, params: list[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a query as dicts (column name -> value)."""
        cursor = self._con.execute(sql, params if params is not None else [])
        if cursor.description is None:
            return []
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def frame(self, sql: str, params: list[Any] | dict[str, Any] | None = None) -> pandas.DataFrame:
        """A query as a pandas DataFrame."""
        import pandas  # noqa: F401  # DuckDB needs it; imported here to keep the catalog light

        return self._con.execute(sql, params if params is not None else []).df()

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first."""
        return self.query("SELECT * FROM runs ORDER BY created_at, run_id")

    def items(self, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
        """Items of the given runs (all runs by default), by run then question."""
        if run_ids is None:
            return self.query("SELECT * FROM items ORDER BY run_id, question_id")
        return self.query("SELECT * FROM items WHERE list_contains(?, run_id) ORDER BY run_id, question_id",
                          [list(run_ids)])

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection (for relational API use)."""
        return self._con

    def close(self) -> None:
        """Detach every file (writers may open them again) and delete the copies of live files."""
        self._con.close()
        if self._copies is not None:
            shutil.rmtree(self._copies, ignore_errors=True)
            self._copies = None

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unpack(packed: bytes) -> str | None:
    return snapshot_text(None, packed)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
