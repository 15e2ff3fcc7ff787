"""The run store: one DuckDB file per run (one writer each), a read-only catalog over all of them, provenance.

``<results>/store/<run_id>.duckdb`` is written only by the process running that configuration (``RunStore``);
reports read every file at once through ``Catalog``. See ``schema`` for the tables.
"""

from om_eval.store.catalog import Catalog
from om_eval.store.files import StoreBusyError, StoreError, store_files, store_path
from om_eval.store.lookup import SnapshotLookup
from om_eval.store.mismatch import ConfigMismatchError
from om_eval.store.provenance import git_state, package_versions
from om_eval.store.records import RunInfo
from om_eval.store.writer import RunStore

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
