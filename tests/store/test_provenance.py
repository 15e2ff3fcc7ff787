"""Git state and package versions recorded with each run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import duckdb
import pytest

from om_eval.store import git_state, package_versions
from om_eval.store.provenance import PACKAGES


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
                    *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))  # no user config either
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def test_a_clean_repository(repo: Path) -> None:
    sha, dirty = git_state(repo)
    assert re.fullmatch(r"[0-9a-f]{40}", sha) and dirty is False
    assert git_state(repo / ".git" / "..") == (sha, False)


def test_edits_and_untracked_files_make_it_dirty(repo: Path) -> None:
    sha, _ = git_state(repo)
    (repo / "a.txt").write_text("two\n")
    assert git_state(repo) == (sha, True)
    git(repo, "checkout", "--", "a.txt")
    (repo / "new.py").write_text("")
    assert git_state(repo) == (sha, True)


def test_outside_a_repository_or_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert git_state(tmp_path) == (None, None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the path
    assert git_state(tmp_path) == (None, None)


def test_package_versions() -> None:
    versions = package_versions()
    assert set(versions) == set(PACKAGES)
    assert versions["duckdb"] == duckdb.__version__ and versions["om-eval"]
    assert package_versions(["surely-not-installed-om-eval-xyz"]) == {"surely-not-installed-om-eval-xyz": None}
