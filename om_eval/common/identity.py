"""What enters an identity (a run id, a memory key): one rule, used by both.

An identity is the hash of a nested mapping of settings. An :class:`IdentityRule` classes each setting, named by
its dotted path (``observation.message_tokens``), once:

- **hashed**: enters whatever its value;
- **omitted at a pinned value**: enters only when set away from that value. The value is pinned in the rule, never
  read from the live default. A setting added after identities were first stored is omitted at the value every
  earlier run had, so their identities hold; and changing a default later cannot give old and new runs one
  identity, because runs at the new default carry the setting and move. A test compares every pin with the live
  default, so such a move is never silent;
- **only with** another setting: enters only while that one is truthy (a hash function that means nothing while
  ids are shown raw);
- **left out**: never enters (output folders, concurrency, what only shapes a view).

A path ending in ``.`` classes a whole subtree (``models.``). A setting the rule does not class is hashed: its
identity moves, the identity pins fail, and the rule's completeness test names the setting to class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: How a rule classes a setting.
HASHED, OMITTED_AT, ONLY_WITH, LEFT_OUT = "hashed", "omitted at", "only with", "left out"


@dataclass(frozen=True)
class IdentityRule:
    """Which settings of a nested mapping enter an identity (see the module docstring)."""

    name: str
    """What the identity is (``run id``, ``memory key``), for messages."""
    hashed: frozenset[str] = frozenset()
    omitted_at: Mapping[str, Any] = field(default_factory=dict)
    """Path -> the pinned value at which it is left out."""
    only_with: Mapping[str, str] = field(default_factory=dict)
    """Path -> the path that must be truthy for it to enter."""
    left_out: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for kind, paths in ((HASHED, self.hashed), (OMITTED_AT, self.omitted_at), (ONLY_WITH, self.only_with),
                            (LEFT_OUT, self.left_out)):
            for path in paths:
                if path in seen:
                    raise ValueError(f"{self.name}: {path!r} is classed twice ({seen[path]} and {kind})")
                seen[path] = kind

    def kind_of(self, path: str) -> str | None:
        """How ``path`` is classed, by itself or by the nearest subtree entry (``run.`` classes ``run`` and all
        below it); None when unclassed."""
        for kind, paths in ((LEFT_OUT, self.left_out), (OMITTED_AT, self.omitted_at), (ONLY_WITH, self.only_with),
                            (HASHED, self.hashed)):
            if path in paths:
                return kind
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut]) + "."
            if prefix in self.left_out:
                return LEFT_OUT
            if prefix in self.hashed:
                return HASHED
        return None

    def view(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` as the identity sees it: nested like ``data``, without the settings this rule leaves out."""
        return self._view(data, data, "")

    def _view(self, data: Mapping[str, Any], root: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in data.items():
            path = prefix + str(key)
            kind = self.kind_of(path)
            if self._leaves_out(kind, path, value, root):
                continue
            if isinstance(value, Mapping) and (kind is None or (kind == HASHED and self._excepts_below(path))):
                value = self._view(value, root, path + ".")
            out[str(key)] = value
        return out

    def leaves_out(self, path: str, value: Any, root: Mapping[str, Any]) -> bool:
        """Whether the identity leaves setting ``path`` out while it holds ``value`` (``root``: the whole mapping,
        which ``only with`` reads). A mapping without the setting then has the same identity as one with it: a run
        stored before a setting existed is the run asked for at the setting's pinned value."""
        return self._leaves_out(self.kind_of(path), path, value, root)

    def _leaves_out(self, kind: str | None, path: str, value: Any, root: Mapping[str, Any]) -> bool:
        return (kind == LEFT_OUT
                or (kind == OMITTED_AT and _same(value, self.omitted_at[path]))
                or (kind == ONLY_WITH and not lookup(root, self.only_with[path])))

    def _excepts_below(self, path: str) -> bool:
        """Whether a setting below ``path`` is classed apart from its hashed subtree (``models.`` is hashed, its
        ``models.actor.provider_options.price`` left out)."""
        below = path + "."
        return any(p.startswith(below) for group in (self.left_out, self.omitted_at, self.only_with) for p in group)

    def unclassed(self, paths: Iterable[str]) -> list[str]:
        """The paths this rule does not class (the completeness test lists them)."""
        return sorted(path for path in paths if self.kind_of(path) is None)


def _same(value: Any, pinned: Any) -> bool:
    """Equal, and of the same kind: ``False`` is not ``0``, ``1`` is not ``1.0`` (they hash differently)."""
    return type(value) is type(pinned) and value == pinned


def lookup(data: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` in nested ``data`` (None when any part is missing)."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def leaf_paths(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of nested ``data`` by dotted path (an empty mapping is a leaf)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(leaf_paths(value, prefix + str(key) + "."))
        else:
            out[prefix + str(key)] = value
    return out
