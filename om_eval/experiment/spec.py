"""One run's configuration as frozen dataclasses, converted once from Hydra's resolved config.

The *config hash* (the run id) covers everything that can change results: OM options, replay protocol, prompt
variant and wording, models, dataset (file, hash, subset) and judge. It leaves out what cannot: output folder,
concurrency, budget, progress display and label. Re-running the same configuration finds the same run.

**Baseline readers** (``baseline=full_context|oracle``, :mod:`om_eval.bench.baseline`) build no memory, so their
resolved config drops what only shapes a memory (``om``, ``prompt``, the observer and reflector models): a sweep
``-m prompt=current,legacy baseline=none,oracle`` makes one oracle run, not two identical ones. ``baseline=none``
(an OM run) drops the ``baseline`` group instead, so every OM run keeps the id it had before baselines existed.

**Memory systems** (``memory=``, :mod:`om_eval.memory`): ``memory=om`` is an OM run and ``memory=full_context|oracle``
the baseline reader of that name, stored and hashed exactly as before the group existed (same run ids). Any other
system (built in, or a plugin) is answered through the memory seam: its config keeps the ``memory`` group and drops
what it does not use (``om``, ``prompt``, ``baseline``, the reflector, and the observer or embedding model unless
the system calls it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from typing import Any, cast

from om_eval.bench.baseline import BaselineConfig, baseline_from
from om_eval.bench.benchmark import DEFAULT_BENCHMARK
from om_eval.common.files import short_hash
from om_eval.common.run_identity import RUN_ID_RULE
from om_eval.common.secrets import redact_secrets
from om_eval.experiment.run_options import RunOptions
from om_eval.llm.request import canonical_json
from om_eval.memory.registry import BUILT_IN, system_trait
from om_eval.om.config import (
    ConfigError,
    ModelSettings,
    ObservationConfig,
    OMConfig,
    PromptVariant,
    ReflectionConfig,
)
from om_eval.om.exact import RELEASES
from om_eval.om.mastra_prompts import MastraPrompts
from om_eval.om.provider_options import IN_PROCESS_PREFIXES
from om_eval.om.wording import release_conflicts, release_for
from om_eval.systems.om.replay import ReplayConfig

#: Keys of the ``run`` group that never change results, so they stay out of the config hash.
NON_RESULT_KEYS = ("results_dir", "concurrency", "budget_usd", "progress", "label", "cache_dir")


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs, typed and frozen."""

    experiment: str
    om: OMConfig
    replay: ReplayConfig
    token_estimator: str
    actor: ModelSettings
    judge_model: ModelSettings
    judge_mode: str
    judge_source: str | None
    judge_parse: str
    judge_no_verdict: str
    dataset: Mapping[str, Any]
    run: RunOptions
    resolved: Mapping[str, Any]
    """The resolved config as plain data, secrets redacted (for the run record and the run id)."""
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    """A baseline reader instead of OM (``reader="none"``: an OM run)."""
    memory_system: str = "om"
    """The memory system under test: ``om``, a baseline reader's name, or a system answered through the seam."""
    memory_options: Mapping[str, Any] = field(default_factory=dict)
    """The seam system's options (``memory.*`` without ``system``)."""
    embedding: ModelSettings | None = None
    """``models.embedding``, when the seam system embeds."""
    small: ModelSettings | None = None
    """``models.small``, when it is set (a system that declares ``uses_small_model`` calls it)."""
    mastra_prompts: MastraPrompts | None = None
    """``prompt=mastra_exact``: the release whose own prompts the models read (``None``: om-eval's words)."""

    def system(self) -> Any:
        """The seam's :class:`~om_eval.memory.system.MemorySystem` (built each time: it is cheap and stateless)."""
        from om_eval.memory.registry import make_system

        return make_system(self.memory_system, self.memory_options)

    @property
    def config_hash(self) -> str:
        """The run id: sha256 of everything that can change results, prompt and template wording included.

        Which settings enter is decided by :data:`~om_eval.common.run_identity.RUN_ID_RULE`; the prompt and template
        hashes, an OM run's engine revision past :data:`~om_eval.common.run_identity.RUN_ID_ENGINE_REVISION` and a
        non-default benchmark's rules are added to them.
        """
        from om_eval.bench.judging.judge import OWN_TEMPLATE_SETS, template_set_sha256

        payload = RUN_ID_RULE.view(self.resolved)
        payload.setdefault("om", None)  # a baseline's config has no ``om`` group; its ids have always hashed it as null
        known = self.judge_mode == "official" or self.judge_mode in OWN_TEMPLATE_SETS
        judge_templates = template_set_sha256(self.judge_mode if known else "house")
        from om_eval.bench.seam import seam_actor_prompt_hash

        system = self.system()
        pinned = system.pinned_identity()
        prompts = dict(pinned.prompts) if pinned is not None else {
            "memory": stable_identity(system), "actor": seam_actor_prompt_hash()}
        benchmark = self.dataset.get("benchmark") or DEFAULT_BENCHMARK
        if benchmark == "beam":  # BEAM's own judge: its rubric and equivalence templates
            from om_eval.bench.judging.beam_templates import PINNED_RUBRIC_SHA256
            from om_eval.bench.judging.rubric import house_templates

            judge_templates = PINNED_RUBRIC_SHA256 if self.judge_mode == "official" else house_templates().sha256
        payload["prompts"] = {**prompts, "judge": judge_templates}
        if pinned is not None:
            payload.update(pinned.run_id_extra)
        if benchmark != DEFAULT_BENCHMARK:  # its scoring rules and judge routes, which the data does not show
            from om_eval.bench.benchmark import benchmark_named

            payload["benchmark"] = dict(benchmark_named(benchmark).identity)
        return short_hash(canonical_json(payload))

    @property
    def hosted_models(self) -> list[str]:
        """Models that cost money (everything but ``scripted/`` and ``local/``)."""
        models = {settings.model for settings in self.role_models().values()}
        return sorted(m for m in models if not m.startswith(IN_PROCESS_PREFIXES))

    def role_models(self) -> dict[str, ModelSettings]:
        """The settings of every model this run calls, by command-line path (``models.actor``...)."""
        roles = {"models.actor": self.actor, "models.judge": self.judge_model}
        system = self.system()
        if system.uses_observer_model:
            roles["models.observer"] = self.om.observation.model
        if system.uses_embedding_model and self.embedding is not None:
            roles["models.embedding"] = self.embedding
        if getattr(system, "uses_small_model", False) and self.small is not None:
            roles["models.small"] = self.small
        roles |= system.own_models()
        return roles


def stable_identity(system: Any) -> dict[str, Any]:
    """A system's ``identity()``, asked twice: it is part of the run id, so one that changes between calls (a time, a
    counter, a random number in it) would make a new run at every invocation, silently.

    Raises:
        ConfigError: the two answers differ, or are not JSON data.
    """
    from om_eval.llm.request import canonical_json

    first, second = dict(system.identity()), dict(system.identity())
    try:
        same = canonical_json(first) == canonical_json(second)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"memory={system.name}: identity() must return JSON data (str, numbers, lists, mappings): "
                          f"{error}", option="memory") from None
    if not same:
        changed = sorted(key for key in {*first, *second} if first.get(key) != second.get(key))
        raise ConfigError(f"memory={system.name}: identity() gave different values on two calls (keys: "
                          f"{', '.join(map(str, changed))}); it is part of the run id and must depend only on the "
                          "system's code and options", option="memory")
    return first


def _model(data: Mapping[str, Any], role: str) -> ModelSettings:
    settings = ModelSettings(
        model=data["model"],
        temperature=None if data.get("temperature", 0.0) is None else float(data.get("temperature", 0.0)),
        max_output_tokens=data.get("max_output_tokens"),
        provider_options=dict(data.get("provider_options") or {}),
    )
    settings.validate(f"models.{role}")
    return settings


@lru_cache(maxsize=1)
def _om_defaults() -> dict[str, Any]:
    """The schema's OM group at its defaults (made once: every spec reads it)."""
    from om_eval.experiment.schema import OMSchema

    return asdict(OMSchema())


def spec_from_config(cfg: Mapping[str, Any]) -> RunSpec:
    """Build the frozen spec from a resolved config; option errors name the command-line path (``om.…``)."""

    try:
        return _spec_from_config(cfg)
    except ConfigError as error:
        raise error.at(cli_option(error.option)) if error.option else error from None


#: Top-level groups of the run config other than ``om``: options named from them are already run-config paths.
RUN_CONFIG_GROUPS = ("models.", "run.", "judge.", "dataset.", "prompt.", "baseline.", "memory.", "memory")


def cli_option(option: str) -> str:
    """Where an engine option (``observation.message_tokens``) sits in the run config (``om.observation.…``); an
    option already named by its run-config path (``models.observer.temperature``) stays as it is."""
    if option.startswith(RUN_CONFIG_GROUPS):
        return option
    for engine, run in (("prompt_variant", "prompt.variant"), ("scope", "om.replay.scope"),
                        ("observation.model", "models.observer"), ("reflection.model", "models.reflector")):
        if option == engine or option.startswith(engine + "."):
            return run + option[len(engine):]
    return "om." + option


#: What a baseline run's resolved config leaves out: it shapes only a memory, and a baseline builds none.
BASELINE_UNUSED = ("om", "prompt")
BASELINE_UNUSED_MODELS = ("observer", "reflector")


def _for_baseline(cfg: Mapping[str, Any], baseline: BaselineConfig) -> dict[str, Any]:
    """The config as stored and hashed: OM runs without the ``baseline`` group, baselines without OM's groups."""
    if not baseline.enabled:
        return {k: v for k, v in cfg.items() if k != "baseline"}
    kept = {k: v for k, v in cfg.items() if k not in BASELINE_UNUSED}
    kept["models"] = {k: v for k, v in cfg["models"].items() if k not in BASELINE_UNUSED_MODELS}
    return kept


def _memory_choice(cfg: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
    """The memory system, its options (``None``: read from its own config groups), and the config as stored and
    hashed before the baseline rule.

    Where a system's options are stored is its own :attr:`~om_eval.memory.system.MemorySystemBase.options_group`.
    ``memory=om`` (its own groups) and ``memory=<reader>`` (``baseline``) leave a config that is the one of the form
    they replace (no ``memory`` group; a reader's options under ``baseline``), so their run ids are those of
    ``baseline=``; the embedding model is dropped unless a system whose options are its ``memory`` group calls it.
    """
    memory = dict(cfg.get("memory") or {"system": "om"})
    name = str(memory.pop("system", "om"))
    chosen_reader = (cfg.get("baseline") or {}).get("reader", "none")
    # memory_defaults is already read into the memory group (its config file interpolates it).
    kept = {k: v for k, v in cfg.items() if k not in ("memory", "memory_defaults")}
    models = dict(kept.get("models") or {})
    embedding = models.pop("embedding", None)
    small = models.pop("small", None)
    kept["models"] = models
    group = system_trait(name, "options_group")
    if group != "memory" and name not in BUILT_IN:
        raise ConfigError(f"memory={name} declares options_group={group!r}: only om-eval's own systems keep their "
                          "options elsewhere (OM, the baseline readers); a plugin's are its memory group, so remove "
                          "options_group from it", option="memory")
    if group not in ("memory", "baseline"):  # its options are its own config groups (OM's om and prompt), read below
        return name, None, kept
    if group == "baseline":
        if chosen_reader not in ("none", name):
            raise ConfigError(f"memory={name} and baseline={chosen_reader} both choose a reader: keep one (memory=)",
                              option="memory")
        kept["baseline"] = {"reader": name, **memory}
        return name, {}, kept
    if chosen_reader != "none":
        raise ConfigError(f"memory={name} and baseline={chosen_reader} both choose what answers: keep one "
                          f"(memory={chosen_reader} is the reader)", option="memory")
    from om_eval.memory.registry import make_system

    system = make_system(name, memory)
    kept = {k: v for k, v in kept.items() if k not in ("om", "prompt", "baseline")}
    unused = {"reflector"} | (set() if system.uses_observer_model else {"observer"})
    kept["models"] = {k: v for k, v in models.items() if k not in unused}
    if system.uses_embedding_model:
        if embedding is None:
            raise ConfigError(f"memory={name} embeds text, but the run names no embedding model: set "
                              "model@models.embedding=<config> (scripted offline)", option="models.embedding")
        kept["models"]["embedding"] = embedding
    if small is not None and system.uses_small_model:  # set and used: it enters the run id
        kept["models"]["small"] = small
    kept["memory"] = {"system": name, **memory}
    return name, memory, kept


def _om_config(om: Mapping[str, Any], models: Mapping[str, Any], replay: ReplayConfig, *, prompt: str) -> OMConfig:
    """The engine config from the run config's ``om`` group: every engine setting the schema holds there, by name (a
    setting stored before it existed takes its default), plus the ones held elsewhere."""
    from om_eval.experiment.schema import ELSEWHERE

    defaults = _om_defaults()
    settings = {f.name: om.get(f.name, defaults[f.name]) for f in fields(OMConfig) if f.name not in ELSEWHERE[OMConfig]}
    return OMConfig(
        **settings,
        observation=ObservationConfig(**om["observation"], model=_model(models["observer"], "observer")),
        reflection=ReflectionConfig(**om["reflection"], model=_model(models["reflector"], "reflector")),
        prompt_variant=cast(PromptVariant, prompt),  # OMConfig checks it against PROMPT_VARIANTS
        # The replay decides the scope and resource-scope buffering; set here too so that explicit buffer options
        # are validated against them.
        **replay.engine_settings(),
    )


def _spec_from_config(cfg: Mapping[str, Any]) -> RunSpec:
    memory_system, memory_options, cfg = _memory_choice(cfg)
    baseline = baseline_from(cfg.get("baseline"))
    cfg = _for_baseline(cfg, baseline)
    om = cfg.get("om") or _om_defaults()  # a baseline's (unused) engine settings: its config has no ``om``
    # A baseline calls no observer or reflector; the engine settings it carries name the actor (never called).
    models = {"observer": cfg["models"]["actor"], "reflector": cfg["models"]["actor"], **cfg["models"]}
    replay = ReplayConfig(**om["replay"])
    om_config = _om_config(om, models, replay, prompt=(cfg.get("prompt") or {"variant": "current"})["variant"])
    mastra_prompts = None
    if cfg.get("prompt") is not None and not baseline.enabled:  # a baseline (and a seam system) has no prompt group
        mastra_prompts = _mastra_prompts(cfg["prompt"], om_config)
        if mastra_prompts is not None:  # the release named as chosen, so that naming it or not is one run
            cfg = {**cfg, "prompt": {**cfg["prompt"], "mastra_version": mastra_prompts.version}}
    run = RunOptions(**cfg["run"])
    return RunSpec(
        experiment=cfg.get("experiment", "custom"),
        om=om_config,
        replay=replay,
        # A reader counts its budget with its own tokenizer; the harness measures its context with the same one.
        token_estimator=baseline.tokenizer if baseline.enabled else om["token_estimator"],
        actor=_model(models["actor"], "actor"),
        judge_model=_model(models["judge"], "judge"),
        judge_mode=cfg["judge"]["mode"],
        judge_source=cfg["judge"].get("source"),
        judge_parse=cfg["judge"]["parse"],
        judge_no_verdict=cfg["judge"].get("no_verdict", "error"),
        dataset=dict(cfg["dataset"]),
        run=run,
        # Secrets never reach the store, the console or the run id (a rotated key is the same run).
        resolved=redact_secrets({k: v for k, v in cfg.items() if k != "hydra"}),
        baseline=baseline,
        memory_system=baseline.reader if baseline.enabled else memory_system,
        memory_options={k: v for k, v in asdict(baseline).items() if k != "reader"} if baseline.enabled
        # OM's options are its own config groups (``om``, ``prompt``), read into the engine's types above.
        else {"config": om_config, "replay": replay, "prompts": mastra_prompts,
              "token_estimator": om["token_estimator"]} if memory_options is None else memory_options,
        embedding=_model(cfg["models"]["embedding"], "embedding") if "embedding" in cfg["models"] else None,
        small=_model(cfg["models"]["small"], "small") if cfg["models"].get("small") is not None else None,
        mastra_prompts=mastra_prompts,
    )


def _mastra_prompts(prompt: Mapping[str, Any], om: OMConfig) -> MastraPrompts | None:
    """``prompt=mastra_exact``'s choice, checked against the engine settings (no pack is loaded here); ``None`` for
    om-eval's own words, which take none of its keys."""
    version, variant, source = prompt.get("mastra_version"), prompt.get("mastra_variant") or "current", \
        prompt.get("source")
    if om.prompt_variant != "mastra_exact":
        given = [f"prompt.{name}={value}" for name, value in (("mastra_version", version), ("source", source))
                 if value is not None] + ([f"prompt.mastra_variant={variant}"] if variant != "current" else [])
        if given:
            raise ConfigError(f"{', '.join(given)} only applies to prompt=mastra_exact (prompt.variant="
                              f"{om.prompt_variant} is om-eval's own wording)", option="prompt.variant")
        return None
    derived = release_for(om)
    chosen = str(version) if version is not None else derived
    if chosen not in RELEASES:
        raise ConfigError(f"prompt.mastra_version={chosen} is not pinned in om-eval: use one of "
                          f"{', '.join(RELEASES)}", option="prompt.mastra_version")
    if variant not in RELEASES[chosen].variants:
        raise ConfigError(f"prompt.mastra_variant={variant} is not a prompt variant of @mastra/memory {chosen} (it has "
                          f"{', '.join(RELEASES[chosen].variants)})", option="prompt.mastra_variant")
    conflicts = release_conflicts(om, chosen)
    if conflicts:
        settings = "; ".join(c.describe(cli_option) for c in conflicts)
        hint = (f"use prompt.mastra_version={derived}, the release om= follows, or change those settings"
                if derived != chosen else f"set those settings as @mastra/memory {chosen} has them")
        raise ConfigError(f"prompt.mastra_version={chosen} does not fit the engine: {settings}; {hint} "
                          "(om=benchmark_era is 1.3.0's engine, om=default 1.10.0's, om=v1_31 1.31.0's)",
                          option="prompt.mastra_version")
    return MastraPrompts(chosen, variant, None if source is None else str(source))


def describe(spec: RunSpec) -> dict[str, Any]:
    """A short, JSON-ready summary for logs."""
    return {
        "experiment": spec.experiment,
        "config_hash": spec.config_hash,
        "baseline": spec.baseline.reader,
        "memory": spec.memory_system,
        "prompt": (f"mastra_exact {spec.mastra_prompts.version}/{spec.mastra_prompts.variant}"
                   if spec.mastra_prompts is not None else spec.om.prompt_variant),
        "observer": spec.om.observation.model.model,
        "actor": spec.actor.model,
        "judge": f"{spec.judge_mode}:{spec.judge_model.model}",
        "dataset": spec.dataset.get("name"),
        "replay": asdict(spec.replay),
    }
