"""The package's layers hold: commands on top, the engine and common helpers at the bottom, no import cycles.

The contracts are in ``pyproject.toml`` (``[tool.importlinter]``); import-linter reads every import, those inside
functions too, so a cycle cannot hide behind a late import.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)  # the contracts name packages; grimp finds them from here
    code = lint_imports(config_filename=str(config), no_cache=True, no_logo=True)
    return code, capsys.readouterr().out


def test_the_import_contracts_are_kept(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _lint(ROOT / "pyproject.toml", monkeypatch, capsys)
    assert code == 0, out
    assert "3 kept, 0 broken" in out


def test_a_layer_upside_down_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "upside_down.toml"
    config.write_text('[tool.importlinter]\nroot_package = "om_eval"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "engine above the commands"\ntype = "layers"\nlayers = ["om_eval.om", "om_eval.cli"]\n')
    code, out = _lint(config, monkeypatch, capsys)
    assert code != 0 and "om_eval.cli is not allowed to import om_eval.om" in out


def test_the_package_top_holds_only_its_init() -> None:
    top = sorted(p.name for p in (ROOT / "om_eval").glob("*.py"))
    assert top == ["__init__.py"]
