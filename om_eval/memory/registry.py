"""Memory systems by name: the built-in ones, and plugins from the ``om_eval.memory_systems`` entry-point group.

A plugin is a package that declares, in its ``pyproject.toml``::

    [project.entry-points."om_eval.memory_systems"]
    my_memory = "my_package.memory:MyMemory"

where ``MyMemory(options)`` returns a :class:`~om_eval.memory.system.MemorySystem`. Once installed it runs as
``om-eval run memory=my_memory memory.some_option=3``, with no change to om-eval: the options it declares in its
``default_options`` can be set so (others need Hydra's ``+memory.<option>=``).

Built-in systems are found the same way, by where their factory lives, so this module (the seam) imports none of
them: they sit above the harness's benchmark code, which the seam sits below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from om_eval.llm.stand_in import Responder
from om_eval.memory.system import (
    Forecast,
    MemoryContext,
    MemoryServices,
    MemorySystem,
    MemorySystemBase,
    PinnedIdentity,
    TurnTrace,
)
from om_eval.memory.view import HISTORY_SCOPES, HistoryView, QuestionView
from om_eval.om.config import ConfigError, ModelSettings

ENTRY_POINT_GROUP = "om_eval.memory_systems"

#: Observational Memory, the default system (``memory=`` unset).
OM = "om"
DEFAULT_SYSTEM = OM

#: Built-in systems, by name: where their factory lives.
BUILT_IN = {
    OM: "om_eval.systems.om:ObservationalMemorySystem",
    "full_context": "om_eval.systems.readers:FullContextReader",
    "oracle": "om_eval.systems.readers:OracleReader",
    "simple_om": "om_eval.systems.simple:SimpleOMSystem",
    "rag_mastra": "om_eval.systems.rag_mastra:MastraRecallSystem",
    "rag_lme": "om_eval.systems.rag_lme:LongMemEvalRetrievalSystem",
    "mem0": "om_eval.systems.mem0:Mem0System",
    "graphiti": "om_eval.systems.graphiti:GraphitiSystem",
}

Factory = Callable[[Mapping[str, Any]], MemorySystem]


def _load(target: str) -> Factory:
    module, _, attribute = target.partition(":")
    factory: Factory = getattr(import_module(module), attribute)
    return factory


@lru_cache(maxsize=1)
def plugin_targets() -> dict[str, str]:
    """Installed plugins by name (``name -> module:attribute``)."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def _target(name: str) -> str | None:
    """Where the factory of system ``name`` lives (a built-in first, then an installed plugin), or ``None``."""
    return BUILT_IN.get(name) or plugin_targets().get(name)


def _declared(source: object, hook: str) -> Any:
    """The hook ``source`` (a plain plugin class or instance) declares, or :class:`MemorySystemBase`'s default.
    The one place hooks are looked up by name: everything past the registry reads them as attributes."""
    return getattr(source, hook, getattr(MemorySystemBase, hook))


def plugin_defaults(name: str) -> dict[str, Any]:
    """A plugin's options at their defaults (its factory's ``default_options``), so ``memory.<option>=...`` sets
    them on the command line as a built-in system's; ``{}`` when it declares none or cannot be loaded (the run
    then says why)."""
    try:
        defaults = _declared(_load(plugin_targets()[name]), "default_options")
    except (ImportError, AttributeError, KeyError):
        return {}
    return dict(defaults) if isinstance(defaults, Mapping) else {}


#: What a report says of a plugin that declares no :attr:`~MemorySystemBase.about`.
PLUGIN_ABOUT = "a plugin memory system (om_eval.memory_systems entry point)"


def _factory(name: str) -> Any:
    """The factory of system ``name``, or ``None`` when it is unknown or cannot be loaded (a plugin uninstalled since
    its run)."""
    target = _target(name)
    try:
        return _load(target) if target else None
    except (ImportError, AttributeError):
        return None


def system_trait(name: str, hook: str) -> Any:
    """A hook system ``name`` declares on its class (:attr:`~MemorySystemBase.options_group`,
    :attr:`~MemorySystemBase.records_turns`...), or :class:`MemorySystemBase`'s default when it declares none or
    cannot be loaded: how a report reads what a system is without building it."""
    factory = _factory(name)
    return getattr(MemorySystemBase, hook) if factory is None else _declared(factory, hook)


def _naming(name: str) -> tuple[Callable[[Mapping[str, Any], Mapping[str, Any]], str] | None, str]:
    factory = _factory(name)
    if factory is None:
        return None, PLUGIN_ABOUT
    return _declared(factory, "label"), str(_declared(factory, "about") or PLUGIN_ABOUT)


def system_label(name: str, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """How a run of ``name`` with this stored budget and these options is named in reports (the system's
    :meth:`~MemorySystemBase.label`, read from its class); its name when it gives none or cannot be loaded."""
    label, _ = _naming(name)
    if label is None:
        return name
    try:
        text = label(budget, options)
    except (TypeError, KeyError, ValueError, AttributeError):  # a plugin's label that fails must not fail a report
        return name
    return str(text) if text else name


def system_about(name: str) -> str:
    """What ``name`` shows the actor, in a few words (:attr:`~MemorySystemBase.about`), for the report's note."""
    return _naming(name)[1]


def available_systems() -> list[str]:
    """Every name ``memory=`` accepts."""
    return sorted({OM, *BUILT_IN, *plugin_targets()})


class DeclaredSystem(MemorySystemBase):
    """A plain class with the five required members, seen through :class:`MemorySystemBase`: the hooks it declares
    are read once, here, and the ones it does not take their defaults."""

    def __init__(self, inner: MemorySystem) -> None:
        self.inner = inner
        self.name = inner.name
        self.uses_observer_model = bool(_declared(inner, "uses_observer_model"))
        self.uses_embedding_model = bool(_declared(inner, "uses_embedding_model"))
        self.uses_small_model = bool(_declared(inner, "uses_small_model"))
        answer_tokens = _declared(inner, "max_output_tokens")
        self.max_output_tokens = None if answer_tokens is None else int(answer_tokens)
        self.history_scope = str(_declared(inner, "history_scope"))
        self.config_groups = tuple(_declared(inner, "config_groups"))
        self._prepare = _declared(inner, "prepare")
        self._digest = _declared(inner, "memory_digest")
        self._pinned = _declared(inner, "pinned_identity")
        self._snapshot = _declared(inner, "snapshot")
        self._restore = _declared(inner, "restore")
        self._own_models = _declared(inner, "own_models")
        self._figures = _declared(inner, "build_figures")
        self._events = _declared(inner, "build_events")
        self._trace = _declared(inner, "trace_turns")
        self._forecast = _declared(inner, "forecast")
        self._warnings = _declared(inner, "build_warnings")
        self._responder = _declared(inner, "offline_responder")
        self._close = _declared(inner, "close")
        self.packages = tuple(_declared(inner, "packages"))  # type: ignore[misc]  # per instance: the plugin's own

    def identity(self) -> Mapping[str, Any]:
        return self.inner.identity()

    def budget(self) -> Mapping[str, Any]:
        return self.inner.budget()

    async def ingest(self, history: HistoryView, services: MemoryServices) -> Any:
        return await self.inner.ingest(history, services)

    async def context(self, memory: Any, question: QuestionView, services: MemoryServices) -> MemoryContext | str:
        return await self.inner.context(memory, question, services)

    def prepare(self) -> None:
        if self._prepare is not MemorySystemBase.prepare:
            self._prepare()

    def memory_digest(self, memory: Any) -> str:
        if self._digest is MemorySystemBase.memory_digest:
            return super().memory_digest(memory)
        return str(self._digest(memory))

    def pinned_identity(self) -> PinnedIdentity | None:
        if self._pinned is MemorySystemBase.pinned_identity:
            return None
        pinned: PinnedIdentity | None = self._pinned()
        return pinned

    def own_models(self) -> Mapping[str, ModelSettings]:
        return {} if self._own_models is MemorySystemBase.own_models else dict(self._own_models())

    def build_figures(self, memory: Any) -> Mapping[str, Any]:
        return {} if self._figures is MemorySystemBase.build_figures else dict(self._figures(memory))

    def build_events(self, memory: Any) -> Sequence[Mapping[str, Any]]:
        return () if self._events is MemorySystemBase.build_events else list(self._events(memory))

    def trace_turns(self, memory: Any, history: HistoryView, turn_ids: Sequence[str]) -> Mapping[str, TurnTrace]:
        return {} if self._trace is MemorySystemBase.trace_turns else dict(self._trace(memory, history, turn_ids))

    def close(self, memory: Any) -> None:
        if self._close is not MemorySystemBase.close:
            self._close(memory)

    def build_warnings(self, memory: Any) -> Sequence[str]:
        return () if self._warnings is MemorySystemBase.build_warnings else [str(w) for w in self._warnings(memory)]

    def offline_responder(self) -> Responder | None:
        if self._responder is MemorySystemBase.offline_responder:
            return None
        responder: Responder | None = self._responder()
        return responder

    @property
    def traces_turns(self) -> bool:
        return self._trace is not MemorySystemBase.trace_turns

    def forecast(self, history_tokens: int) -> Forecast | None:
        if self._forecast is MemorySystemBase.forecast:
            return None
        forecast: Forecast | None = self._forecast(history_tokens)
        return forecast

    @property
    def keeps_snapshots(self) -> bool:
        return self._snapshot is not MemorySystemBase.snapshot

    @property
    def restores_snapshots(self) -> bool:
        return self._restore is not MemorySystemBase.restore

    def snapshot(self, memory: Any) -> Any:
        return None if self._snapshot is MemorySystemBase.snapshot else self._snapshot(memory)

    async def restore(self, data: Any, services: MemoryServices) -> Any:
        if self._restore is MemorySystemBase.restore:
            return await super().restore(data, services)
        return await self._restore(data, services)


def make_system(name: str, options: Mapping[str, Any]) -> MemorySystemBase:
    """The system ``name`` built with ``options`` (``memory.*`` without ``system``), with every hook declared.

    Raises:
        ConfigError: no such system, or it rejected its options (the message names the option).
    """
    target = _target(name)
    if target is None:
        raise ConfigError(f"memory={name!r} is not a memory system: choose one of {', '.join(available_systems())}, "
                          f"or install a plugin that declares it in the {ENTRY_POINT_GROUP!r} entry-point group",
                          option="memory")
    try:
        factory = _load(target)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"memory={name}: its plugin {target!r} cannot be loaded ({error}); reinstall it",
                          option="memory") from None
    try:
        system = factory(dict(options))
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(f"memory={name}: {error}", option="memory") from None
    if not isinstance(system, MemorySystemBase):
        if not isinstance(system, MemorySystem):
            raise ConfigError(f"memory={name}: {target} gave {type(system).__name__}, which lacks the MemorySystem "
                              "methods (name, identity, budget, ingest, context)", option="memory")
        system = DeclaredSystem(system)
    if system.name != name:
        raise ConfigError(f"memory={name}: its system calls itself {system.name!r}; set name = {name!r} on it (the "
                          "name it is registered under is the one runs, memory keys and errors show)", option="memory")
    pinned = system.pinned_identity()
    if system.keeps_snapshots and pinned is not None and not pinned.per_history:
        raise ConfigError(f"memory={name} keeps snapshots under one memory key for every history "
                          "(pinned_identity().per_history is False): set per_history=True, or keep no snapshots",
                          option="memory")
    if system.keeps_snapshots and not system.restores_snapshots:
        raise ConfigError(f"memory={name} defines snapshot(memory) but no restore(data, services): define both (the "
                          "harness restores what it stored), or neither", option="memory")
    if system.history_scope not in HISTORY_SCOPES:
        raise ConfigError(f"memory={name}: its history_scope {system.history_scope!r} is invalid: allowed values are "
                          f"{', '.join(HISTORY_SCOPES)}", option="memory")
    return system


def system_packages(name: str, system: MemorySystemBase) -> list[str]:
    """The distributions whose versions a run of ``system`` records: the ones it names (:attr:`packages`), and for a
    plugin its own distribution and what it requires (extras left out)."""
    names = list(system.packages)
    point = next((p for p in entry_points(group=ENTRY_POINT_GROUP) if p.name == name), None)
    dist = getattr(point, "dist", None) if name not in BUILT_IN else None
    if dist is not None:
        names.append(str(dist.metadata["Name"]))
        for requirement in dist.requires or ():
            spec, _, marker = requirement.partition(";")
            found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
            if found and "extra" not in marker:  # a requirement of one of its extras is not what it runs on
                names.append(found.group(1))
    return list(dict.fromkeys(names))
