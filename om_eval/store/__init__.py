"""The run store: one DuckDB file per run (one writer each), a read-only catalog over all of them, provenance.

``<results>/store/<run_id>.duckdb`` is written only by the process running that configuration (``RunStore``);
reports read every file at once through ``Catalog``. See ``schema`` for the tables.
"""

from om_eval.store.catalog import Catalog
from om_eval.store.provenance import git_state, package_versions
from om_eval.store.writer import (
    ConfigMismatchError,
    RunInfo,
    RunStore,
    SnapshotLookup,
    StoreBusyError,
    StoreError,
    store_files,
    store_path,
)

__all__ = [
    "Catalog",
    "ConfigMismatchError",
    "RunInfo",
    "RunStore",
    "SnapshotLookup",
    "StoreBusyError",
    "StoreError",
    "git_state",
    "package_versions",
    "store_files",
    "store_path",
]
