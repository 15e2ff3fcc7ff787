"""What a writer is handed: a run's row (:class:`RunInfo`) and a finished question (:class:`QuestionRecord`),
and a question's rows checked before they are written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from om_eval.store.rows import event_row, item_row, judgment_row, snapshot_row, to_json, utc

#: Run columns stored as JSON text.
JSON_RUN_FIELDS = ("prompt_hashes", "packages", "judge_identity", "memory_budget")


@dataclass(frozen=True)
class RunInfo:
    """One row of ``runs``. JSON columns (``prompt_hashes``, ``packages``, ``judge_identity``, ``config_json``)
    take either the JSON text or plain data; ``created_at`` defaults to the first registration."""

    run_id: str
    config_json: str | Mapping[str, Any]
    label: str | None = None
    experiment: str | None = None
    created_at: datetime | None = None
    memory_key: str | None = None
    prompt_hashes: str | Mapping[str, str] | None = None
    dataset_name: str | None = None
    dataset_path: str | None = None
    dataset_sha256: str | None = None
    dataset_subset: str | None = None
    n_questions: int | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None
    packages: str | Mapping[str, str | None] | None = None
    observer_model: str | None = None
    reflector_model: str | None = None
    actor_model: str | None = None
    judge_model: str | None = None
    judge_mode: str | None = None
    judge_identity: str | Mapping[str, Any] | None = None
    official: bool | None = None
    token_estimator: str | None = None
    benchmark: str | None = None
    memory_system: str | None = None
    memory_budget: str | Mapping[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        """The row as stored: JSON columns serialised, timestamps in naive UTC."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in (*JSON_RUN_FIELDS, "config_json"):
            if row[name] is not None and not isinstance(row[name], str):
                row[name] = to_json(row[name], sort_keys=True)
        row["created_at"] = utc(row["created_at"])
        return row


@dataclass(frozen=True)
class QuestionRecord:
    """One finished question as :meth:`RunStore.record_question` takes it (its arguments, for batches)."""

    item: Mapping[str, Any] | Any
    events: Iterable[Mapping[str, Any] | Any] = ()
    calls: Iterable[Mapping[str, Any] | Any] = ()
    snapshot: tuple[str, str, Any, Any] | None = None
    judgments: Iterable[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class PreparedQuestion:
    """A record's rows, checked, before the writer numbers its calls."""

    key: tuple[str, str]
    owner: str
    item: dict[str, Any]
    event_rows: list[dict[str, Any]]
    calls: list[Any]
    snapshot: dict[str, Any] | None
    judgments: list[dict[str, Any]]


def prepare_question(run_id: str, record: QuestionRecord) -> PreparedQuestion:
    """``record``'s rows for run ``run_id``, checked (a bad record raises here, before anything is written)."""
    row = item_row(run_id, record.item)
    question_id = row["question_id"]
    owner = row.get("haystack_id") or question_id  # a shared memory's events are kept once, under its owner
    memory_key = row["memory_key"]
    events = [event_row(event, memory_key, owner, seq) for seq, event in enumerate(record.events)]
    return PreparedQuestion(
        key=(run_id, question_id), owner=owner, item=row,
        event_rows=events,
        calls=list(record.calls),
        snapshot=snapshot_row(*record.snapshot) if record.snapshot is not None else None,
        judgments=[judgment_row(run_id, question_id, j) for j in record.judgments],
    )
