"""A small, deeply nested file is refused at once, in little memory (issue 20 case 3).

Before: ijson kept one path string per nesting level while building a record, so an 80 KB file of brackets
peaked at 3.95 GB and a 200 KB one was OOM-killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from om_eval.data.loader import DatasetValidationError, load_dataset
from om_eval.data.reading import MAX_JSON_DEPTH
from tests.reliability.harness import REPO, child_env

DEPTH = 100_000  # a 200 KB file


def _deep_files(folder: Path) -> dict[str, Path]:
    nested = "[" * DEPTH + "]" * DEPTH
    record = {"question_id": "q", "question_type": "multi-session", "question": "?", "answer": "@",
              "question_date": "2023/05/20 (Sat) 02:21", "haystack_dates": [], "haystack_session_ids": [],
              "haystack_sessions": [], "answer_session_ids": []}
    files = {
        "array": nested,
        "inside a record": "[" + json.dumps(record).replace('"@"', nested) + "]",
        "json lines": json.dumps(record).replace('"@"', nested) + "\n{}\n",
    }
    paths = {}
    for name, text in files.items():
        path = paths[name] = folder / f"{name.replace(' ', '_')}.json"
        path.write_text(text)
    return paths


@pytest.mark.parametrize("kind", ["array", "inside a record", "json lines"])
def test_deep_nesting_is_a_clear_error(tmp_path: Path, kind: str) -> None:
    path = _deep_files(tmp_path)[kind]
    with pytest.raises(DatasetValidationError, match="nests"):
        load_dataset(path)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc (Linux only)")
def test_refusing_a_deep_file_takes_little_memory(tmp_path: Path) -> None:
    path = _deep_files(tmp_path)["inside a record"]
    probe = (
        "import sys\n"
        "from om_eval.data.loader import load_dataset\n"
        "try:\n    load_dataset(sys.argv[1])\nexcept Exception as error:\n    print(type(error).__name__)\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking test process.
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) // 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(path)], cwd=REPO, env=child_env(), capture_output=True,
                          text=True, timeout=60, check=True)
    error, peak_mb = done.stdout.split()
    assert error == "DatasetValidationError"
    assert int(peak_mb) < 400, f"refusing a 200 KB file peaked at {peak_mb} MB"


def test_the_depth_a_real_record_needs_is_allowed(tmp_path: Path) -> None:
    from om_eval.data import mini_fixture_path

    assert MAX_JSON_DEPTH > 5
    assert len(load_dataset(mini_fixture_path())) > 0
