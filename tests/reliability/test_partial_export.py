"""Case 34.4: a run that is not finished never exports as if it were.

The drill exported a live LoCoMo run (999 of 1,986 answers, exit 0) and killed runs alike. Here the smoke run is
exported while it runs, after a SIGKILL, and after a question failed: each export is refused in one line naming the
run, its counts and ``--partial``, and writes nothing; ``--partial`` writes an archive whose name, ``state.json``
and README say it is partial, and which ``rescore_archive`` calls partial. ``report`` and ``view`` say how many
questions an unfinished run has done; once the run is resumed to the end, neither the export nor the report says
anything of the kind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.llm.providers import register_scripted
from om_eval.report.export import ArchiveError, archive_bytes, rescore_archive
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import invoke, kill, query, spawn, wait_for

LATENCY = 0.4  # seconds per scripted call: the run outlasts an export made after its first answer
COUNTS = re.compile(r"(\d+) of 7 questions done, (\d+) pending, (\d+) error")


def run_id(results: Path) -> str:
    (run,) = query(results, "SELECT run_id FROM runs")
    return run["run_id"]


def done_count(results: Path) -> int:
    if not (results / "store").is_dir():
        return 0
    return query(results, "SELECT count(*) AS n FROM items WHERE status = 'done'")[0]["n"]


def export(results: Path, capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    code = main(["export", "smoke", "--results", str(results), *arguments])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused(code: int, err: str, results: Path, state: str) -> tuple[int, int, int]:
    """One line on stderr naming the run, its state and counts and ``--partial``; nothing written."""
    assert code == 1
    line = err.strip()
    assert "\n" not in line, err
    assert line.startswith(f"om-eval export: run {run_id(results)[:16]} (") and f") {state}: " in line, line
    assert "--partial" in line, line
    assert not list(results.glob("exports/*.zip")), "a refused export wrote an archive"
    found = COUNTS.search(line)
    assert found, line
    done, pending, error = (int(n) for n in found.groups())
    assert done + pending + error == 7
    return done, pending, error


def assert_partial(path: Path, state: str, counts: tuple[int, int, int]) -> None:
    """The archive says it is partial in its name, state.json and README, and re-scores only when asked to."""
    assert path.name.endswith("-partial.zip"), path
    members = archive_bytes(path)
    recorded = json.loads(members["state.json"])
    assert recorded["state"] == state
    assert (recorded["done"], recorded["pending"], recorded["error"]) == counts
    assert b"Partial archive" in members["README.md"]
    assert len(members["answers.jsonl"].splitlines()) == counts[0] + counts[2]
    with pytest.raises(ArchiveError, match=rf"{path.name} is a partial archive: run .* when exported: "
                                           rf"{counts[0]} of 7 questions done"):
        rescore_archive(path)
    assert rescore_archive(path, partial=True)["partial"]["pending"] == counts[1]


def test_a_running_then_killed_run_exports_only_as_partial_and_reports_say_unfinished(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    child = spawn(tmp_path, "experiment=smoke", latency=LATENCY, log=tmp_path / "run.log")
    try:
        assert wait_for(lambda: done_count(tmp_path) >= 1, timeout=60), (tmp_path / "run.log").read_text()[-2000:]
        code, _, err = export(tmp_path, capsys)
        running = child.poll() is None
    finally:
        kill(child)
    assert running, "the run finished before the export; raise LATENCY"
    assert_refused(code, err, tmp_path, "is still running")

    code, _, err = export(tmp_path, capsys)
    done, pending, error = assert_refused(code, err, tmp_path, "is unfinished")
    assert pending > 0 and error == 0

    assert main(["report", "--results", str(tmp_path), "--n-boot", "0"]) == 0
    report = " ".join(capsys.readouterr().out.split())
    assert f"Unfinished: smoke has {done} of 7 questions done ({pending} pending)" in report
    page = tmp_path / "view.html"
    assert main(["view", "--results", str(tmp_path), "--out", str(page), "--n-boot", "0"]) == 0
    capsys.readouterr()
    html = page.read_text()
    assert f"Unfinished: smoke has {done} of 7 questions done ({pending} pending)" in html
    assert f"unfinished: {done} of 7" in html

    code, out, _ = export(tmp_path, capsys, "--partial")
    assert code == 0 and "partial archive written to" in out
    assert_partial(tmp_path / "exports" / f"{run_id(tmp_path)}-partial.zip", "unfinished", (done, pending, 0))

    resumed = invoke(tmp_path)
    assert resumed.code == 0, resumed.output[-3000:]
    code, out, _ = export(tmp_path, capsys)
    path = tmp_path / "exports" / f"{run_id(tmp_path)}.zip"
    assert code == 0 and f"archive written to {path}" in out and "partial" not in out
    assert json.loads(archive_bytes(path)["state.json"])["state"] == "finished"
    assert "partial" not in rescore_archive(path)
    assert main(["report", "--results", str(tmp_path), "--n-boot", "0"]) == 0
    assert "nfinished" not in capsys.readouterr().out


def test_a_run_with_a_failed_question_exports_only_as_partial(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    model = register_scripted("partial-export-actor", ScriptedModel(faults={"actor": ["bad_request"]}, history=None))
    first = invoke(tmp_path, f"models.actor.model={model}")
    assert first.code == 1, first.output[-3000:]

    code, _, err = export(tmp_path, capsys)
    assert assert_refused(code, err, tmp_path, "has failed questions") == (6, 0, 1)

    code, out, _ = export(tmp_path, capsys, "--partial", "--out", str(tmp_path / "mine.zip"))
    assert code == 0 and f"partial archive written to {tmp_path / 'mine-partial.zip'}" in out
    assert not (tmp_path / "mine.zip").exists()
    assert_partial(tmp_path / "mine-partial.zip", "failed", (6, 0, 1))
