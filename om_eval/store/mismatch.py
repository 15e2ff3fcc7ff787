"""Registering a run id again: the stored configuration must be the one asked for, or the writer refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from om_eval.store.files import StoreError
from om_eval.store.records import JSON_RUN_FIELDS

#: Run columns that must agree when a run is registered again (compared when both sides are known).
IDENTITY_FIELDS = ("memory_key", "dataset_sha256", "prompt_hashes")


class ConfigMismatchError(StoreError):
    """A run id is being registered with a configuration other than the one stored under it."""


def check_same_run(path: Path, stored: dict[str, Any], new: dict[str, Any], ignore: set[str]) -> None:
    """Raise :class:`ConfigMismatchError` naming what differs between the ``stored`` and ``new`` run rows."""
    differences = _config_differences(stored["config_json"], new["config_json"], ignore)
    for name in IDENTITY_FIELDS:
        old, now = stored[name], new[name]
        if name in JSON_RUN_FIELDS:
            old, now = (json.loads(v) if v is not None else None for v in (old, now))
        if old is not None and now is not None and old != now:
            differences.append(f"{name}: {_short(old)} -> {_short(now)}")
    if differences:
        shown = "; ".join(differences[:5]) + (f"; and {len(differences) - 5} more" if len(differences) > 5 else "")
        raise ConfigMismatchError(
            f"{path} holds run {stored['run_id']} with a different configuration ({shown}). One run id must mean "
            "one configuration: use another results folder, or delete the file to start the run over.")


def _config_differences(old_text: str | None, new_text: str | None, ignore: set[str]) -> list[str]:
    old, new = (json.loads(t) if t else {} for t in (old_text, new_text))
    if isinstance(old, dict) and isinstance(new, dict):
        old = {k: v for k, v in old.items() if k not in ignore}
        new = {k: v for k, v in new.items() if k not in ignore}
    flat_old, flat_new = _flatten(old), _flatten(new)
    missing = object()
    return [
        f"{key or 'config'}: {_short(flat_old.get(key, missing))} -> {_short(flat_new.get(key, missing))}"
        for key in sorted(set(flat_old) | set(flat_new))
        if flat_old.get(key, missing) != flat_new.get(key, missing)
    ]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _short(value: Any) -> str:
    if not isinstance(value, (str, int, float, bool, type(None), list, dict)):
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
