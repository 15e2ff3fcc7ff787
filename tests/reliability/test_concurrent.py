"""Case 6: two sweeps ``-m experiment=smoke prompt=current,legacy`` at once on one results folder and one cache.

Each configuration has one writer at a time: the second process to reach a configuration either finds it done
or gets ``StoreBusyError`` (reported as a message, exit code 1) and moves on to the next one. A sequential
re-run then finishes whatever is left. In the end every row is there exactly once, every cache entry is intact,
and both runs equal their clean references.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.llm.cache import ResponseCache
from tests.reliability.harness import (
    Outcome,
    assert_consistent,
    assert_matches,
    cache_entries,
    finish,
    invoke,
    outcomes,
    read,
    spawn,
    wait_for,
)

SWEEP = ("-m", "experiment=smoke", "prompt=current,legacy")
LATENCY = 0.08
BUSY = "is being written by another process"


@pytest.mark.parametrize("start", ["together", "staggered"])
def test_two_sweeps_at_once_land_every_row_exactly_once(
    tmp_path: Path, reference: Callable[..., Outcome], start: str
) -> None:
    logs = [tmp_path.parent / f"{tmp_path.name}-sweep{i}.log" for i in (1, 2)]
    first = spawn(tmp_path, *SWEEP, latency=LATENCY, log=logs[0])
    try:
        if start == "staggered":  # the second sweep starts once the first is writing its first configuration
            wait_for(lambda: any((tmp_path / "store").glob("*.duckdb")) or first.poll() is not None, timeout=60)
        second = spawn(tmp_path, *SWEEP, latency=LATENCY, log=logs[1])
        codes = [finish(first), finish(second)]
    finally:
        for child in (first, locals().get("second")):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
    for code, log in zip(codes, logs, strict=True):
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
        assert code == 0 or (code == 1 and BUSY in text), f"exit {code}:\n{text[-3000:]}"

    again = invoke(tmp_path, *SWEEP[2:], multirun=True)  # a sequential re-run finishes what a busy store left
    assert again.code == 0, again.output[-2000:]
    assert "0 errors" in again.flat
    assert_consistent(tmp_path)
    with read(tmp_path) as db:
        found = outcomes(db)
        runs = db.query("SELECT count(*) AS n FROM runs")[0]["n"]
    assert runs == 2 and sorted(found) == ["current", "legacy"]
    assert_matches(found["current"], reference())
    assert_matches(found["legacy"], reference("prompt=legacy"))
    cache = ResponseCache(tmp_path / "cache")
    assert all(cache.contains(key) for key in cache_entries(tmp_path)), "a cache entry was damaged"
    assert not list((tmp_path / "store").glob("*.calls.jsonl")), "a journal was left behind"
