"""Golden-file assertions: rendered prompts and reports are pinned as text files under tests/golden/.

Regenerate after an intended change with ``python -m pytest --update-golden`` and review the diff. The option
rewrites the files it reaches and still fails the run when any of them changed, so an update can never pass
unnoticed; run once more without it to see the suite green.
"""

from __future__ import annotations

from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"

UPDATE = False
"""Set by ``tests/conftest.py`` from ``--update-golden``."""
CHANGED: list[str] = []
"""Golden files this run rewrote with new content (the run then fails; ``tests/conftest.py``)."""


def assert_golden(name: str, text: str) -> None:
    """Compare ``text`` with the golden file ``name``; with ``--update-golden`` write it instead (and note a change)."""
    path = GOLDEN_DIR / name
    if UPDATE:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            CHANGED.append(name)
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; create it with: python -m pytest --update-golden")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, (f"rendered text differs from {path}; if intended, rewrite it with "
                              "python -m pytest --update-golden and review the diff")
