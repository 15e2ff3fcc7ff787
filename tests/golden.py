"""Golden-file assertions: rendered prompts and reports are pinned as text files under tests/golden/.

Regenerate after an intended change with ``OM_EVAL_UPDATE_GOLDEN=1 python -m pytest`` and review the diff.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


REWRITTEN: list[str] = []
"""Golden files rewritten in this session (``tests/conftest.py`` reports them at the end of the run)."""


def assert_golden(name: str, text: str) -> None:
    """Compare ``text`` with the golden file ``name``; with ``OM_EVAL_UPDATE_GOLDEN=1`` rewrite it instead.

    A rewrite never passes silently: each one warns, and the run ends with a line saying how many files were
    rewritten and that nothing was compared. CI refuses the variable.
    """
    path = GOLDEN_DIR / name
    if os.environ.get("OM_EVAL_UPDATE_GOLDEN") == "1":
        if os.environ.get("CI"):
            raise AssertionError("OM_EVAL_UPDATE_GOLDEN=1 is set in CI, where golden files must be checked")
        path.parent.mkdir(parents=True, exist_ok=True)
        changed = not path.exists() or path.read_text(encoding="utf-8") != text
        path.write_text(text, encoding="utf-8")
        REWRITTEN.append(name)
        warnings.warn(f"golden file {name} {'rewritten' if changed else 'unchanged'} (OM_EVAL_UPDATE_GOLDEN=1): "
                      "not compared; review the diff, then run without the variable", stacklevel=2)
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; create it with OM_EVAL_UPDATE_GOLDEN=1")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"rendered text differs from {path}; if intended, regenerate with OM_EVAL_UPDATE_GOLDEN=1"
