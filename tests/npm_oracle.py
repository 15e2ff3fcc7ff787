"""Installing pinned npm packages once and running a Node script of ours over a batch of cases.

Shared by the differential tests (the Mastra helpers, tokenx): each installs its exact pins into a folder
(``$OM_EVAL_CACHE_DIR/<name>`` when set, so later sessions reuse it; else the session's temp folder), built aside
and moved in, and skips with the reason when node, npm or the registry is missing. Nothing of the packages is
copied into the project: they are only executed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

INSTALL_TIMEOUT_S = 150
#: Generous: a 200-conversation engine cell takes Node about 100 s on a quiet 2-core machine, longer on a busy one.
RUN_TIMEOUT_S = 600
#: ``OM_EVAL_DIFFERENTIAL=full`` compares the engine cells at their full size (about 12 minutes more on 2 cores).
FULL_SIZE = os.environ.get("OM_EVAL_DIFFERENTIAL") == "full"


def differential_size(full: int) -> int:
    """Conversations an engine cell compares: ``full`` under ``OM_EVAL_DIFFERENTIAL=full``, else a fifth of it (the
    first ones of the same seeded sequence), so the whole suite stays well within CI's time."""
    return full if FULL_SIZE else max(1, full // 5)
PINS_FILE = "om-eval-pins.json"


@dataclass(frozen=True)
class NodeFolder:
    """A folder holding installed packages, where our scripts run with Node."""

    node: str
    folder: Path
    install_seconds: float

    def run(self, script: str, cases: Any, *, name: str = "om_eval_oracle.mjs", tz: str = "UTC") -> Any:
        """Run ``script`` (an ES module reading JSON on stdin, writing JSON on stdout) on ``cases``; the same script
        on the same cases in the same folder runs once per test process (two cells may compare one Node run with two
        om-eval settings)."""
        data = json.dumps(cases).encode("ascii")
        key = hashlib.sha256(b"\0".join([str(self.folder).encode(), script.encode(), data, tz.encode()])).hexdigest()
        if (kept := _RUNS.get(key)) is not None:
            return json.loads(kept)
        path = self.folder / name
        path.write_text(script, encoding="utf-8")
        completed = subprocess.run(
            [self.node, str(path)], input=data, capture_output=True, cwd=self.folder,
            env={**os.environ, "TZ": tz}, timeout=RUN_TIMEOUT_S, check=False,
        )
        if completed.returncode != 0:
            raise AssertionError(f"the Node oracle failed: {completed.stderr.decode(errors='replace')[-2000:]}")
        _RUNS[key] = completed.stdout
        return json.loads(completed.stdout.decode("utf-8"))


#: Node's output by script, cases and folder, kept as bytes (each caller gets its own parsed copy).
_RUNS: dict[str, bytes] = {}


def oracle_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    base = os.environ.get("OM_EVAL_CACHE_DIR")
    return Path(base) / name if base else tmp_path_factory.getbasetemp() / name


def installed(folder: Path, packages: dict[str, str]) -> bool:
    """Whether ``folder`` holds exactly these pins (each package at its pinned version)."""
    stamp = folder / PINS_FILE
    if not stamp.is_file() or json.loads(stamp.read_text()) != packages:
        return False
    for package, version in packages.items():
        manifest = folder / "node_modules" / package / "package.json"
        if not manifest.is_file() or json.loads(manifest.read_text())["version"] != version:
            return False
    return True


def install(folder: Path, packages: dict[str, str], npm: str) -> None:
    """Install ``packages`` into ``folder`` (built aside, then moved in); skip the calling tests on failure."""
    what = ", ".join(f"{p}@{v}" for p, v in packages.items())
    staging = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    manifest = {"name": f"om-eval-{folder.name}", "private": True, "type": "module", "dependencies": packages}
    (staging / "package.json").write_text(json.dumps(manifest, indent=2))
    command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier",
               "--loglevel=error", "--fetch-retries=1", "--fetch-timeout=60000"]
    try:
        completed = subprocess.run(command, cwd=staging, capture_output=True, timeout=INSTALL_TIMEOUT_S, check=False,
                                   text=True)
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.skip(f"npm install of {what} took over {INSTALL_TIMEOUT_S} s (registry unreachable?)")
    if completed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        lines = [line for line in (completed.stderr or completed.stdout).splitlines() if line.strip() != "npm error"]
        pytest.skip(f"npm install of {what} failed (no registry access?): {' | '.join(lines[:2])}")
    (staging / PINS_FILE).write_text(json.dumps(packages))
    shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:  # another session finished the same install first
        shutil.rmtree(staging, ignore_errors=True)
        if not installed(folder, packages):
            raise


def node_folder(tmp_path_factory: pytest.TempPathFactory, name: str, packages: dict[str, str]) -> NodeFolder:
    """A folder with ``packages`` installed (once), or a skip saying why it cannot be had."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed to run {', '.join(packages)} as the reference")
    folder = oracle_folder(tmp_path_factory, name)
    started = time.monotonic()
    if not installed(folder, packages):
        folder.parent.mkdir(parents=True, exist_ok=True)
        # One installer at a time per folder: under pytest -n another worker may be installing it, or running from it.
        with open(folder.with_name(f"{folder.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not installed(folder, packages):
                install(folder, packages, npm)
    return NodeFolder(node, folder, time.monotonic() - started)
