"""Recording finished questions from an event loop, several to a transaction.

Why: a DuckDB write of one question is mostly fixed cost (each statement and each commit), and a LoCoMo run
finishes a question every few tens of milliseconds, so one transaction per question took a third of the harness's
time. Here each worker still waits until its own question is committed (a question is never reported done
before it is on disk), but the writing happens in a thread, and the questions that finish while one write is
under way go into the next one together.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from om_eval.store.records import QuestionRecord
from om_eval.store.writer import RunStore

__all__ = ["BatchedRecorder"]


class BatchedRecorder:
    """Writes questions of ``run_id`` to ``store`` in batches (:meth:`RunStore.record_questions`).

    Call :meth:`flush` before the store closes: it writes what was handed over but not yet written (after a
    cancellation, for example), so a Ctrl-C loses no finished question.
    """

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._pending: list[tuple[QuestionRecord, asyncio.Future[None]]] = []
        # One thread of its own: writes from the shared pool's several threads each grew their own malloc arena
        # (S runs peaked 60 MB higher).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="om-eval-store")
        self._writing: asyncio.Task[None] | None = None
        self.batches: list[int] = []
        """Size of each write, for benchmarks and tests."""

    async def record(self, record: QuestionRecord) -> None:
        """Return once ``record`` is committed; raise its error when it could not be written.

        A cancelled caller does not take its question back: it is written all the same.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        self._pending.append((record, future))
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._write_pending())
        await asyncio.shield(future)

    async def _write_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            self.batches.append(len(batch))
            try:
                errors = await asyncio.get_running_loop().run_in_executor(
                    self._thread, self.store.record_questions, self.run_id, [r for r, _ in batch])
            except asyncio.CancelledError:
                # The thread still finishes its write; the store's lock orders it before any later one.
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as error:
                errors = [error] * len(batch)
            _settle(batch, errors)

    def flush(self) -> None:
        """Write, here and now, the questions handed over but not yet given to a write; then stop the thread
        (after the write it may be doing)."""
        self._thread.shutdown(wait=True)
        batch, self._pending = self._pending, []
        if not batch:
            return
        self.batches.append(len(batch))
        _settle(batch, self.store.record_questions(self.run_id, [r for r, _ in batch]))


def _settle(batch: list[tuple[QuestionRecord, asyncio.Future[None]]], errors: list[Exception | None]) -> None:
    """Tell each waiting caller how its record fared (a cancelled caller's future is left as it is)."""
    for (_, future), error in zip(batch, errors):
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _retrieve(future: asyncio.Future[Any]) -> None:
    # A caller cancelled while waiting never reads its future's error; reading it here keeps asyncio quiet.
    if not future.cancelled():
        future.exception()
