"""The single writer of one run's DuckDB file (:class:`RunStore`).

Opening takes the writer's lock and waits out readers (:mod:`om_eval.store.files` says why a lock file is needed);
registering a run id again checks it is the same configuration (:mod:`om_eval.store.mismatch`).

Durability: each ``record_question``, ``record_questions`` batch and ``put`` is one transaction; DuckDB appends
it to ``<file>.wal`` and fdatasyncs before the commit returns. A killed writer leaves the WAL behind; the next open
(read-only or not) replays it, so every committed question is there and the questions in flight are not.

Paid calls of a question in flight are not lost with it: each call is appended to ``<file>.calls.jsonl`` as soon
as it returns (``journal_call``). Once the question is committed its lines are no longer needed; the journal is
rewritten without them when they pile up (``JOURNAL_SLACK``) and removed when no question is in flight. The next
writer to open the file moves the lines of calls it does not hold (those a killed process left) into
``llm_calls``, marked as calls of an interrupted attempt, so spend and budgets count them; a journal found
beside no run file (the file was deleted) is removed unread. Cache hits are not journaled: they cost nothing,
and the attempt that resumes records its own. (The journal is flushed, not fsynced: it survives a killed process,
not a power cut.)
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from om_eval.common.files import atomic_write
from om_eval.llm.ledger import REJECTED_PREFIX
from om_eval.store.files import (
    RUN_ID_PATTERN,
    StoreError,
    acquire_writer_lock,
    connect_writer,
)
from om_eval.store.mismatch import check_same_run
from om_eval.store.records import PreparedQuestion, QuestionRecord, RunInfo, prepare_question
from om_eval.store.rows import (
    call_row,
    expected_columns,
    fetch_dict,
    insert,
    judgment_row,
    probe_row,
    snapshot_data,
    snapshot_row,
    to_json,
    utcnow,
)
from om_eval.store.schema import SCHEMA_VERSION, TABLES

log = logging.getLogger(__name__)

#: An ``llm_calls`` row of a paid call whose cost is unknown (one parameter: :data:`REJECTED_PREFIX`), as
#: :class:`~om_eval.llm.ledger.LedgerTotals` counts it: made, not a cache hit, and answered (even if refused).
UNPRICED_CALL = "cost_usd IS NULL AND NOT coalesce(cached, false) AND (error IS NULL OR starts_with(error, ?))"

#: The ``error`` of a recovered call whose question was never saved (the process was killed first).
INTERRUPTED_ATTEMPT = "attempt interrupted before its question was saved"

#: WAL size at which DuckDB checkpoints a run store on its own (see :class:`RunStore`).
CHECKPOINT_THRESHOLD = "512MB"


def _aggregate(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> Any:
    """The value of a query without GROUP BY over aggregates only: such a query returns exactly one row."""
    row = con.execute(sql, params).fetchone()
    assert row is not None  # an aggregate-only query always returns one row
    return row[0]


class RunStore:
    """The only writer of one run file. Open it, ``register_run``, then ``record_question`` per finished question.

    Thread-safe (one connection behind a lock). Also a snapshot store with the interface of
    ``get`` / ``put`` for memory snapshots, so a run keeps its memories in its own file.

    Args:
        path: the run file, usually ``store_path(results_dir, run_id)``.
        open_timeout: seconds to wait for readers (catalogs, reports, lookups) to release the file.

    Raises:
        StoreBusyError: another process writes this file (the same configuration is running elsewhere), or
            readers kept it open for longer than ``open_timeout``.
    """

    def __init__(self, path: Path | str, *, open_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._mutex = threading.RLock()
        self._lock_fd: int | None = acquire_writer_lock(self.path)
        self._con: duckdb.DuckDBPyConnection | None = None
        try:
            existed = self.path.exists()  # asked under the lock: no writer can make the file meanwhile
            self._con = connect_writer(self.path, open_timeout)
            # Each automatic checkpoint rewrites the tables' open row groups (every model call of the run so far
            # sits in one), so with DuckDB's 16 MB default a 500-question S run peaked at 1.25 GB in checkpoint
            # spikes against a 0.45 GB steady state. Writes stay durable in the WAL; the checkpoint comes at
            # close (or past this size).
            self._con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
            self._create_schema()
            self._run_ids = {row[0] for row in self._con.execute("SELECT run_id FROM runs").fetchall()}
            self._journal = self.path.with_name(self.path.name + ".calls.jsonl")
            self._in_flight: dict[tuple[str, str], list[str]] = {}
            self._journal_lines = 0
            self._journal_lock = threading.Lock()  # apart from the database's: journaling never waits for a commit
            self.recovered_calls = self._recover_journal() if existed else self._drop_orphan_journal()
            """Calls of interrupted attempts found in the journal when the file was opened."""
            # Questions with any row already: only these need an earlier attempt's rows cleared, their calls
            # numbered after the stored ones, and their verdicts replaced. The lock makes this the file's one
            # writer, so the set stays true; skipping those three statements halves a fresh question's write.
            self._has_rows: set[tuple[str, str]] = set(self._con.execute(
                "SELECT run_id, question_id FROM items UNION SELECT run_id, question_id FROM llm_calls "
                "UNION SELECT run_id, question_id FROM judgments").fetchall())
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Checkpoint and close the database, then release the writer lock. Safe to call twice."""
        with self._mutex:
            try:
                if self._con is not None:
                    try:
                        self._con.close()  # checkpoints: on a full disk this fails, and the WAL keeps every commit
                    finally:
                        self._con = None
            finally:
                if self._lock_fd is not None:
                    try:
                        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                    finally:
                        os.close(self._lock_fd)
                        self._lock_fd = None

    @property
    def closed(self) -> bool:
        return self._con is None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r}{', closed' if self.closed else ''})"

    # -- runs --------------------------------------------------------------------------------------------------

    def register_run(
        self, run: RunInfo, *, ignore_config_keys: Iterable[str] = ("run",), keep_label: bool = False
    ) -> str | None:
        """Insert the run's row, or update it when the run is invoked again (resume); returns the label kept.

        On a second registration the stored configuration must match (top-level ``ignore_config_keys`` aside:
        output folder, concurrency and the like, which the config hash leaves out too), as must the memory key,
        dataset sha256 and prompt hashes when both sides know them. Provenance (git state, package versions)
        may change; every invocation's provenance is appended to ``registrations``.

        ``keep_label`` marks ``run.label`` as derived from the command line rather than given by the user. A given
        label always replaces the stored one; a derived one never does: a run keeps the name it was first stored
        with. The first job of a sweep ``-m experiment=smoke prompt=current,legacy`` is the same run as a plain
        ``experiment=smoke``, and a name that changed with each command line that reached the run would break
        every ``om-eval show smoke ...`` written before. Each entry of ``registrations`` records the label kept
        and whether it was given.

        Raises:
            ConfigMismatchError: the run id is stored with another configuration.
            StoreError: the file already holds a different run.
        """
        if not RUN_ID_PATTERN.fullmatch(run.run_id):
            raise ValueError(f"run id {run.run_id!r} is not usable as a file name")
        row = run.row()
        now = utcnow()
        entry = {"at": now.isoformat(), "git_sha": row["git_sha"], "git_dirty": row["git_dirty"],
                 "packages": json.loads(row["packages"]) if row["packages"] else None}
        with self._transaction() as con:
            other = con.execute("SELECT run_id FROM runs WHERE run_id <> ? LIMIT 1", [run.run_id]).fetchone()
            if other is not None:
                raise StoreError(f"{self.path} already holds run {other[0]}; a run file holds one run only")
            stored = fetch_dict(con, "SELECT * FROM runs WHERE run_id = ?", [run.run_id])
            label_given = not keep_label
            if stored is None:
                row["created_at"] = row["created_at"] or now
                history = [entry]
            else:
                check_same_run(self.path, stored, row, set(ignore_config_keys))
                row["created_at"] = stored["created_at"]
                history = json.loads(stored["registrations"] or "[]")
                if keep_label and stored["label"]:
                    given = [h["label_given"] for h in history if "label_given" in h]
                    # Files registered before labels were recorded: a derived label is the experiment's name or
                    # key=value overrides; anything else was given.
                    stored_given = given[-1] if given else not (stored["label"] == stored["experiment"] or all(
                        "=" in word for word in stored["label"].split()))
                    row["label"], label_given = stored["label"], stored_given
                history.append(entry)
                con.execute("DELETE FROM runs WHERE run_id = ?", [run.run_id])
            entry.update(label=row["label"], label_given=label_given)
            row["updated_at"] = now
            row["registrations"] = to_json(history)
            insert(con, "runs", [row])
        self._run_ids.add(run.run_id)
        kept: str | None = row["label"]
        return kept

    def done_question_ids(self, run_id: str) -> set[str]:
        """Questions of ``run_id`` finished with status ``done`` (errors are retried on resume)."""
        return {row[0] for row in self._read(
            "SELECT question_id FROM items WHERE run_id = ? AND status = 'done'", [run_id])}

    def finished(self, run_id: str) -> bool:
        """Whether every question of ``run_id`` is done (as many as the run registered; a run id fixes its subset)."""
        rows = self._read("SELECT n_questions FROM runs WHERE run_id = ?", [run_id])
        if not rows or rows[0][0] is None:
            return False
        return len(self.done_question_ids(run_id)) >= rows[0][0]

    def spent_usd(self, run_id: str) -> float:
        """Known dollars spent by the run so far, over every attempt of every question."""
        rows = self._read("SELECT coalesce(sum(cost_usd), 0) FROM llm_calls WHERE run_id = ?", [run_id])
        return float(rows[0][0])

    def unpriced_calls(self, run_id: str) -> int:
        """Paid calls of the run whose cost is unknown (no price, or no usage reported), over every attempt."""
        rows = self._read(f"SELECT count(*) FROM llm_calls WHERE run_id = ? AND {UNPRICED_CALL}",
                          [run_id, REJECTED_PREFIX])
        return int(rows[0][0])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        """The run's item rows as dicts, by question id (the writer's own view; use ``Catalog`` across runs)."""
        with self._mutex:
            cursor = self._connection().execute(
                "SELECT * FROM items WHERE run_id = ? ORDER BY question_id", [run_id])
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    # -- questions ---------------------------------------------------------------------------------------------

    def record_question(
        self,
        run_id: str,
        item: Mapping[str, Any] | Any,
        events: Iterable[Mapping[str, Any] | Any] = (),
        calls: Iterable[Mapping[str, Any] | Any] = (),
        snapshot: tuple[str, str, Any, Any] | None = None,
        judgments: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """Write one finished question in one transaction: all of it or (on any error) none of it.

        Replaces what an earlier attempt at the same (run, question) wrote, so a re-run after an error is clean.

        Args:
            run_id: a registered run.
            item: the ``items`` row (e.g. ``QuestionRun.row()`` plus ``status``, ``cost_usd`` ...); ``status``
                defaults to ``done`` and ``finished_at`` to now. Unknown keys are an error.
            events: the memory build's OM events (``OMEvent`` or its ``asdict``), keyed by the item's
                ``memory_key``; ``seq`` is their order. Events of a reused memory (no events and
                ``reused_memory`` true) are left as they are.
            calls: the question's LLM calls (``CallRecord`` or its ``asdict``); ``seq`` is their order.
            snapshot: ``(memory_key, question_id, snapshot, stats)``, JSON text or plain data, to store too.
            judgments: verdicts to keep in ``judgments`` (replacing the same judge's earlier verdict).
        """
        error = self.record_questions(run_id, [QuestionRecord(item, events, calls, snapshot, judgments)])[0]
        if error is not None:
            raise error

    def record_questions(self, run_id: str, records: Sequence[QuestionRecord]) -> list[Exception | None]:
        """Write several finished questions (each as :meth:`record_question` would) in one transaction, or, when
        that fails, each in its own, so one bad record fails alone. Returns each record's error, or None.

        Why: DuckDB spends most of a small write on its per-statement and per-commit overhead, so questions
        that finish together are written together (a batch of four costs about what two single writes cost).
        """
        if run_id not in self._run_ids:
            raise StoreError(f"run {run_id} is not registered in {self.path}; call register_run first")
        errors: list[Exception | None] = [None] * len(records)
        ready: list[tuple[int, PreparedQuestion]] = []
        for index, record in enumerate(records):
            try:
                ready.append((index, prepare_question(run_id, record)))
            except Exception as error:
                errors[index] = error
        with self._mutex:  # what is known to have rows, the writes and the marks, as one step
            keys = [prepared.key for _, prepared in ready]
            alone = len(ready) < 2 or len(set(keys)) < len(keys)
            if not alone:
                try:
                    with self._transaction() as con:
                        self._write(con, run_id, [prepared for _, prepared in ready])
                except Exception:
                    alone = True
                else:
                    self._has_rows.update(keys)
            if alone:
                for index, prepared in ready:
                    try:
                        with self._transaction() as con:
                            self._write(con, run_id, [prepared])
                    except Exception as error:
                        errors[index] = error
                    else:
                        self._has_rows.add(prepared.key)
        saved = [prepared.key for index, prepared in ready if errors[index] is None]
        with self._journal_lock:
            if [self._in_flight.pop(key, None) for key in saved].count(None) < len(saved):
                self._rewrite_journal()
        return errors

    def _write(self, con: duckdb.DuckDBPyConnection, run_id: str, batch: Sequence[PreparedQuestion]) -> None:
        item_rows, event_rows, call_rows, snapshot_rows = [], [], [], []
        verdicts: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        for prepared in batch:
            question_id = prepared.key[1]
            seen = prepared.key in self._has_rows
            first = 0
            if seen:
                con.execute("DELETE FROM items WHERE run_id = ? AND question_id = ?", list(prepared.key))
                # Calls of earlier attempts stay (they were paid for); this attempt's are numbered after them.
                first = _aggregate(con, "SELECT coalesce(max(seq) + 1, 0) FROM llm_calls WHERE run_id = ? AND "
                                   "question_id = ?", list(prepared.key))
            call_rows += [call_row(call, run_id, question_id, first + seq) for seq, call in enumerate(prepared.calls)]
            if prepared.event_rows and prepared.item["memory_key"] is not None:
                # Events are replaced only by new ones: a failed attempt brings none and must not erase a build's.
                con.execute("DELETE FROM om_events WHERE memory_key = ? AND question_id = ?",
                            [prepared.item["memory_key"], prepared.owner])
            item_rows.append(prepared.item)
            event_rows += prepared.event_rows
            if prepared.snapshot is not None:
                snapshot_rows.append(prepared.snapshot)
            verdicts[seen] += prepared.judgments
        insert(con, "items", item_rows)
        insert(con, "om_events", event_rows)
        insert(con, "llm_calls", call_rows)
        insert(con, "memory_snapshots", snapshot_rows, replace=True)
        insert(con, "judgments", verdicts[False])
        insert(con, "judgments", verdicts[True], replace=True)

    def journal_call(self, run_id: str, question_id: str, call: Mapping[str, Any] | Any) -> None:
        """Note a call of a question in flight at once, so a kill before the question is saved loses none.

        A cache hit is not noted: it asked no model and cost nothing, and once recovered each kill added it to the
        ledger again beside the hit the resumed attempt records.
        """
        values = {k: v for k, v in call_row(call, run_id, question_id, 0).items() if k != "seq"}
        if values.get("cached"):
            return
        line = json.dumps(values, ensure_ascii=False, default=str)
        with self._journal_lock:
            self._in_flight.setdefault((run_id, question_id), []).append(line)
            self._journal_lines += 1
            with open(self._journal, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    #: Saved questions' lines may stay in the journal up to this many lines (opening skips lines already stored):
    #: rewriting it after every question cost a file write per question for nothing.
    JOURNAL_SLACK = 256

    def _rewrite_journal(self) -> None:
        lines = [line for entries in self._in_flight.values() for line in entries]
        if not lines:
            self._journal.unlink(missing_ok=True)
            self._journal_lines = 0
        elif self._journal_lines > len(lines) + self.JOURNAL_SLACK:
            atomic_write(self._journal, "".join(line + "\n" for line in lines))
            self._journal_lines = len(lines)

    def _drop_orphan_journal(self) -> int:
        """Remove the journal of a run file that no longer exists (deleted by hand, or by an ``om-eval runs rm``
        older than this rule); returns 0.

        Its calls belong to the deleted run: moved into the new file, they came back into its spend and budget.
        """
        if self._journal.exists():
            log.warning("removing %s: the journal of a deleted run file (its calls are not this run's)", self._journal)
            self._journal.unlink(missing_ok=True)
        return 0

    def _recover_journal(self) -> int:
        """Move calls of interrupted attempts from the journal into ``llm_calls``; returns how many.

        Cache hits are skipped (journals written before they were left out held them): they asked no model and
        cost nothing, and the resumed attempt records its own.
        """
        try:
            text = self._journal.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 0
        entries = []
        for line in text.splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the line a kill cut short: that call's record is lost, as it never finished writing
        moved = 0
        with self._transaction() as con:
            for entry in entries:
                if entry.get("cached"):
                    continue
                key = [entry["run_id"], entry["question_id"]]
                # A kill between a question's commit and the journal rewrite leaves lines already saved.
                if _aggregate(con, "SELECT count(*) FROM llm_calls WHERE run_id = ? AND question_id = ? AND stage = ? "
                              "AND started_at IS NOT DISTINCT FROM ? AND cache_key IS NOT DISTINCT FROM ?",
                              [*key, entry["stage"], entry["started_at"], entry["cache_key"]]):
                    continue
                first = _aggregate(con, "SELECT coalesce(max(seq) + 1, 0) FROM llm_calls WHERE run_id = ? AND "
                                   "question_id = ?", key)
                entry["error"] = entry["error"] or INTERRUPTED_ATTEMPT
                insert(con, "llm_calls", [call_row(entry, entry["run_id"], entry["question_id"], first)])
                moved += 1
        self._journal.unlink(missing_ok=True)
        return moved

    def record_judgments(
        self, run_id: str, rows: Iterable[tuple[str, Mapping[str, Any]]],
        calls: Mapping[str, Iterable[Mapping[str, Any] | Any]] | None = None,
    ) -> int:
        """Store ``(question_id, judgment)`` verdicts of a re-judging in one transaction; returns their count.

        A verdict replaces the same judge's earlier one for that question; the run's items stay as they are.
        ``calls`` (question id -> the judge calls made for it) are added after the question's earlier calls.
        """
        return self._record_verdicts("judgments", judgment_row, run_id, rows, calls)

    def record_probes(
        self, run_id: str, rows: Iterable[tuple[str, Mapping[str, Any]]],
        calls: Mapping[str, Iterable[Mapping[str, Any] | Any]] | None = None,
    ) -> int:
        """Store ``(question_id, probe verdict)`` rows (:func:`~om_eval.store.rows.probe_row`) and their judge
        calls as :meth:`record_judgments` does, a verdict replacing the same judge's earlier one on that probe."""
        return self._record_verdicts("probe_verdicts", probe_row, run_id, rows, calls)

    def _record_verdicts(self, table: str, make_row: Any, run_id: str, rows: Iterable[tuple[str, Mapping[str, Any]]],
                         calls: Mapping[str, Iterable[Mapping[str, Any] | Any]] | None) -> int:
        if run_id not in self._run_ids:
            raise StoreError(f"run {run_id} is not registered in {self.path}; call register_run first")
        verdict_rows = [make_row(run_id, qid, verdict) for qid, verdict in rows]
        with self._transaction() as con:
            insert(con, table, verdict_rows, replace=True)
            for question_id, question_calls in (calls or {}).items():
                first = _aggregate(con, "SELECT coalesce(max(seq) + 1, 0) FROM llm_calls WHERE run_id = ? AND "
                                   "question_id = ?", [run_id, question_id])
                insert(con, "llm_calls", [call_row(call, run_id, question_id, first + seq)
                                          for seq, call in enumerate(question_calls)])
        self._has_rows.update((run_id, row["question_id"]) for row in verdict_rows)
        self._has_rows.update((run_id, question_id) for question_id in calls or {})
        return len(verdict_rows)

    # -- memory snapshots (get / put) ----------------------------------------------------------------------------

    def get(self, key: str, question_id: str) -> dict[str, Any] | None:
        """The stored memory ``{"snapshot": ..., "stats": ...}`` of build ``key`` for a question, or None."""
        rows = self._read("SELECT snapshot, snapshot_zlib, stats FROM memory_snapshots "
                          "WHERE memory_key = ? AND question_id = ?", [key, question_id])
        return snapshot_data(rows[0]) if rows else None

    def put(self, key: str, question_id: str, data: Mapping[str, Any]) -> None:
        """Store (or replace) a memory snapshot, committed on return."""
        row = snapshot_row(key, question_id, data["snapshot"], data["stats"])
        with self._transaction() as con:
            insert(con, "memory_snapshots", [row], replace=True)

    # -- internals ---------------------------------------------------------------------------------------------

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise StoreError(f"{self.path} is closed")
        return self._con

    def _read(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        with self._mutex:
            return self._connection().execute(sql, params).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._mutex:
            con = self._connection()
            con.begin()
            try:
                yield con
                con.commit()
            except BaseException:
                try:
                    con.rollback()
                except duckdb.Error:
                    pass  # the transaction is already gone (DuckDB aborts it on some errors, and on a failed commit)
                raise

    def _create_schema(self) -> None:
        with self._transaction() as con:
            for ddl in TABLES.values():
                con.execute(ddl)
            present = set(con.execute(
                "SELECT table_name, column_name FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = 'main'").fetchall())
            for table, columns in expected_columns().items():
                for name, type_ in columns:
                    if (table, name) not in present:  # a file written before the column existed
                        con.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {type_}')
            version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version is not None and int(version[0]) > SCHEMA_VERSION:
                raise StoreError(f"{self.path} has schema version {version[0]}; this om-eval knows "
                                 f"{SCHEMA_VERSION}; upgrade om-eval to write it")
            if version is None:
                from om_eval.common.version import __version__

                con.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ["created_at", utcnow().isoformat()], ["created_by", f"om-eval {__version__}"]])
            con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
