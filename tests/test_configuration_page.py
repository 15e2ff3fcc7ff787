"""docs/configuration.md's group table names every config file under om_eval/configs/, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "om_eval" / "configs"


def _table_rows() -> dict[str, str]:
    """The group table's rows: ``group`` (as written before ``=``) -> the row's last cell."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = text.split("| group | chooses | files |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].strip("`").split("=")[0]] = cells[-1]
    return rows


def test_every_config_group_is_in_the_table_with_exactly_its_files() -> None:
    rows = _table_rows()
    groups = {p.name for p in CONFIGS.iterdir() if p.is_dir() and p.name not in ("hydra", "model", "__pycache__")}
    assert {g for g in rows if "@" not in g and "/" not in g} == groups
    for group in groups:
        files = {p.stem for p in (CONFIGS / group).glob("*.yaml")}
        assert set(re.findall(r"`([^`]+)`", rows[group])) == files, group
    launchers = {p.stem for p in (CONFIGS / "hydra" / "launcher").glob("*.yaml")}
    assert launchers <= set(re.findall(r"`([^`]+)`", rows["hydra/launcher"]))


def test_the_model_row_names_every_role_a_run_can_set() -> None:
    config = (CONFIGS / "config.yaml").read_text(encoding="utf-8")
    roles = set(re.findall(r"model@models\.(\w+):", config))
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    row = page.split("| `model@models.<role>=` |", 1)[1].splitlines()[0]
    assert roles and roles == set(re.findall(r"`(\w+)`", row.split("|")[0]))
