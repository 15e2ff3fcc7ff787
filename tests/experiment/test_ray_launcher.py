"""A sweep through Hydra's Ray launcher on a throwaway local Ray cluster lands every row where the command ran.

Needs the ``ray`` extra (``pip install -e '.[ray]'``); skips with the reason when Ray or the launcher plugin is
missing or ``ray start --head`` fails here. The cluster is this test's own: its own temp dir, free ports, and a
marker in its environment by which teardown stops exactly its processes. (``ray stop`` takes neither an address
nor a temp dir and would stop every Ray cluster on the machine.)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from om_eval.experiment.app import _anchor_paths
from om_eval.store import Catalog

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("current", "legacy", "condensed")
QUESTIONS = 7  # the mini set
RAY_CLI = "from ray.scripts.scripts import main; main()"  # `ray` of this interpreter, whatever PATH holds
PORT_OPTIONS = ("--port", "--ray-client-server-port", "--dashboard-port", "--dashboard-agent-listen-port",
                "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port",
                "--node-manager-port", "--object-manager-port")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _env(**extra: str) -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": pythonpath, "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def _marked_pids(marker: str) -> list[int]:
    """Processes whose environment holds ``marker``: the head and everything it started (workers included)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _stop_cluster(marker: str, grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _marked_pids(marker)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            time.sleep(0.25)
            pids = _marked_pids(marker)
        if not pids:
            return


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """The address of a one-node Ray cluster (2 CPUs) started for this module and stopped after it."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    try:
        import hydra_plugins.hydra_ray_launcher.ray_launcher  # noqa: F401  # imported to see that the plugin loads
    except ImportError as error:
        pytest.skip(f"hydra-ray-launcher is not importable (pip install -e '.[ray]'): {error}")
    if not Path("/proc/self/environ").exists():
        pytest.skip("teardown finds the cluster's processes through /proc, which this system lacks")
    # Short: Ray puts unix sockets under the temp dir, and socket paths are limited to ~107 characters.
    temp = Path(tempfile.mkdtemp(prefix="omray-"))
    marker = f"OM_EVAL_RAY_TEST={uuid.uuid4().hex}"
    ports = _free_ports(len(PORT_OPTIONS))
    command = [sys.executable, "-c", RAY_CLI, "start", "--head", "--num-cpus=2", "--disable-usage-stats",
               "--include-dashboard=false", "--node-ip-address=127.0.0.1", f"--temp-dir={temp / 'ray'}",
               *(f"{option}={port}" for option, port in zip(PORT_OPTIONS, ports, strict=True))]
    key, value = marker.split("=")
    try:
        started = subprocess.run(command, cwd=temp, env=_env(**{key: value}), capture_output=True, text=True,
                                 timeout=180)
    except subprocess.TimeoutExpired:
        _stop_cluster(marker)
        shutil.rmtree(temp, ignore_errors=True)
        pytest.skip("ray start --head did not finish within 180 s")
    try:
        if started.returncode != 0:
            lines = [line for line in (started.stderr + started.stdout).splitlines() if line.strip()]
            pytest.skip(f"ray start --head failed here: {lines[-1] if lines else f'exit {started.returncode}'}")
        yield f"127.0.0.1:{ports[0]}"
    finally:
        _stop_cluster(marker)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_three_job_sweep_on_a_local_ray_cluster_lands_every_row(ray_head: str, tmp_path: Path) -> None:
    # The command runs in its own folder with relative paths; Ray's workers start in the head's folder, so rows
    # land here only if the app anchors the paths before dispatch.
    command = [sys.executable, "-m", "om_eval.cli", "run", "-m", "experiment=smoke",
               f"prompt={','.join(VARIANTS)}", "hydra/launcher=ray", f"hydra.launcher.ray.init.address={ray_head}",
               "run.results_dir=results", "run.cache_dir=results/cache", "run.progress=false"]
    done = subprocess.run(command, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    results = tmp_path / "results"
    stores = sorted((results / "store").glob("*.duckdb"))
    assert len(stores) == 3, stores
    with Catalog(results) as catalog:
        runs = catalog.runs()
        items = catalog.items()
    assert len(runs) == 3 and {r["run_id"] for r in runs} == {s.stem for s in stores}
    for run in runs:
        statuses = [i["status"] for i in items if i["run_id"] == run["run_id"]]
        assert statuses == ["done"] * QUESTIONS, (run["run_id"], statuses)
    # Each job's summary comes back through the driver, unfolded by Ray's log deduplication.
    assert done.stdout.count(f"{QUESTIONS} answered, 0 errors") == 3, done.stdout[-3000:]
    assert len(list((results / "hydra" / "multirun").glob("*/*/[012]"))) == 3


def test_a_sweep_anchors_relative_result_paths_before_dispatch() -> None:
    here = "/work/here"
    assert _anchor_paths(["-m", "prompt=a,b", "run.results_dir=res", "++run.cache_dir=res/cache"], here) == [
        "-m", "prompt=a,b", "run.results_dir=/work/here/res", "++run.cache_dir=/work/here/res/cache"]
    assert _anchor_paths(["--multirun", "prompt=a,b"], here) == ["--multirun", "prompt=a,b",
                                                                  "run.results_dir=/work/here/results"]
    kept = ["-m", "run.results_dir=/abs/res", "run.cache_dir=${oc.env:HOME}/c", "run.progress=false"]
    assert _anchor_paths(kept, here) == kept
    assert _anchor_paths(["-m", "run.results_dir=a,b"], here) == ["-m", "run.results_dir=a,b"]
    assert _anchor_paths(["prompt=legacy", "run.results_dir=res"], here) == ["prompt=legacy", "run.results_dir=res"]
