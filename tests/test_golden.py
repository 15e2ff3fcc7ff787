"""``--update-golden`` rewrites golden files and still fails the run when one changed; without it they are compared."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import tests.golden as golden
from tests.conftest import pytest_sessionfinish


@pytest.fixture
def golden_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path)
    monkeypatch.setattr(golden, "CHANGED", [])
    return tmp_path


def test_update_writes_changed_files_and_fails_the_run(golden_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (golden_dir / "same.txt").write_text("kept", encoding="utf-8")
    monkeypatch.setattr(golden, "UPDATE", True)
    golden.assert_golden("same.txt", "kept")
    golden.assert_golden("new.txt", "fresh")
    assert (golden_dir / "new.txt").read_text(encoding="utf-8") == "fresh" and golden.CHANGED == ["new.txt"]
    session = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    pytest_sessionfinish(session, 0)  # type: ignore[arg-type]  # a stand-in for pytest's Session
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED


def test_an_update_that_changes_nothing_passes(golden_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (golden_dir / "same.txt").write_text("kept", encoding="utf-8")
    monkeypatch.setattr(golden, "UPDATE", True)
    golden.assert_golden("same.txt", "kept")
    session = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    pytest_sessionfinish(session, 0)  # type: ignore[arg-type]  # a stand-in for pytest's Session
    assert session.exitstatus == pytest.ExitCode.OK


def test_without_the_option_a_difference_fails(golden_dir: Path) -> None:
    (golden_dir / "same.txt").write_text("kept", encoding="utf-8")
    golden.assert_golden("same.txt", "kept")
    with pytest.raises(AssertionError, match="--update-golden"):
        golden.assert_golden("same.txt", "changed")
    with pytest.raises(AssertionError, match="missing"):
        golden.assert_golden("absent.txt", "x")
