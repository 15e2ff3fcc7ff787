"""Hydra structured configs: the typed schema behind ``om_eval/configs/`` (validated by OmegaConf on load).

Library code never sees these: :mod:`om_eval.experiment.spec` converts a resolved config once into the frozen
dataclasses of the engine, the replay and the judge. The OM part is made from those dataclasses themselves
(:func:`schema_of`: their fields, types, defaults and help text), so a setting is defined once, in the engine; the
few places where the run config's default differs from the library's are listed in :data:`RUN_DEFAULTS`, with why.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, cast

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from om_eval.bench.baseline import BaselineConfig
from om_eval.experiment.run_options import RunOptions
from om_eval.om.config import (
    ModelSettings,
    ObservationConfig,
    OMConfig,
    ReflectionConfig,
)
from om_eval.systems.om.replay import ReplayConfig

# --------------------------------------------------------------------------------- OM: made from the engine's own

#: Where the run config's OM defaults differ from the library's, and why (the library's are 1.10's engine defaults;
#: the run config's are the published replay protocol's).
RUN_DEFAULTS = {
    # A model config names its model; it samples at temperature 0 and leaves the output cap to the provider unless
    # it says otherwise (the engine's own defaults are the Observer's: 0.3 and 100,000 tokens).
    ModelSettings: {"model": MISSING, "temperature": 0.0, "max_output_tokens": None},
    ObservationConfig: {"buffer_tokens": False},  # the published replay is synchronous; null asks for 1.10's 0.2
    OMConfig: {"obscure_thread_ids": True},  # models see hashed thread ids, as Mastra's harness sets it
}
#: Engine fields the run config holds elsewhere: the models under ``models.*``, the scope under ``om.replay``, the
#: prompt variant under ``prompt``; ``resource_buffering`` follows from ``om.replay`` (see ``spec.py``).
ELSEWHERE = {
    ObservationConfig: ("model",),
    ReflectionConfig: ("model",),
    OMConfig: ("observation", "reflection", "scope", "prompt_variant", "resource_buffering"),
}


def _omegaconf_type(hint: Any) -> Any:
    """The nearest type OmegaConf can check: unions of several types and anything unusual become ``Any`` (the
    engine validates the value itself), a ``Literal`` of strings ``str``, ``X | None`` ``Optional[X]``."""
    if hint in (bool, int, float, str):
        return hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return str if all(isinstance(a, str) for a in args) else Any
    if origin in (dict, Mapping, collections.abc.Mapping):
        return dict[str, Any]
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = _omegaconf_type(rest[0])
            return Any if inner is Any else Optional[inner]
        return Any
    return Any


def field_help(cls: type) -> dict[str, str]:
    """The docstring written under each field of dataclass ``cls`` (its help text), by field name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source shipped (a zipped install): the schema still works, without help
        return {}
    body = cast(ast.ClassDef, tree.body[0]).body  # the source of a class is its class statement
    helps = {}
    for node, after in itertools.pairwise(body):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            helps[node.target.id] = " ".join(after.value.value.split())
    return helps


def _for(table: dict[type, Any], engine: type, missing: Any) -> Any:
    """``table``'s entry for ``engine`` or for the nearest class it derives from."""
    return next((table[base] for base in engine.__mro__ if base in table), missing)


def schema_of(engine: type, name: str, extra: tuple[tuple[str, Any, Any], ...] = ()) -> type:
    """A structured-config dataclass with ``engine``'s fields (the ones the run config holds here), their types as
    OmegaConf checks them, their defaults (:data:`RUN_DEFAULTS` first) and their help text in the field metadata;
    ``extra`` adds ``(name, type, field)`` entries the engine does not have."""
    hints = typing.get_type_hints(engine)
    helps = {name: text for base in reversed(engine.__mro__) if dataclasses.is_dataclass(base)
             for name, text in field_help(base).items()}
    defaults = _for(RUN_DEFAULTS, engine, {})
    specs: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(engine):
        if f.name in _for(ELSEWHERE, engine, ()):
            continue
        metadata = {"help": helps.get(f.name, "")}
        if f.name not in defaults and f.default is dataclasses.MISSING:
            made = field(default_factory=f.default_factory, metadata=metadata)
        else:
            made = field(default=defaults.get(f.name, f.default), metadata=metadata)
        specs.append((f.name, _omegaconf_type(hints[f.name]), made))
    schema = dataclasses.make_dataclass(name, [*specs, *extra])
    schema.__module__ = __name__
    return schema


# The schemas made by schema_of are classes made at import time: mypy cannot use them as types (valid-type), so
# the fields that hold one say so where they name it.
ModelSchema = schema_of(ModelSettings, "ModelSchema")


@dataclass
class ModelsSchema:
    observer: ModelSchema = field(default_factory=ModelSchema)  # type: ignore[valid-type]  # made by schema_of
    reflector: ModelSchema = field(default_factory=ModelSchema)  # type: ignore[valid-type]  # made by schema_of
    actor: ModelSchema = field(default_factory=ModelSchema)  # type: ignore[valid-type]  # made by schema_of
    judge: ModelSchema = field(default_factory=ModelSchema)  # type: ignore[valid-type]  # made by schema_of
    embedding: ModelSchema = field(default_factory=ModelSchema)  # type: ignore[valid-type]  # made by schema_of
    """The embedding model of a retrieval memory system (``memory=rag_mastra``, ``rag_lme retriever=embedding``)."""
    small: Optional[ModelSchema] = None  # type: ignore[valid-type]  # made by schema_of; Hydra reads Optional
    """The smaller model a library asks for beside its main one (Graphiti's two sizes); unset: ``models.observer``."""


ObservationSchema = schema_of(ObservationConfig, "ObservationSchema")
ReflectionSchema = schema_of(ReflectionConfig, "ReflectionSchema")
ReplaySchema = schema_of(ReplayConfig, "ReplaySchema")
OMSchema = schema_of(OMConfig, "OMSchema", extra=(
    ("observation", ObservationSchema, field(default_factory=ObservationSchema)),
    ("reflection", ReflectionSchema, field(default_factory=ReflectionSchema)),
    ("replay", ReplaySchema, field(default_factory=ReplaySchema)),
    ("token_estimator", str, field(default="tiktoken", metadata={
        "help": "How tokens are counted for the thresholds: tiktoken (o200k_base), tokenx (1.7+) or chars."})),
))


@dataclass
class PromptSchema:
    variant: str = "current"
    """om-eval's wordings (``current``, ``current_v1_3``, ``legacy``, ``condensed``) or ``mastra_exact``."""
    mastra_version: Optional[str] = None
    """``prompt=mastra_exact``: the @mastra/memory release whose prompts are used (1.3.0, 1.10.0, 1.31.0); null
    takes the release whose engine rules ``om=`` follows (1.3.0 under om=benchmark_era, 1.31.0 under om=v1_31)."""
    mastra_variant: str = "current"
    """``prompt=mastra_exact``: the release's Observer variant (1.3.0 also has legacy and condensed)."""
    source: Optional[str] = None
    """``prompt=mastra_exact``: a tarball or unpacked folder of the package to read instead of the npm registry
    (checked against the same pinned hashes)."""


@dataclass
class SubsetSchema:
    ids: Optional[list[str]] = None
    types: Optional[list[str]] = None
    abstention: Optional[bool] = None
    first: Optional[int] = None
    sample: Optional[int] = None
    per_type: Optional[int] = None
    seed: int = 0
    haystacks: Optional[list[str]] = None
    """Keep the questions of these shared memories only (LoCoMo's conversations: ``[locomo_0]``)."""


@dataclass
class SyntheticSchema:
    size: str = "mini"
    questions_per_type: int = 1
    abstention: Optional[int] = None
    seed: int = 0


@dataclass
class DatasetSchema:
    name: str = "mini"
    """``mini`` (bundled fixture), ``oracle``, ``s``, ``m`` (LongMemEval files), ``synthetic`` or ``locomo``."""
    path: Optional[str] = None
    """An explicit file; otherwise $LONGMEMEVAL_DIR (or $LOCOMO_PATH) or the pinned download."""
    verify: bool = True
    benchmark: str = "longmemeval"
    """The benchmark module that loads and scores the data (om_eval/bench/<name>.py): longmemeval or locomo."""
    speaker_roles: Optional[str] = None
    """LoCoMo: which speaker is the user, a_user (default) or b_user; the other is the assistant."""
    corrections: Optional[str] = None
    """LoCoMo: locomo_audit scores against the audit's corrected gold answers too (raw and corrected reported)."""
    audit_path: Optional[str] = None
    """LoCoMo: the audit file; otherwise $LOCOMO_AUDIT_PATH or the pinned download."""
    tier: Optional[str] = None
    """BEAM: the tier (100K, 500K, 1M, 10M) of the copy at dataset.path or $BEAM_DIR."""
    synthetic: SyntheticSchema = field(default_factory=SyntheticSchema)
    subset: SubsetSchema = field(default_factory=SubsetSchema)


@dataclass
class JudgeSchema:
    mode: str = "house"
    """``house`` (our templates, offline), ``official`` (the upstream templates at the pinned commit),
    ``lenient`` (a forgiving judge in our words) or ``panel`` (``om-eval rejudge`` only: every protocol of
    ``panel``)."""
    source: Optional[str] = None
    """A LongMemEval clone or evaluate_qa.py file; None downloads the pinned file once."""
    parse: str = "official"
    no_verdict: str = "error"
    """A reply without a verdict: ``error`` (unjudged, retried) or ``wrong`` (as Mastra's harness counts it)."""
    panel: Optional[list[str]] = None
    """``judge=panel``: the protocols to grade with, each ``<protocol>`` or ``<protocol>:<model>`` (a
    ``om_eval/configs/model`` name or a litellm id; default the run's judge model). Protocols: official, mastra, house,
    house_strict, lenient (``om_eval.bench.judging.protocols.PROTOCOLS``)."""


@dataclass
class BeamSchema:
    rounding: str = "upstream"
    """BEAM's rubric scores: ``upstream`` truncates each item's score with int() for nine abilities (a 0.5 counts as
    0, as upstream's evaluation script adds them); ``exact`` keeps halves. Refused on other benchmarks."""


BaselineSchema = schema_of(BaselineConfig, "BaselineSchema")
RunSchema = schema_of(RunOptions, "RunSchema")


@dataclass
class Config:
    experiment: str = "custom"
    om: OMSchema = field(default_factory=OMSchema)  # type: ignore[valid-type]  # made by schema_of
    prompt: PromptSchema = field(default_factory=PromptSchema)
    models: ModelsSchema = field(default_factory=ModelsSchema)
    dataset: DatasetSchema = field(default_factory=DatasetSchema)
    judge: JudgeSchema = field(default_factory=JudgeSchema)
    beam: BeamSchema = field(default_factory=BeamSchema)
    baseline: BaselineSchema = field(default_factory=BaselineSchema)  # type: ignore[valid-type]  # made by schema_of
    memory: Any = field(default_factory=lambda: {"system": "om"})
    """The memory system under test (``memory=om|simple_om|rag_mastra|rag_lme|full_context|oracle|<plugin>``): its
    ``system`` and its options; each system checks its own (:mod:`om_eval.memory`)."""
    memory_defaults: Any = field(default_factory=dict)
    """Options an experiment gives a memory system, under its name (``memory_defaults.simple_om.buffer_threshold``),
    read by the system's config file where it says so; ``memory.*`` on the command line still wins."""
    run: RunSchema = field(default_factory=RunSchema)  # type: ignore[valid-type]  # made by schema_of


def register_configs() -> None:
    """Register the schema so ``om_eval/configs/config.yaml`` can name it in its defaults list."""
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    from om_eval.memory.registry import plugin_defaults, plugin_targets

    for name in plugin_targets():  # an installed plugin is selectable as memory=<name>, with no config file
        store.store(group="memory", name=name, node={"system": name, **plugin_defaults(name)})
    store.store(group="model", name="base_model", node=ModelSchema)
