"""Issue 46 items 5 and 6: a memory system can neither take the run down, nor stall it, nor blur its costs.

The drill's plugins: ``SystemExit`` in ``ingest`` aborted the run (rc 3, an 83-line traceback, nothing recorded); a
``context`` with no timeout held the run until two Ctrl-C; ingest calls booked as ``actor`` moved their cost into
answer cost; an identity that changed per call made a new run id at every invocation; ``MemoryContext(messages=())``
sent the actor nothing and the reply was graded; a 50 MB context was accepted.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.reliability.harness import invoke, query
from tests.reliability.hostile_plugins import hostile_plugin  # noqa: F401  # the fixture

pytestmark = pytest.mark.usefixtures("hostile_plugin")
TWO = "dataset.subset.first=2"


def _errors(results: Path) -> list[str]:
    return [row["error"] for row in query(results, "SELECT status, error FROM items") if row["status"] == "error"]


@pytest.mark.parametrize(("mode", "said"), [
    ("exit", "memory=hostile: ingest() raised SystemExit: 3"),
    ("exit_digest", "SystemExit: 4"),
    ("cancel", "memory=hostile: ingest() raised CancelledError without being cancelled"),
    ("empty", "gave the actor no messages"),
    ("no_question", "gave the actor messages without the question"),
])
def test_a_fault_of_the_system_stays_with_its_question(tmp_path: Path, mode: str, said: str) -> None:
    done = invoke(tmp_path, "memory=hostile", f"memory.mode={mode}", TWO)
    assert done.code == 1, done.output[-2000:]
    errors = _errors(tmp_path)
    assert len(errors) == 2 and all(said in error for error in errors), errors
    assert "Traceback" not in done.output
    assert not query(tmp_path, "SELECT * FROM llm_calls WHERE stage = 'actor'"), "an actor was asked regardless"


def test_a_stalled_context_times_out_on_its_question_and_resumes(tmp_path: Path) -> None:
    started = time.monotonic()
    done = invoke(tmp_path, "memory=hostile", "memory.mode=stall", "memory.seconds=30", TWO,
                  "run.question_timeout_s=0.5")
    assert time.monotonic() - started < 20, "the timeout did not stop the stalled calls"
    assert done.code == 1 and all("took longer than run.question_timeout_s=0.5 s" in e for e in _errors(tmp_path))
    resumed = invoke(tmp_path, "memory=hostile", "memory.mode=stall", "memory.seconds=0", TWO,
                     "run.question_timeout_s=0.5")
    assert resumed.code == 0, resumed.output[-2000:]


def test_a_system_cannot_book_its_calls_as_the_actor(tmp_path: Path) -> None:
    done = invoke(tmp_path, "memory=hostile_caller", TWO)
    errors = _errors(tmp_path)
    assert done.code == 1 and errors and all("stage='actor'" in error for error in errors), errors


def test_an_identity_that_changes_between_calls_is_refused_before_the_run(tmp_path: Path) -> None:
    done = invoke(tmp_path, "memory=hostile", "memory.mode=clock", TWO)
    assert done.code == 1 and "identity() gave different values on two calls (keys: call)" in done.flat, done.output
    assert not list((tmp_path / "store").glob("*.duckdb")) if (tmp_path / "store").exists() else True


def test_a_context_over_the_cap_is_an_error_naming_its_size(tmp_path: Path) -> None:
    done = invoke(tmp_path, "memory=hostile", "memory.mode=flood", "memory.words=5000", TWO,
                  "run.max_context_tokens=1000")
    errors = _errors(tmp_path)
    assert done.code == 1 and len(errors) == 2, done.output[-2000:]
    assert all("gave the actor 5,000 tokens of memory, over run.max_context_tokens (1,000)" in e for e in errors)
