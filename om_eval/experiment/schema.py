"""Hydra structured configs: the typed schema behind ``configs/`` (validated by OmegaConf on load).

Library code never sees these: :mod:`om_eval.experiment.spec` converts a resolved config once into the frozen
dataclasses of the engine, the replay and the judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class ModelSchema:
    model: str = MISSING
    temperature: Optional[float] = 0.0  # null: send none (reasoning models; 1.31 for the models it marks so)
    max_output_tokens: Optional[int] = None
    provider_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelsSchema:
    observer: ModelSchema = field(default_factory=ModelSchema)
    reflector: ModelSchema = field(default_factory=ModelSchema)
    actor: ModelSchema = field(default_factory=ModelSchema)
    judge: ModelSchema = field(default_factory=ModelSchema)


@dataclass
class ObservationSchema:
    message_tokens: int = 30_000
    buffer_tokens: Any = False
    buffer_activation: Optional[float] = None
    block_after: Optional[float] = None
    max_tokens_per_batch: int = 10_000
    previous_observer_tokens: Any = 2000
    instruction: Optional[str] = None
    thread_title: bool = False
    batch_mode: str = "parallel"
    request_layout: str = "split"
    buffer_candidates: str = "unbuffered"  # after_cursor: 1.10's buffer cursor (never observes dropped chunks)
    activation_counts_reminder: bool = False  # true: 1.10 counts its continuation reminder at later steps' activation


@dataclass
class ReflectionSchema:
    observation_tokens: int = 40_000
    buffer_activation: Optional[float] = None
    block_after: Optional[float] = None
    start_level: Any = 0
    instruction: Optional[str] = None
    retry_after_growth: float = 0.1


@dataclass
class ReplaySchema:
    session_order: str = "date"
    unit: str = "pair"
    turn_spacing_seconds: int = 5
    skip_empty_turns: bool = True
    final_flush: bool = False
    scope: str = "resource"
    # 1.10's async buffering and activation; in scope=resource it turns on om-eval's resource_buffering extension
    # (1.10 has none there). Off = the published protocol.
    buffering: bool = False
    # What counts toward the observation threshold: exact (om-eval), mastra_dev (published runs), mastra_step (1.x).
    pending_accounting: str = "exact"


@dataclass
class OMSchema:
    observation: ObservationSchema = field(default_factory=ObservationSchema)
    reflection: ReflectionSchema = field(default_factory=ReflectionSchema)
    replay: ReplaySchema = field(default_factory=ReplaySchema)
    share_token_budget: bool = False
    obscure_thread_ids: bool = True
    thread_id_hash: str = "xxh32"  # what obscured ids are: 1.x's 32-bit xxHash, or blake2b (om-eval before)
    context_layout: str = "chunked"
    boundary_delimiters: bool = True
    token_estimator: str = "tiktoken"
    # What the actor sees of other threads (resource scope): 1.x lists them newest first, 100 at most.
    other_threads_order: str = "newest_first"
    other_threads_limit: Optional[int] = 100
    # om_eval: om-eval's observer/reflector robustness rules; mastra: 1.10's (every non-degenerate reply applied)
    reply_checks: str = "om_eval"
    # v1_10 or v1_31: which release's small rules the engine follows (om=v1_31 sets it)
    mastra_release: str = "v1_10"
    # om_eval or mastra: how a thread's new observations join its section (resource scope)
    thread_sections: str = "om_eval"


@dataclass
class PromptSchema:
    variant: str = "current"


@dataclass
class SubsetSchema:
    ids: Optional[list[str]] = None
    types: Optional[list[str]] = None
    abstention: Optional[bool] = None
    first: Optional[int] = None
    sample: Optional[int] = None
    per_type: Optional[int] = None
    seed: int = 0


@dataclass
class SyntheticSchema:
    size: str = "mini"
    questions_per_type: int = 1
    abstention: Optional[int] = None
    seed: int = 0


@dataclass
class DatasetSchema:
    name: str = "mini"
    """``mini`` (bundled fixture), ``oracle``, ``s``, ``m`` (LongMemEval files) or ``synthetic``."""
    path: Optional[str] = None
    """An explicit file; otherwise $LONGMEMEVAL_DIR or the pinned Hugging Face revision."""
    verify: bool = True
    synthetic: SyntheticSchema = field(default_factory=SyntheticSchema)
    subset: SubsetSchema = field(default_factory=SubsetSchema)


@dataclass
class JudgeSchema:
    mode: str = "house"
    """``house`` (our templates, offline) or ``official`` (the upstream templates at the pinned commit)."""
    source: Optional[str] = None
    """A LongMemEval clone or evaluate_qa.py file; None downloads the pinned file once."""
    parse: str = "official"
    no_verdict: str = "error"
    """A reply without a verdict: ``error`` (unjudged, retried) or ``wrong`` (as Mastra's harness counts it)."""


@dataclass
class BaselineSchema:
    reader: str = "none"
    """``none`` (answer through OM), ``full_context`` (the whole haystack) or ``oracle`` (evidence sessions)."""
    context_tokens: int = 128_000
    """The reader's context window; the history gets ``context_tokens - max_tokens - 1000`` tokens."""
    max_tokens: int = 500
    """The reader's answer budget."""
    format: str = "json"
    """Turns of a session as a JSON list (``json``) or as ``role: text`` blocks (``nl``)."""
    keep: str = "start"
    """Which end of an over-long history is kept: ``start`` (upstream) or ``end`` (the newest sessions)."""
    tokenizer: str = "tiktoken"
    """Token counter of the history budget."""


@dataclass
class RunSchema:
    results_dir: str = "results"
    concurrency: int = 4
    budget_usd: Optional[float] = None
    """Stop scheduling questions once this much has been spent (questions in flight finish)."""
    progress: bool = True
    label: Optional[str] = None
    """A short name for this variant in reports (default: the overrides that define it)."""
    cache_dir: Optional[str] = None
    """The model-answer cache (default: $OM_EVAL_CACHE_DIR/llm or ~/.cache/om-eval/llm)."""


@dataclass
class Config:
    experiment: str = "custom"
    om: OMSchema = field(default_factory=OMSchema)
    prompt: PromptSchema = field(default_factory=PromptSchema)
    models: ModelsSchema = field(default_factory=ModelsSchema)
    dataset: DatasetSchema = field(default_factory=DatasetSchema)
    judge: JudgeSchema = field(default_factory=JudgeSchema)
    baseline: BaselineSchema = field(default_factory=BaselineSchema)
    run: RunSchema = field(default_factory=RunSchema)


def register_configs() -> None:
    """Register the schema so ``configs/config.yaml`` can name it in its defaults list."""
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    store.store(group="model", name="base_model", node=ModelSchema)
