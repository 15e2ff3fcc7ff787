"""Rows for the run store's tables: plain data (dicts or the engine's dataclasses) in, column-complete rows out.

Every row carries exactly the table's columns (read from ``schema``), so a key the table does not know is an
error rather than a silently dropped value. Timestamps are stored as naive UTC, JSON columns as text.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import duckdb

from om_eval.common.files import short_hash
from om_eval.common.secrets import scrub_secrets
from om_eval.store.schema import TABLES


@cache
def expected_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """Each table's (column, type) pairs in order, as the schema declares them."""
    con = duckdb.connect(":memory:")
    try:
        for ddl in TABLES.values():
            con.execute(ddl)
        rows = con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() "
                           "WHERE schema_name = 'main' ORDER BY table_name, column_index").fetchall()
    finally:
        con.close()
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, name, type_ in rows:
        columns.setdefault(table, []).append((name, type_))
    return {table: tuple(columns[table]) for table in TABLES}


def column_names(table: str) -> tuple[str, ...]:
    return tuple(name for name, _ in expected_columns()[table])


def _as_dict(value: Mapping[str, Any] | Any, what: str) -> dict[str, Any]:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}  # shallow: asdict deep-copies, slowly
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{what} must be a mapping or a dataclass, not {type(value).__name__}")


def _full_row(table: str, values: dict[str, Any], what: str) -> dict[str, Any]:
    names = column_names(table)
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"{what} has keys the {table} table does not know: {', '.join(unknown)}")
    row = {name: values.get(name) for name in names}
    error = row.get("error")
    if isinstance(error, str):  # whatever raised it, an error text may quote a key: none is stored
        row["error"] = scrub_secrets(error)
    return row


def item_row(run_id: str, item: Mapping[str, Any] | Any) -> dict[str, Any]:
    values = _as_dict(item, "item")
    if values.setdefault("run_id", run_id) != run_id:
        raise ValueError(f"item is for run {values['run_id']}, not {run_id}")
    if not values.get("question_id"):
        raise ValueError("item has no question_id")
    values.setdefault("status", "done")
    if values["status"] not in ("done", "error"):
        raise ValueError(f"item status must be 'done' or 'error', not {values['status']!r}")
    values["finished_at"] = utc(values.get("finished_at")) or utcnow()
    return _full_row("items", values, "item")


def event_row(
    event: Mapping[str, Any] | Any, memory_key: str | None, question_id: str, seq: int
) -> dict[str, Any]:
    values = _as_dict(event, "event")
    thread_ids = values.pop("thread_ids", None)
    if thread_ids is not None:
        values.setdefault("thread_count", len(thread_ids))
    values.setdefault("memory_key", memory_key)
    values.setdefault("seq", seq)
    if values.setdefault("question_id", question_id) != question_id:
        raise ValueError(f"event is for question {values['question_id']}, not {question_id}")
    if values["memory_key"] is None:
        raise ValueError("events need a memory key (the item's memory_key or their own)")
    if values.get("levels") is not None and not isinstance(values["levels"], str):
        values["levels"] = to_json(list(values["levels"]))
    values["at"] = utc(values.get("at"))
    return _full_row("om_events", values, "event")


def call_row(call: Mapping[str, Any] | Any, run_id: str, question_id: str, seq: int) -> dict[str, Any]:
    values = _as_dict(call, "call")
    values["seq"] = seq  # the writer numbers calls after the question's earlier attempts: its offset wins
    if values.setdefault("run_id", run_id) != run_id or values.setdefault("question_id", question_id) != question_id:
        raise ValueError(f"call is for ({values['run_id']}, {values['question_id']}), not ({run_id}, {question_id})")
    return _full_row("llm_calls", values, "call")


def judgment_row(run_id: str, question_id: str, judgment: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A ``judgments`` row; ``judge_identity`` may be JSON text or a mapping (its hash is the ``judge_key``)."""
    values = _as_dict(judgment, "judgment")
    values.setdefault("run_id", run_id)
    values.setdefault("question_id", question_id)
    identity = values.get("judge_identity")
    if identity is None:
        raise ValueError(f"judgment of question {question_id} has no judge_identity")
    if not isinstance(identity, str):
        identity = values["judge_identity"] = to_json(identity, sort_keys=True)
    values.setdefault("judge_key", judge_key(identity))
    if values.get("status") not in ("ok", "error"):
        raise ValueError(f"judgment status must be 'ok' or 'error', not {values.get('status')!r}")
    if (values["status"] == "ok") != (values.get("label") is not None):
        raise ValueError(f"judgment of question {question_id}: a label exactly when the status is ok")
    values["judged_at"] = utc(values.get("judged_at")) or utcnow()
    return _full_row("judgments", values, "judgment")


def probe_row(run_id: str, question_id: str, verdict: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A ``probe_verdicts`` row: a judgment row's rules, plus the probe's kind, text and expected verdict."""
    values = dict(_as_dict(verdict, "probe verdict"))
    probe = {key: values.pop(key, None) for key in ("probe", "probe_text", "expected")}
    if probe["probe"] is None or probe["expected"] is None:
        raise ValueError(f"probe verdict of question {question_id} needs probe and expected")
    row = judgment_row(run_id, question_id, values)
    return _full_row("probe_verdicts", {**{k: v for k, v in row.items() if k in column_names("probe_verdicts")},
                                        **probe}, "probe verdict")


def judge_key(identity: str | Mapping[str, Any]) -> str:
    """Short, stable name of a judge: the sha256 of its canonical identity JSON."""
    text = identity if isinstance(identity, str) else to_json(identity, sort_keys=True)
    return short_hash(json.dumps(json.loads(text), sort_keys=True), 12)


#: zlib level of stored snapshots. An S-sized OM memory holds its ~500 messages (0.7 MB of JSON) and DuckDB keeps a
#: run's rows in memory until its checkpoint at close, so 500 text snapshots took 370 MB; level 3 shrinks them about
#: sixfold, and the store's thread compresses while the event loop goes on (zlib releases the GIL).
SNAPSHOT_ZLIB_LEVEL = 3


def snapshot_row(memory_key: str, question_id: str, snapshot: Any, stats: Any) -> dict[str, Any]:
    text = snapshot if isinstance(snapshot, str) else to_json(snapshot)
    return {
        "memory_key": memory_key,
        "question_id": question_id,
        "snapshot": None,  # named, so that replacing a row of schema 2 drops its text
        "snapshot_zlib": zlib.compress(text.encode("utf-8"), SNAPSHOT_ZLIB_LEVEL),
        "stats": stats if isinstance(stats, str) else to_json(stats),
        "created_at": utcnow(),
    }


def snapshot_text(text: str | None, packed: bytes | None) -> str | None:
    """A stored snapshot's JSON: compressed in ``snapshot_zlib`` since schema 3, as text in ``snapshot`` before."""
    if packed is not None:
        try:
            return zlib.decompress(bytes(packed)).decode("utf-8")
        except zlib.error as error:
            raise ValueError(f"a stored snapshot_zlib is not zlib data ({error}): the run file is damaged") from None
    return text


def snapshot_data(row: tuple[Any, ...]) -> dict[str, Any]:
    """``{"snapshot": ..., "stats": ...}`` of a row selected as ``snapshot, snapshot_zlib, stats``."""
    text = snapshot_text(row[0], row[1])
    if text is None:
        raise ValueError("a memory_snapshots row holds no snapshot (snapshot and snapshot_zlib are both NULL)")
    return {"snapshot": json.loads(text), "stats": json.loads(row[2]) if row[2] is not None else None}


def insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]], *, replace: bool = False) -> None:
    if not rows:
        return
    names = list(rows[0])
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    columns = ", ".join(f'"{name}"' for name in names)
    # One list parameter per column, zipped back into rows by unnest: ten times faster than executemany or a
    # long VALUES list, which bind row by row.
    select = ", ".join(f"unnest(${i + 1})" for i in range(len(names)))
    con.execute(f"{verb} INTO {table} ({columns}) SELECT {select}", [[row[name] for row in rows] for name in names])


def fetch_dict(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    cursor = con.execute(sql, params)
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def to_json(value: Any, *, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def utc(value: datetime | str | None) -> datetime | None:
    """Naive UTC (DuckDB ``TIMESTAMP``); naive inputs are taken to be UTC already."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value
