"""Issue 34, item 9: a full disk, a read-only folder or a refused permission is one line, not a traceback.

Each case checks the promise: exit status 1, one line that names the path and says what to do, no traceback, and
nothing already saved lost or half-written (the store resumes to the clean run's outcome, a page or an export of
before stays whole).

A full disk is simulated where the write happens: DuckDB's own error at a commit (what a full disk gave in the
drill), an ``OSError(ENOSPC)`` at a file write. A read-only folder is made with ``chmod`` when the tests run as an
ordinary user; root writes through ``chmod``, so there the refusal is simulated at the write point instead.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import pathlib
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from om_eval.cli import main
from om_eval.common.disk import disk_problem
from om_eval.experiment import app as app_module
from om_eval.experiment import job as job_module
from om_eval.llm.client import LLMCallError
from om_eval.store import removal
from om_eval.store.writer import RunStore
from tests.reliability.harness import Invocation, Outcome, assert_consistent, assert_matches, invoke, outcome, query

ROOT = os.geteuid() == 0


def cli(*argv: str) -> Invocation:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(list(argv))
    return Invocation(code, buffer.getvalue())


def one_line(result: Invocation, command: str) -> str:
    """The command's one error line (and no traceback)."""
    assert result.code == 1, result.output[-3000:]
    assert "Traceback" not in result.output, result.output[-3000:]
    lines = [line for line in result.output.splitlines() if line.startswith(f"om-eval {command}:")]
    assert len(lines) == 1, result.output[-3000:]
    return lines[0]


@contextlib.contextmanager
def read_only(folder: Path, monkeypatch: pytest.MonkeyPatch, simulate: Callable[[], None]) -> Iterator[str]:
    """``folder`` refuses writes while the block runs; yields the reason the message should give.

    An ordinary user gets a real ``chmod``; root, which writes through it, gets ``simulate()`` (a monkeypatch at
    the write point raising ``EROFS``).
    """
    if ROOT:
        simulate()
        yield "read-only"
        return
    mode = folder.stat().st_mode
    folder.chmod(0o555)
    try:
        yield "permission denied"
    finally:
        folder.chmod(mode)


def no_space(path: object) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


# -- om-eval run ------------------------------------------------------------------------------------------------


def test_a_full_disk_at_a_commit_stops_the_run_in_one_line_and_it_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: Callable[..., Outcome]
) -> None:
    original, writes = RunStore._write, []

    def full_at_the_fourth(self: RunStore, con: duckdb.DuckDBPyConnection, run_id: str, batch: list) -> None:
        writes.append(len(batch))
        if len(writes) >= 4:  # DuckDB's own words when its WAL cannot grow
            logging.getLogger("om_eval.store").warning("a record for the log file the disk cannot take")
            raise duckdb.TransactionException(f'TransactionContext Error: Failed to commit: Could not write file '
                                              f'"{self.path}.wal": No space left on device')
        original(self, con, run_id, batch)

    real_emit = logging.FileHandler.emit

    def full_log_file(handler: logging.FileHandler, record: logging.LogRecord) -> None:
        if not handler.baseFilename.startswith(str(tmp_path)):  # Hydra's job log lies in the results folder too
            return real_emit(handler, record)
        try:  # as logging's own emit fails on a full disk
            raise no_space(handler.baseFilename)
        except OSError:
            handler.handleError(record)

    monkeypatch.setattr(RunStore, "_write", full_at_the_fourth)
    monkeypatch.setattr(logging.FileHandler, "emit", full_log_file)
    result = invoke(tmp_path)
    line = one_line(result, "run")
    assert f"{tmp_path}/store/" in line and ".wal" in line and "disk is full" in line and "free some space" in line
    assert "Logging error" not in result.output and "a record for the log file" in result.output, result.output
    assert query(tmp_path, "SELECT count(*) AS n FROM items")[0]["n"] == 3, "the questions committed before stay"

    monkeypatch.setattr(RunStore, "_write", original)
    monkeypatch.setattr(logging.FileHandler, "emit", real_emit)
    resumed = invoke(tmp_path)
    assert resumed.code == 0 and "3 already done" in resumed.flat, resumed.output[-2000:]
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference())


def test_a_full_disk_while_exporting_keeps_the_exports_of_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    assert invoke(tmp_path).code == 0
    (metrics,) = (tmp_path / "runs").glob("*/metrics.json")
    before = metrics.read_bytes()

    def full(path: object, data: object, **kwargs: object) -> Path:
        raise no_space(path)

    monkeypatch.setattr(job_module, "atomic_write", full)
    line = one_line(invoke(tmp_path), "run")
    assert str(metrics) in line and "disk is full" in line
    assert metrics.read_bytes() == before and json.loads(before)


def test_a_read_only_results_folder_is_refused_before_hydra_writes_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke(tmp_path).code == 0
    (store,) = (tmp_path / "store").glob("*.duckdb")
    stamp = store.stat().st_mtime_ns
    folders = sorted(p for p in tmp_path.rglob("*") if p.is_dir())

    def simulate() -> None:
        def refuse(*args: object, dir: object = None, **kwargs: object) -> str:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), f"{dir}/.om-eval-write-check-x")

        monkeypatch.setattr(app_module.tempfile, "mkdtemp", refuse)

    with read_only(tmp_path, monkeypatch, simulate) as reason:
        line = one_line(invoke(tmp_path), "run")
    assert line.startswith(f"om-eval run: cannot write {tmp_path}:") and reason in line and "nothing was run" in line
    assert "run.results_dir" in line
    assert store.stat().st_mtime_ns == stamp and sorted(p for p in tmp_path.rglob("*") if p.is_dir()) == folders


# -- om-eval view, export, runs rm ------------------------------------------------------------------------------


def test_a_full_disk_while_writing_the_view_keeps_the_page_of_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    assert invoke(tmp_path).code == 0
    page = tmp_path / "report.html"
    page.write_text("the page of before")
    real_write = pathlib.Path.write_text

    def half_then_full(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.parent == tmp_path:
            real_write(self, data[: len(data) // 2])  # a full disk takes half the page, then refuses the rest
            raise no_space(self)
        return real_write(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pathlib.Path, "write_text", half_then_full)
    line = one_line(cli("view", "--results", str(tmp_path)), "view")
    assert line == (f"om-eval view: cannot write {page}: the disk is full; free some space there (or choose another "
                    "--out) and run the same command again")
    assert page.read_text() == "the page of before"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["report.html"], "a partial page is left"


def test_export_to_a_read_only_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert invoke(tmp_path).code == 0
    real_mkdir = pathlib.Path.mkdir

    def simulate() -> None:
        def refuse(self: Path, *args: object, **kwargs: object) -> None:
            if self == tmp_path / "exports":
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
            real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(pathlib.Path, "mkdir", refuse)

    with read_only(tmp_path, monkeypatch, simulate) as reason:
        line = one_line(cli("export", "smoke", "--results", str(tmp_path)), "export")
    assert f"cannot write {tmp_path}" in line and reason in line and "--out" in line
    assert not (tmp_path / "exports").exists()


def test_a_full_disk_while_exporting_keeps_the_archive_of_before_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke(tmp_path).code == 0
    assert cli("export", "smoke", "--results", str(tmp_path)).code == 0
    (archive,) = (tmp_path / "exports").iterdir()
    before = archive.read_bytes()
    real_writestr = zipfile.ZipFile.writestr

    def full_after_one(self: zipfile.ZipFile, name: object, data: object, *args: object, **kwargs: object) -> None:
        if self.namelist():  # the first member fits, the second finds the disk full
            raise no_space(tmp_path / "exports")
        real_writestr(self, name, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full_after_one)
    line = one_line(cli("export", "smoke", "--results", str(tmp_path)), "export")
    assert "the disk is full" in line
    assert list((tmp_path / "exports").iterdir()) == [archive] and archive.read_bytes() == before


def test_runs_rm_on_a_read_only_folder_is_one_line_and_removes_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert invoke(tmp_path).code == 0
    (store,) = (tmp_path / "store").glob("*.duckdb")

    def simulate() -> None:
        def refuse(path: Path) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

        monkeypatch.setattr(removal, "_delete", refuse)

    with read_only(tmp_path / "store", monkeypatch, simulate) as reason:
        line = one_line(cli("runs", "rm", "smoke", "--results", str(tmp_path), "--yes"), "runs rm")
    assert f"cannot write {tmp_path}/store/" in line and reason in line
    assert store.exists() and query(tmp_path, "SELECT count(*) AS n FROM items")[0]["n"] == 7


# -- telling these errors from others ---------------------------------------------------------------------------


def test_disk_problems_are_told_from_other_errors() -> None:
    full = disk_problem(no_space("/data/results/store/x.duckdb.wal"))
    assert full is not None and full.errno == errno.ENOSPC and full.path == "/data/results/store/x.duckdb.wal"
    read_only_db = disk_problem(duckdb.IOException('Cannot open file "/ro/x.duckdb": Read-only file system'))
    assert read_only_db is not None and read_only_db.errno == errno.EROFS and read_only_db.path == "/ro/x.duckdb"
    try:
        try:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/etc/results")
        except OSError as error:
            raise RuntimeError("the job failed") from error
    except RuntimeError as wrapped:
        chained = disk_problem(wrapped)
    assert chained is not None and chained.errno == errno.EACCES and chained.path == "/etc/results"
    # A provider refusing a call says "permission denied" too: not the disk's.
    refused = LLMCallError("actor", "openai/gpt-4o", RuntimeError("PermissionDeniedError: Permission denied"), 0)
    assert disk_problem(refused) is None
    assert disk_problem(FileNotFoundError(errno.ENOENT, "No such file or directory", "x")) is None
    assert disk_problem(duckdb.ConversionException("Permission denied is not a number")) is None


def test_a_command_line_hydra_rejects_leaves_no_results_folder(tmp_path: Path) -> None:
    fresh = tmp_path / "new" / "results"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer), pytest.raises(SystemExit) as ended:
        main(["run", "memory=no_such_memory", f"run.results_dir={fresh}", "run.progress=false"])
    assert ended.value.code != 0 and "no_such_memory" in buffer.getvalue()
    assert not (tmp_path / "new").exists()
