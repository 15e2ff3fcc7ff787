"""``om-eval runs list|rm``: a run can be removed (store file, sidecars, exports), the cache and other runs' memories
stay, and a run being written is refused."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.store import RunStore, StoreBusyError
from om_eval.store.removal import remove_run
from tests.reliability.harness import invoke, query


def cli(*argv: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(list(argv))
    return code, buffer.getvalue()


def test_rm_deletes_one_run_and_keeps_what_others_share(tmp_path: Path) -> None:
    assert invoke(tmp_path).code == 0
    assert invoke(tmp_path, "judge.parse=mastra").code == 0
    kept, gone = [r["run_id"] for r in query(tmp_path, "SELECT run_id, label FROM runs ORDER BY label DESC")]
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*.json"))
    assert cached

    code, listed = cli("runs", "list", "--results", str(tmp_path))
    assert code == 0 and kept[:16] in listed and gone[:16] in listed and "7 done" in listed

    code, output = cli("runs", "rm", gone[:8], "--results", str(tmp_path), "--yes")
    assert code == 0, output
    assert [r["run_id"] for r in query(tmp_path, "SELECT run_id FROM runs")] == [kept]
    assert not list(tmp_path.glob(f"store/{gone}*")) and not (tmp_path / "runs" / gone).exists()
    assert (tmp_path / "runs" / kept).is_dir()
    assert query(tmp_path, "SELECT count(*) AS n FROM memory_snapshots")[0]["n"] == 7, "the kept run's memories"
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*.json")) == cached


def test_rm_refuses_a_run_being_written_and_unknown_runs(tmp_path: Path) -> None:
    assert invoke(tmp_path).code == 0
    (run_id,) = [r["run_id"] for r in query(tmp_path, "SELECT run_id FROM runs")]
    with RunStore(tmp_path / "store" / f"{run_id}.duckdb"), pytest.raises(StoreBusyError, match="being written"):
        remove_run(tmp_path, run_id)
    assert (tmp_path / "store" / f"{run_id}.duckdb").exists()
    code, output = cli("runs", "rm", "no-such-run", "--results", str(tmp_path), "--yes")
    assert code == 2 and "no run matches" in output
