"""Where a run's numbers came from: the code's git state and the versions of the packages that shape results."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

#: Packages whose version a run records.
PACKAGES = ("om-eval", "litellm", "duckdb", "hydra-core", "tiktoken", "llama-cpp-python", "datasets", "pandas",
            "matplotlib")


def git_state(path: Path | str = ".", *, timeout: float = 10.0) -> tuple[str | None, bool | None]:
    """``(commit sha, dirty)`` of the git work tree containing ``path``.

    Dirty means ``git status --porcelain`` lists anything (untracked files included, ignored ones not).
    Either part is None when it cannot be known: not a repository, no commit yet, git missing or too slow.
    """
    head = _git(path, ["rev-parse", "--verify", "HEAD"], timeout)
    status = _git(path, ["status", "--porcelain"], timeout)
    sha = (head.strip() or None) if head is not None else None
    dirty = bool(status.strip()) if status is not None else None
    return sha, dirty


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(path: Path | str, args: list[str], timeout: float) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=timeout,
                                check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None
