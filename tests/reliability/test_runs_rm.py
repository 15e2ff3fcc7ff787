"""Issue 34, item 8: ``om-eval runs rm`` removes every file kept for the run, and says which.

The repro: a killed run left its call journal; ``runs rm`` removed the store file but not the journal (nor the
archive ``om-eval export`` wrote), so the next run of the same configuration moved the deleted run's calls into its
own ledger, where spend and budget counted them.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
from dataclasses import asdict
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.llm.ledger import CallRecord
from om_eval.store import RunStore, store_path
from om_eval.store.removal import run_artefacts
from om_eval.store.writer import INTERRUPTED_ATTEMPT
from tests.reliability.harness import (
    CHILD_TIMEOUT_S,
    assert_consistent,
    invoke,
    kill,
    query,
    spawn,
    wait_for,
)
from tests.store.workers import run_info


def cli(*argv: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(list(argv))
    return code, buffer.getvalue()


def journal_lines(results: Path) -> list[dict]:
    lines = []
    for path in (results / "store").glob("*.calls.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                lines.append(json.loads(line))
    return lines


def test_rm_of_a_killed_run_takes_its_journal_so_a_rerun_counts_none_of_its_calls(tmp_path: Path) -> None:
    child = spawn(tmp_path, "experiment=smoke", "run.concurrency=1", latency=0.1, log=tmp_path.parent / "rm-kill.log")

    def observing() -> bool:  # a question has paid Observer calls journaled and its actor and judge to go
        lines = journal_lines(tmp_path)
        return child.poll() is not None or (bool(lines) and all(line["stage"] == "observer" for line in lines))

    try:
        assert wait_for(observing, timeout=CHILD_TIMEOUT_S, interval=0.005)
    finally:
        kill(child)
    assert child.returncode == -signal.SIGKILL, "the run ended by itself before the kill"
    (journal,) = (tmp_path / "store").glob("*.calls.jsonl")
    (run_id,) = {line["run_id"] for line in journal_lines(tmp_path)}

    code, output = cli("runs", "rm", run_id[:8], "--results", str(tmp_path), "--yes")
    assert code == 0, output
    assert str(journal) in output and str(store_path(tmp_path, run_id)) in output, output
    assert not journal.exists() and not run_artefacts(tmp_path, run_id)

    rerun = invoke(tmp_path)
    assert rerun.code == 0, rerun.output[-2000:]
    assert_consistent(tmp_path)
    recovered = query(tmp_path, "SELECT count(*) AS n FROM llm_calls WHERE error = ?", [INTERRUPTED_ATTEMPT])
    assert recovered[0]["n"] == 0, "calls of the removed run came back into the ledger"


def test_rm_lists_and_removes_exports_and_archives_and_leaves_the_other_run_alone(tmp_path: Path) -> None:
    assert invoke(tmp_path).code == 0
    assert invoke(tmp_path, "judge.parse=mastra").code == 0
    runs = {r["label"]: r["run_id"] for r in query(tmp_path, "SELECT run_id, label FROM runs")}
    gone, kept = runs["smoke"], runs["judge.parse=mastra"]
    for run_id in (gone, kept):
        code, output = cli("export", run_id, "--results", str(tmp_path))
        assert code == 0, output
    # Files another export may have left under the run's id: a cut-short archive and a partial one.
    (tmp_path / "exports" / f"{gone}.zip.partial").write_bytes(b"cut short")
    (tmp_path / "exports" / f"{gone}-partial.zip").write_bytes(b"partial")
    before = run_artefacts(tmp_path, gone)
    assert {path.name for path in before} >= {f"{gone}.duckdb", gone, f"{gone}.zip", f"{gone}.zip.partial",
                                              f"{gone}-partial.zip"}
    kept_files = run_artefacts(tmp_path, kept)

    code, output = cli("runs", "rm", gone[:8], "--results", str(tmp_path), "--yes")
    assert code == 0, output
    listed = {line.strip() for line in output.splitlines()[1:]}
    assert listed == {str(path) for path in before}, output
    assert not run_artefacts(tmp_path, gone)
    assert not any(path.name.startswith(gone) for path in tmp_path.rglob("*")), "a file of the removed run is left"
    assert run_artefacts(tmp_path, kept) == kept_files and all(path.exists() for path in kept_files)


def test_archives_of_another_run_whose_id_starts_the_same_are_not_the_runs(tmp_path: Path) -> None:
    (tmp_path / "exports").mkdir()
    for name in ("abc.zip", "abc-partial.zip", "abcdef.zip", "abcdef.zip.partial", "abc"):
        (tmp_path / "exports" / name).write_bytes(b"")
    assert sorted(path.name for path in run_artefacts(tmp_path, "abc")) == ["abc-partial.zip", "abc.zip"]


def test_a_journal_beside_no_run_file_is_not_moved_into_a_new_run(tmp_path: Path) -> None:
    # What an older `runs rm` left: the journal of a deleted run file. A new file of the same id must not take it.
    path = store_path(tmp_path, "r1")
    journal = path.with_name(path.name + ".calls.jsonl")
    journal.parent.mkdir(parents=True)
    record = CallRecord("observer", "gpt-4o", 100, 10, False, 0.5, 0, 0.25, cache_key="k1", started_at=1.0)
    journal.write_text(json.dumps({**asdict(record), "run_id": "r1", "question_id": "q0001"}) + "\n")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        assert store.recovered_calls == 0 and store.spent_usd("r1") == 0
    assert not journal.exists()


def test_rm_names_the_archives_written_elsewhere_and_leaves_them(tmp_path: Path) -> None:
    results, elsewhere = tmp_path / "results", tmp_path / "shared"
    assert invoke(results).code == 0
    (run_id,) = [r["run_id"] for r in query(results, "SELECT run_id FROM runs")]
    for name in ("mine.zip", "mine.zip"):  # exported twice to one place: named once
        code, output = cli("export", run_id, "--results", str(results), "--out", str(elsewhere / name))
        assert code == 0, output
    code, output = cli("export", run_id, "--results", str(results))  # the default place is the run's own
    assert code == 0, output

    code, output = cli("runs", "rm", run_id[:8], "--results", str(results), "--yes")
    assert code == 0, output
    kept = output.split("kept, written elsewhere", 1)[1].splitlines()[1:]
    assert [line.strip() for line in kept] == [str((elsewhere / "mine.zip").resolve())], output
    assert (elsewhere / "mine.zip").is_file(), "an archive the user put elsewhere was deleted"
    assert not any(path.name.startswith(run_id) for path in results.rglob("*")), "a file of the removed run is left"


def test_rm_names_what_it_leaves_and_only_that(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert invoke(results).code == 0
    (run_id,) = [r["run_id"] for r in query(results, "SELECT run_id FROM runs")]
    inside = results / "runs" / run_id / "copy.zip"  # goes with the run's folder
    beside = results / "exports" / "copy.zip"  # under exports, but not named by the run's id: stays
    for out in (inside, beside):
        code, output = cli("export", run_id, "--results", str(results), "--out", str(out))
        assert code == 0, output
    # What a killed export leaves: atomic_writer's temporary file, named after the archive.
    (results / "exports" / f".{run_id}.zip.host.1.ab.tmp").write_bytes(b"cut short")

    code, output = cli("runs", "rm", run_id[:8], "--results", str(results), "--yes")
    assert code == 0, output
    kept = [line.strip() for line in output.split("kept, written elsewhere", 1)[1].splitlines()[1:]]
    assert kept == [str(beside.resolve())] and beside.is_file() and not inside.exists(), output
    assert not any(run_id in path.name for path in results.rglob("*")), "a file of the removed run is left"


def test_an_export_elsewhere_from_a_read_only_results_folder_still_succeeds(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    assert invoke(results).code == 0
    real_open = Path.open

    def read_only(self: Path, mode: str = "r", *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if self.name.endswith(".elsewhere.txt") and "a" in mode:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return real_open(self, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", read_only)
    code, output = cli("export", "smoke", "--results", str(results), "--out", str(tmp_path / "mine.zip"))
    assert code == 0 and (tmp_path / "mine.zip").is_file(), output
