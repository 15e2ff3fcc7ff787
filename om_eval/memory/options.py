"""Checks every built-in memory system runs on its ``memory.*`` options, with messages that name the option."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from om_eval.om.config import ConfigError


def reject_unknown(system: str, options: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse an option ``system`` does not have (a typo would otherwise run the default silently)."""
    known = tuple(allowed)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"memory.{unknown[0]} is not an option of memory={system}: its options are "
                          f"{', '.join(known)}", option=f"memory.{unknown[0]}")


def whole_number(name: str, value: Any, low: int) -> int:
    """``value`` as a whole number of at least ``low``, or a :class:`ConfigError` naming ``memory.<name>``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"memory.{name}={value!r} is invalid: must be a whole number >= {low}",
                          option=f"memory.{name}")
    return value


def one_of(name: str, value: Any, allowed: Iterable[str]) -> str:
    """``value`` if it is one of ``allowed``, or a :class:`ConfigError` naming ``memory.<name>``."""
    choices = tuple(allowed)
    if value not in choices:
        raise ConfigError(f"memory.{name}={value!r} is invalid: allowed values are {', '.join(choices)}",
                          option=f"memory.{name}")
    return str(value)


def top_k_text(budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """``, top k`` of a retrieving run's name (its stored budget's ``top_k``, else its option's); ``""`` without."""
    k = budget.get("top_k", options.get("top_k"))
    return "" if k is None else f", top {k}"
