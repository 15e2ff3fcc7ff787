"""``benchmarks/locomo.py --keep DIR`` keeps its results folder; without it the folder is temporary."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "locomo.py"


def _script():
    spec = importlib.util.spec_from_file_location("locomo_benchmark_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


def test_keep_runs_in_the_given_folder_and_leaves_it(tmp_path: Path) -> None:
    script = _script()
    keep = tmp_path / "kept" / "locomo"
    with script._results_folder(keep) as folder:
        (Path(folder) / "store").mkdir()
    assert Path(folder) == keep.resolve() and (keep / "store").is_dir()


def test_without_keep_the_folder_is_deleted() -> None:
    with _script()._results_folder(None) as folder:
        assert Path(folder).is_dir()
    assert not Path(folder).exists()
