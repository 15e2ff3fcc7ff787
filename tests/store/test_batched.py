"""Questions recorded from an event loop in batches: each caller returns once its own question is committed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import pytest

from om_eval.store import RunStore, store_path
from om_eval.store.batched import BatchedRecorder
from om_eval.store.records import QuestionRecord
from tests.store.workers import question, run_info


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(store_path(tmp_path, "r1")) as store:
        store.register_run(run_info("r1"))
        yield store


def record(index: int, **changes: object) -> QuestionRecord:
    item, events, calls, snapshot = question("r1", index)
    return QuestionRecord({**item, **changes}, events, calls, snapshot)


def test_questions_finishing_together_share_a_write_and_each_waits_for_its_commit(store: RunStore) -> None:
    recorder = BatchedRecorder(store, "r1")
    committed: list[set[str]] = []

    async def finish(index: int) -> None:
        await recorder.record(record(index))
        committed.append(store.done_question_ids("r1"))  # on return, the caller's own question is stored

    async def main() -> None:
        await asyncio.gather(*(finish(i) for i in range(1, 8)))

    asyncio.run(main())
    assert store.done_question_ids("r1") == {f"q{i:04d}" for i in range(1, 8)}
    assert all(len(seen) >= 1 for seen in committed)
    assert sum(recorder.batches) == 7 and max(recorder.batches) > 1  # the first write alone, the rest together
    assert store._read("SELECT count(*) FROM llm_calls", [])[0][0] == 7 * 4


def test_a_bad_record_fails_alone_and_the_others_of_its_batch_are_kept(store: RunStore) -> None:
    recorder = BatchedRecorder(store, "r1")
    bad = record(3)
    bad = QuestionRecord(bad.item, bad.events, [{**bad.calls[0], "prompt_tokens": "not a number"}])

    async def main() -> list[object]:
        return await asyncio.gather(*(recorder.record(r) for r in (record(1), record(2), bad, record(4))),
                                    return_exceptions=True)

    outcomes = asyncio.run(main())
    assert [o is None for o in outcomes] == [True, True, False, True]
    assert isinstance(outcomes[2], duckdb.Error)
    assert store.done_question_ids("r1") == {"q0001", "q0002", "q0004"}


def test_a_cancelled_caller_still_gets_its_question_written(store: RunStore) -> None:
    recorder = BatchedRecorder(store, "r1")

    async def main() -> None:
        first = asyncio.ensure_future(recorder.record(record(1)))
        await asyncio.sleep(0)  # the first write is under way before the second question comes
        second = asyncio.ensure_future(recorder.record(record(2)))
        await asyncio.sleep(0)
        first.cancel()
        second.cancel()
        await asyncio.gather(first, second, return_exceptions=True)
        await recorder._writing  # the loop goes on (other workers run): the writes finish without their callers

    asyncio.run(main())
    assert store.done_question_ids("r1") == {"q0001", "q0002"}
    assert recorder.batches == [1, 1]


def test_flush_writes_what_a_cancelled_run_left_before_any_write(store: RunStore) -> None:
    # Ctrl-C: the run is cancelled after a worker handed its question over but before the write began.
    recorder = BatchedRecorder(store, "r1")

    async def main() -> None:
        caller = asyncio.ensure_future(recorder.record(record(1)))
        await asyncio.sleep(0)  # the caller handed its question over; the write is scheduled, not started
        assert recorder._writing is not None and not recorder._writing.done()
        recorder._writing.cancel()
        caller.cancel()
        await asyncio.gather(caller, recorder._writing, return_exceptions=True)
        assert store.done_question_ids("r1") == set()
        recorder.flush()  # as the job does before closing the store

    asyncio.run(main())
    assert store.done_question_ids("r1") == {"q0001"}


def test_a_batch_of_reruns_replaces_earlier_attempts(store: RunStore) -> None:
    for index in (1, 2):
        store.record_question("r1", *question("r1", index, status="error")[:3])
    errors = store.record_questions("r1", [record(1), record(2), record(3)])
    assert errors == [None, None, None]
    assert store.done_question_ids("r1") == {"q0001", "q0002", "q0003"}
    seqs = store._read("SELECT question_id, list(seq ORDER BY seq) FROM llm_calls GROUP BY 1 ORDER BY 1", [])
    assert seqs == [("q0001", list(range(8))), ("q0002", list(range(8))), ("q0003", list(range(4)))]
