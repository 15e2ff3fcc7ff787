"""Registering a run id again: the stored configuration must be the one asked for, or the writer refuses.

A run stored before a setting existed lacks that setting. Asked again with the setting where the run id leaves it
out (its pinned value, or any value of a setting that never enters the id), it is the same run: the run id rule
(:data:`~om_eval.common.run_identity.RUN_ID_RULE`) says so, so the comparison asks that rule rather than a list of its
own, and the writer stores the filled-in configuration. A setting the stored run lacks at any other value, or one
it has at another value, is another configuration and refused. Settings the rule leaves out at any value (the
preset's name, a model's price or call limits, a judge panel) may differ: the run asked for is the run stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from om_eval.common.identity import LEFT_OUT, IdentityRule
from om_eval.common.run_identity import RUN_ID_RULE
from om_eval.store.files import StoreError
from om_eval.store.records import JSON_RUN_FIELDS

#: Run columns that must agree when a run is registered again (compared when both sides are known).
IDENTITY_FIELDS = ("memory_key", "dataset_sha256", "prompt_hashes")


_MISSING = object()


class ConfigMismatchError(StoreError):
    """A run id is being registered with a configuration other than the one stored under it."""


def check_same_run(path: Path, stored: dict[str, Any], new: dict[str, Any], ignore: set[str], *,
                   rule: IdentityRule = RUN_ID_RULE) -> None:
    """Raise :class:`ConfigMismatchError` naming what differs between the ``stored`` and ``new`` run rows.

    A setting missing from the stored configuration is no difference while ``rule`` leaves it out of the identity at
    its new value (see the module docstring).
    """
    differences = _config_differences(stored["config_json"], new["config_json"], ignore, rule)
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


def _config_differences(old_text: str | None, new_text: str | None, ignore: set[str],
                        rule: IdentityRule) -> list[str]:
    old, new = (json.loads(t) if t else {} for t in (old_text, new_text))
    if isinstance(old, dict) and isinstance(new, dict):
        # What the identity never reads differs freely: the preset's name, a price, a call's limits, a judge panel.
        old = _identity_part({k: v for k, v in old.items() if k not in ignore}, rule)
        new = _identity_part({k: v for k, v in new.items() if k not in ignore}, rule)
    flat_old, flat_new = _flatten(old), _flatten(new)
    return [
        f"{key or 'config'}: {_short(flat_old.get(key, _MISSING))} -> {_short(flat_new.get(key, _MISSING))}"
        for key in sorted(set(flat_old) | set(flat_new))
        if flat_old.get(key, _MISSING) != flat_new.get(key, _MISSING)
        and not (key not in flat_old and isinstance(new, dict) and _added_where_left_out(key, old, new, rule))
    ]


def _identity_part(data: dict[str, Any], rule: IdentityRule, prefix: str = "") -> dict[str, Any]:
    """``data`` without the settings ``rule`` leaves out at any value, and without empty groups."""
    kept: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if rule.kind_of(path) == LEFT_OUT:
            continue
        if isinstance(value, dict):
            value = _identity_part(value, rule, f"{path}.")
            if not value:
                continue  # an empty group, or one that held only what is left out, is no setting
        kept[key] = value
    return kept


def _added_where_left_out(key: str, old: Any, new: dict[str, Any], rule: IdentityRule) -> bool:
    """Whether leaf ``key`` of ``new`` is missing from ``old`` only where ``rule`` leaves the new value out of the
    identity: the leaf itself, or a group above it that ``old`` lacks as a whole."""
    parts = key.split(".")
    absent = [cut for cut in range(1, len(parts) + 1) if _at(old, parts[:cut]) is _MISSING]
    return any(rule.leaves_out(".".join(parts[:cut]), _at(new, parts[:cut]), new) for cut in absent)


def _at(data: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


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
