"""Golden-file assertions: rendered prompts and reports are pinned as text files under tests/golden/.

Regenerate after an intended change with ``OM_EVAL_UPDATE_GOLDEN=1 python -m pytest`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN_DIR / name
    if os.environ.get("OM_EVAL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; create it with OM_EVAL_UPDATE_GOLDEN=1")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"rendered text differs from {path}; if intended, regenerate with OM_EVAL_UPDATE_GOLDEN=1"
