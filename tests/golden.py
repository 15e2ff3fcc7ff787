"""Golden-file assertions: rendered prompts and reports are pinned as text files under tests/golden/.

Regenerate after an intended change with ``OM_EVAL_UPDATE_GOLDEN=1 python -m pytest`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    """Compare ``text`` with the golden file ``name``; with ``OM_EVAL_UPDATE_GOLDEN=1`` rewrite it instead.

    A rewrite never passes silently: the test is reported as skipped, naming the file, so a run with the variable
    left set shows its skips instead of a green bar that checked nothing. CI refuses the variable.
    """
    path = GOLDEN_DIR / name
    if os.environ.get("OM_EVAL_UPDATE_GOLDEN") == "1":
        if os.environ.get("CI"):
            raise AssertionError("OM_EVAL_UPDATE_GOLDEN=1 is set in CI, where golden files must be checked")
        path.parent.mkdir(parents=True, exist_ok=True)
        changed = not path.exists() or path.read_text(encoding="utf-8") != text
        path.write_text(text, encoding="utf-8")
        pytest.skip(f"golden file {path.name} {'rewritten' if changed else 'unchanged'} (OM_EVAL_UPDATE_GOLDEN=1); "
                    "review the diff, then run without the variable")
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; create it with OM_EVAL_UPDATE_GOLDEN=1")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"rendered text differs from {path}; if intended, regenerate with OM_EVAL_UPDATE_GOLDEN=1"
