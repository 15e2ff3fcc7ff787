"""Typed, validated Observational Memory configuration (om-reference §1.5).

Defaults are those of @mastra/memory 1.10.0. Options that 1.10 leaves unset until they are needed
(``buffer_tokens``, ``buffer_activation``, ``block_after``) default to ``None`` here, because whether the user
set them decides whether async buffering is on (it is refused in resource scope unless the om-eval
``resource_buffering`` switch is on). Every validation error names the option, the value and what is allowed.

The engine's own additions (not in the reference) are marked "om-eval:" in their attribute docs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from om_eval.common.secrets import redact_secrets
from om_eval.om.provider_options import provider_option_errors
from om_eval.om.thresholds import (
    resolve_block_after,
    resolve_buffer_tokens,
    resolve_retention_floor,
)

Scope = Literal["thread", "resource"]
PromptVariant = Literal["current", "current_v1_3", "legacy", "condensed", "mastra_exact"]
ContextLayout = Literal["chunked", "single"]
RequestLayout = Literal["split", "single"]
BatchMode = Literal["parallel", "sequential"]
OtherThreadsOrder = Literal["newest_first", "oldest_first"]

SCOPES = ("thread", "resource")
#: om-eval's own wordings (``prompts/*.toml``).
PARAPHRASE_VARIANTS = ("current", "current_v1_3", "legacy", "condensed")
#: ``mastra_exact``: a Mastra release's own prompts, from the pack handed to the engine (:mod:`om_eval.om.wording`).
PROMPT_VARIANTS = (*PARAPHRASE_VARIANTS, "mastra_exact")
CONTEXT_LAYOUTS = ("chunked", "single")
REQUEST_LAYOUTS = ("split", "single")
BATCH_MODES = ("parallel", "sequential")
BufferCandidates = Literal["unbuffered", "after_cursor"]
BUFFER_CANDIDATES = ("unbuffered", "after_cursor")
OTHER_THREADS_ORDERS = ("newest_first", "oldest_first")
ThreadIdHash = Literal["xxh32", "blake2b"]
THREAD_ID_HASHES = ("xxh32", "blake2b")
ReplyChecks = Literal["om_eval", "mastra"]
REPLY_CHECKS = ("om_eval", "mastra")
MastraRelease = Literal["v1_10", "v1_31"]
MASTRA_RELEASES = ("v1_10", "v1_31")
ThreadSections = Literal["om_eval", "mastra"]
THREAD_SECTIONS = ("om_eval", "mastra")
RetrievalMode = Literal["off", "resource", "thread"]
RETRIEVAL_MODES = ("off", "resource", "thread")
RetrievalSearch = Literal["off", "bm25", "embedding"]
RETRIEVAL_SEARCHES = ("off", "bm25", "embedding")
DEFAULT_EMBEDDING_MODEL = "openai/text-embedding-3-small"
#: Threads one listing returns in 1.x (the storage's default page size), so the most the actor's context sees.
DEFAULT_OTHER_THREADS_LIMIT = 100
MAX_COMPRESSION_LEVEL = 4

DEFAULT_MODEL = "google/gemini-2.5-flash"
DEFAULT_BUFFER_TOKENS = 0.2
DEFAULT_OBSERVATION_ACTIVATION = 0.8
DEFAULT_BLOCK_AFTER = 1.2


class ConfigError(ValueError):
    """An option has a value outside its allowed range.

    ``option`` names it as the engine spells it (``observation.message_tokens``) when the error is about one option,
    and ``detail`` is the message after that name; a layer that exposes the engine under other paths (the run
    config's ``om.…``) says where with :meth:`at` instead of rewriting the text.
    """

    def __init__(self, message: str, *, option: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.option = option
        self.detail = detail

    def at(self, path: str) -> ConfigError:
        """The same error, naming the option by ``path``; unchanged when it is about no single option."""
        if self.option is None or self.detail is None:
            return self
        return ConfigError(path + self.detail, option=path, detail=self.detail)


def option_error(option: str, detail: str) -> ConfigError:
    """A :class:`ConfigError` about ``option``; ``detail`` follows its name (``=5 is invalid: …``)."""
    return ConfigError(option + detail, option=option, detail=detail)


def _fail(option: str, value: Any, allowed: str) -> None:
    raise option_error(option, f"={value!r} is invalid: {allowed}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_choice(option: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        _fail(option, value, "allowed values are " + ", ".join(choices))


def _check_positive_int(option: str, value: Any) -> None:
    if not _is_number(value) or value <= 0 or int(value) != value:
        _fail(option, value, "must be a whole number > 0")


@dataclass(frozen=True)
class ModelSettings:
    """Which model an agent uses and how it samples."""

    model: str = DEFAULT_MODEL
    """Model id as litellm understands it (``provider/name``), or ``scripted/...`` offline."""
    temperature: float | None = 0.3
    """``None`` sends none, leaving it to the provider: what 1.31 does for the models its registry marks as taking
    none (gpt-5, gpt-5-mini, the o-series, ...), which refuse or ignore one."""
    max_output_tokens: int | None = 100_000
    """Upper bound on generated tokens; ``None`` leaves it to the provider."""
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific parameters (``google``, ``openai``, ``litellm``) and the model's endpoint (``api_base``,
    ``api_key``, ``extra_headers``): :mod:`om_eval.om.provider_options`."""

    def __repr__(self) -> str:
        # Provider options may carry credentials (an api_key, an Authorization header); never show them.
        return (f"ModelSettings(model={self.model!r}, temperature={self.temperature!r}, "
                f"max_output_tokens={self.max_output_tokens!r}, "
                f"provider_options={redact_secrets(self.provider_options)!r})")

    def validate(self, prefix: str) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            _fail(f"{prefix}.model", self.model, "must be a non-empty model id such as 'openai/gpt-4o-mini'")
        if self.temperature is not None and (not _is_number(self.temperature) or not 0 <= self.temperature <= 2):
            _fail(f"{prefix}.temperature", self.temperature, "allowed range is [0, 2], or null to send none")
        if self.max_output_tokens is not None:
            _check_positive_int(f"{prefix}.max_output_tokens", self.max_output_tokens)
        if not isinstance(self.provider_options, Mapping):
            _fail(f"{prefix}.provider_options", self.provider_options, "must be a mapping")
        for path, value, why in provider_option_errors(self.model, self.provider_options):
            _fail(f"{prefix}.provider_options.{path}", value, why)


def _observer_model_default() -> ModelSettings:
    return ModelSettings(temperature=0.3, provider_options={"google": {"thinkingConfig": {"thinkingBudget": 215}}})


def _reflector_model_default() -> ModelSettings:
    return ModelSettings(temperature=0.0, provider_options={"google": {"thinkingConfig": {"thinkingBudget": 1024}}})


@dataclass(frozen=True)
class ObservationConfig:
    """When and how the Observer turns raw messages into observations."""

    message_tokens: int = 30_000
    """Unobserved message tokens that trigger observation (``>=``)."""
    buffer_tokens: float | bool | None = None
    """Async buffering interval: a ratio of ``message_tokens`` in (0, 1) or an absolute count; ``False``
    disables async buffering. ``None`` means the 1.10 default (0.2 in thread scope, off in resource scope)."""
    buffer_activation: float | None = None
    """Share of pending tokens to activate, in (0, 1], or an absolute retention floor >= 1000 (default 0.8)."""
    block_after: float | None = None
    """Stop waiting for buffers and observe synchronously here: a multiplier in [1, 100) of the threshold or an
    absolute count >= 100 (default 1.2 when buffering is on)."""
    max_tokens_per_batch: int = 10_000
    """Resource scope: message tokens per multi-thread Observer call."""
    previous_observer_tokens: int | bool = 2000
    """Token budget for the prior observations shown to the Observer; ``False`` shows them all, 0 none."""
    instruction: str | None = None
    """Appended to the Observer's system prompt as a custom-instructions section."""
    thread_title: bool = False
    """Ask the Observer for a ``<thread-title>``."""
    model: ModelSettings = field(default_factory=_observer_model_default)
    batch_mode: BatchMode = "parallel"
    """om-eval: resource-scope batches run in parallel (1.10, each sees the same prior observations) or
    sequentially (each sees the previous batch's output; tested by Mastra's harness)."""
    request_layout: RequestLayout = "split"
    """om-eval: the Observer's user side as two messages (1.10: task, then history) or one (1.1)."""
    buffer_candidates: BufferCandidates = "unbuffered"
    """Which messages a buffering pass observes. ``unbuffered`` (om-eval): every unobserved message no chunk
    covers. ``after_cursor`` (1.10): only those newer than the buffer cursor (the newest buffered message, kept
    across reflection generations) and the last observation; a reflection generation drops pending chunks, so
    1.10 never observes their messages."""
    activation_counts_reminder: bool = False
    """1.10's count at activation, at the steps of a turn after the first: the whole message list, which then
    holds the continuation reminder shown at the first step whenever there were observations
    (:data:`om_eval.om.thresholds.REMINDER_TOKENS_1_10` tokens more). It moves the activation gate, the forced
    boundary and the projected remainder. ``False`` (om-eval) counts the unobserved messages only."""
    buffer_ignores_new_reflection: bool = False
    """1.10's buffering pass at a turn's first step reads the record as the step began: a reflection buffered in
    that step (after an activation, or at the reflection check) does not yet stand in for the lines it condenses in
    the pass's previous observations (1.10 starts both in the background). ``False`` (om-eval): the pass sees it."""


@dataclass(frozen=True)
class ReflectionConfig:
    """When and how the Reflector condenses observations."""

    observation_tokens: int = 40_000
    """Observation tokens above which (``>``) reflection runs."""
    buffer_activation: float | None = None
    """Start async reflection at this share of ``observation_tokens``, in (0, 1] (default 0.5)."""
    block_after: float | None = None
    """Reflect synchronously from here: a multiplier in [1, 100) or an absolute count (default 1.2)."""
    start_level: int | Literal["auto"] = 0
    """Compression level of the first attempt, 0-4; ``auto`` picks 2 for gemini-2.5-flash, else 1."""
    instruction: str | None = None
    """Appended to the Reflector's system prompt as a custom-instructions section."""
    model: ModelSettings = field(default_factory=_reflector_model_default)
    retry_after_growth: float = 0.1
    """om-eval: after a reflection that could not get below the threshold, wait until observations grew by
    this share of the threshold before reflecting again (guards against reflect-loops, mastra#14109)."""


@dataclass(frozen=True)
class OMConfig:
    """Complete Observational Memory configuration."""

    scope: Scope = "thread"
    """``thread``: one memory per thread; ``resource``: one memory across all threads of a resource."""
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)
    share_token_budget: bool = False
    """Let messages use the part of the observation budget that observations do not (needs buffering off)."""
    prompt_variant: PromptVariant = "current"
    """Observer prompt: ``current`` (1.10), ``current_v1_3`` (1.3, Mastra's published runs), ``legacy`` (Jan 2026)
    or ``condensed``, all in om-eval's words; or ``mastra_exact``: a Mastra release's own prompts, from the prompt
    pack the engine is built with (``ObservationalMemory(config, prompts=load_pack(version))``)."""
    obscure_thread_ids: bool = False
    """Replace thread ids by a short hash wherever a model or the actor could see them."""
    thread_id_hash: ThreadIdHash = "xxh32"
    """With ``obscure_thread_ids``, the hash shown: ``xxh32`` (8 hex digits of a 32-bit xxHash, seed 0, what 1.x
    shows) or ``blake2b`` (8 hex digits of BLAKE2b, om-eval's choice before, not Mastra's)."""
    context_layout: ContextLayout = "chunked"
    """om-eval: what the actor sees: 1.10's chunked system messages or the benchmark-era single message."""
    boundary_delimiters: bool = True
    """om-eval: separate appended observations with dated message-boundary lines (1.10); off joins with a
    blank line (benchmark era)."""
    other_threads_order: OtherThreadsOrder = "newest_first"
    """Resource scope: the order of other threads' unobserved messages in the actor's context. ``newest_first``
    is 1.x's (it lists a resource's threads by creation time, newest first); ``oldest_first`` is the order
    om-eval used before (not Mastra's)."""
    other_threads_limit: int | None = DEFAULT_OTHER_THREADS_LIMIT
    """Resource scope: how many of the resource's newest threads (the one asked on included) the actor's context
    looks at for unobserved messages; 1.x reads one page of 100 threads. ``None`` looks at all (not Mastra's)."""
    resource_buffering: bool = False
    """om-eval extension: allow async buffering, activation and buffered reflection in resource scope (1.10
    refuses async options there and leaves buffering off). Needs ``scope="resource"``; with it the usual
    ``buffer_tokens``/``buffer_activation``/``block_after`` defaults and checks apply."""
    reply_checks: ReplyChecks = "om_eval"
    """Which Observer and Reflector replies are applied. ``om_eval``: om-eval's robustness rules (an Observer reply
    that is empty, has no observations, names none of its threads or repeats earlier observations is refused
    and retried; the Reflector keeps its smallest usable attempt, never applies one that is not observations,
    cut off, far too small or no smaller than its input, and waits for growth after missing its target).
    ``mastra``: 1.10's rules only (a degenerate Observer reply is retried once, any other reply is applied; the
    Reflector stops at the first attempt under target and applies the last attempt, whatever it holds, and
    reflects again at the next check)."""
    mastra_release: MastraRelease = "v1_10"
    """The @mastra/memory release whose rules the engine follows where 1.31 changed them without a knob of its
    own: ``v1_10`` or ``v1_31`` (reflection at ``>=`` its threshold; the 1.28+ degenerate detector with its
    repeated-line check; the Reflector reads observations without anchor ids; markdown link labels kept in the
    actor's context; an empty reflection is a failed attempt; the Observer's history in 1.15+'s lines; in resource
    scope every unobserved message in a turn's history and other threads starting at the record's cursor; 1.31's
    buffering and activation). Settings that have their own option (start level, previous observations shown,
    estimator, thread sections) are set by ``om=v1_31``."""
    thread_sections: ThreadSections = "om_eval"
    """Resource scope: how a thread's new observations join its section. ``om_eval``: into the first section of
    the thread whose first ``Date:`` line matches theirs, else a new section; nothing for a thread the Observer
    wrote nothing for. ``mastra`` (1.10 and 1.31): only the thread's first section is looked at, merged into when
    it mentions the new first date anywhere; an empty section is appended for a thread with no observations."""

    retrieval: RetrievalMode = "off"
    """Retrieval mode (1.11+; 1.31's behaviour): each observation cycle is kept as an observation group naming the
    range of messages it came from, the actor reads the groups with their ranges, and it gets the ``recall`` tool to
    read raw messages (:mod:`om_eval.om.recall`). ``off``; ``resource``: the tool reads every thread of the
    resource (1.31's default for ``retrieval: true``); ``thread``: only the thread asked on."""
    retrieval_search: RetrievalSearch = "off"
    """Retrieval mode: offer the recall tool's ``mode="search"``. 1.31 offers it only with a vector store and an
    embedder; ``embedding`` ranks observation groups by the cosine similarity of their embeddings with the query's
    (``retrieval_embedding_model``, through litellm), ``bm25`` by BM25 over their words, offline
    (:mod:`om_eval.om.recall.search`)."""
    retrieval_embedding_model: str = DEFAULT_EMBEDDING_MODEL
    """With ``retrieval_search=embedding``: the litellm embedding model (``scripted/om-eval`` embeds offline, by
    hashed word counts)."""
    retrieval_instructions: str | None = None
    """Retrieval mode: more guidance about recall, added after the built-in instructions (1.31's
    ``retrieval.instructions``)."""

    def __post_init__(self) -> None:
        self.validate()

    # -- derived values -------------------------------------------------------------------------------------

    @property
    def async_observation_enabled(self) -> bool:
        """Async buffering is on unless disabled; in resource scope only with ``resource_buffering`` (1.10 has
        none there)."""
        buffer = self.observation.buffer_tokens
        if buffer is False:
            return False
        if self.scope == "resource":
            return self.resource_buffering
        return True

    @property
    def buffer_tokens(self) -> int | None:
        """Resolved async buffering interval in tokens, ``None`` when buffering is off."""
        if not self.async_observation_enabled:
            return None
        raw = self.observation.buffer_tokens
        return resolve_buffer_tokens(DEFAULT_BUFFER_TOKENS if raw is None else raw, self.observation.message_tokens)

    @property
    def observation_activation(self) -> float:
        raw = self.observation.buffer_activation
        return DEFAULT_OBSERVATION_ACTIVATION if raw is None else raw

    @property
    def observation_block_after(self) -> int | None:
        if not self.async_observation_enabled:
            return None
        raw = self.observation.block_after
        return resolve_block_after(DEFAULT_BLOCK_AFTER if raw is None else raw, self.observation.message_tokens)

    @property
    def retention_floor(self) -> float:
        """Message tokens kept in context after buffered observations are activated (default 6000 at 30k)."""
        return resolve_retention_floor(self.observation_activation, self.observation.message_tokens)

    @property
    def async_reflection_enabled(self) -> bool:
        """Reflection is buffered ahead of its threshold whenever observation buffering is on (1.10)."""
        return self.async_observation_enabled

    @property
    def reflection_activation(self) -> float:
        raw = self.reflection.buffer_activation
        return 0.5 if raw is None else raw

    @property
    def reflection_block_after(self) -> int:
        raw = self.reflection.block_after
        return resolve_block_after(DEFAULT_BLOCK_AFTER if raw is None else raw, self.reflection.observation_tokens)

    def reflection_start_level(self) -> int:
        """The first compression level, resolving ``auto`` from the reflector's model id."""
        level = self.reflection.start_level
        if level == "auto":
            return 2 if "gemini-2.5-flash" in self.reflection.model.model else 1
        return int(level)

    # -- validation -----------------------------------------------------------------------------------------

    def validate(self) -> None:
        """Check every option; raise :class:`ConfigError` naming the first bad one."""
        _check_choice("scope", self.scope, SCOPES)
        _check_choice("prompt_variant", self.prompt_variant, PROMPT_VARIANTS)
        _check_choice("context_layout", self.context_layout, CONTEXT_LAYOUTS)
        _check_choice("other_threads_order", self.other_threads_order, OTHER_THREADS_ORDERS)
        _check_choice("thread_id_hash", self.thread_id_hash, THREAD_ID_HASHES)
        _check_choice("reply_checks", self.reply_checks, REPLY_CHECKS)
        _check_choice("mastra_release", self.mastra_release, MASTRA_RELEASES)
        _check_choice("thread_sections", self.thread_sections, THREAD_SECTIONS)
        _check_choice("retrieval", self.retrieval, RETRIEVAL_MODES)
        _check_choice("retrieval_search", self.retrieval_search, RETRIEVAL_SEARCHES)
        if not isinstance(self.retrieval_embedding_model, str) or not self.retrieval_embedding_model.strip():
            _fail("retrieval_embedding_model", self.retrieval_embedding_model, "must be a litellm model id")
        if self.retrieval_search != "off" and self.retrieval == "off":
            _fail("retrieval_search", self.retrieval_search, "searches the recall tool's groups: set retrieval too")
        if self.retrieval_instructions is not None and not isinstance(self.retrieval_instructions, str):
            _fail("retrieval_instructions", self.retrieval_instructions, "must be text or null")
        if self.other_threads_limit is not None:
            _check_positive_int("other_threads_limit", self.other_threads_limit)
        for name in ("share_token_budget", "obscure_thread_ids", "boundary_delimiters", "resource_buffering"):
            if not isinstance(getattr(self, name), bool):
                _fail(name, getattr(self, name), "must be true or false")
        if self.resource_buffering and self.scope != "resource":
            _fail(
                "resource_buffering", True,
                "only applies to scope=resource (thread scope buffers unless observation.buffer_tokens=false)",
            )
        self._validate_observation()
        self._validate_reflection()
        if self.share_token_budget and self.async_observation_enabled:
            _fail(
                "share_token_budget",
                True,
                "requires async buffering off: also set observation.buffer_tokens=false",
            )

    def _validate_observation(self) -> None:
        obs = self.observation
        _check_positive_int("observation.message_tokens", obs.message_tokens)
        _check_positive_int("observation.max_tokens_per_batch", obs.max_tokens_per_batch)
        _check_choice("observation.batch_mode", obs.batch_mode, BATCH_MODES)
        _check_choice("observation.buffer_candidates", obs.buffer_candidates, BUFFER_CANDIDATES)
        _check_choice("observation.request_layout", obs.request_layout, REQUEST_LAYOUTS)
        for name in ("thread_title", "activation_counts_reminder", "buffer_ignores_new_reflection"):
            if not isinstance(getattr(obs, name), bool):
                _fail(f"observation.{name}", getattr(obs, name), "must be true or false")
        prev = obs.previous_observer_tokens
        if prev is not False and (prev is True or not _is_number(prev) or prev < 0 or int(prev) != prev):
            _fail("observation.previous_observer_tokens", prev, "must be false or a whole number >= 0")
        if obs.instruction is not None and not isinstance(obs.instruction, str):
            _fail("observation.instruction", obs.instruction, "must be text or null")
        obs.model.validate("observation.model")

        explicit_async = [
            (name, getattr(obs, name))
            for name in ("buffer_tokens", "buffer_activation", "block_after")
            if getattr(obs, name) not in (None, False)
        ]
        if self.scope == "resource" and explicit_async and not self.resource_buffering:
            name, value = explicit_async[0]
            _fail(
                f"observation.{name}",
                value,
                "async buffering is not available in resource scope in @mastra/memory 1.10; leave it unset, set "
                "observation.buffer_tokens=false, or turn on the om-eval extension resource_buffering=true",
            )
        buffer = obs.buffer_tokens
        if buffer is not None and buffer is not False:
            if buffer is True or not _is_number(buffer) or buffer <= 0:
                _fail("observation.buffer_tokens", buffer, "must be false, a ratio in (0, 1) or a token count > 0")
            resolved = resolve_buffer_tokens(buffer, obs.message_tokens)
            if resolved is not None and resolved >= obs.message_tokens:
                _fail(
                    "observation.buffer_tokens",
                    buffer,
                    f"resolves to {resolved} tokens; it must be less than observation.message_tokens "
                    f"({obs.message_tokens})",
                )
        activation = obs.buffer_activation
        if activation is not None and (not _is_number(activation) or activation <= 0 or 1 < activation < 1000):
            _fail(
                "observation.buffer_activation",
                activation,
                "allowed: a ratio in (0, 1] or an absolute retention floor >= 1000",
            )
        if obs.block_after is not None:
            if buffer is False:
                _fail("observation.block_after", obs.block_after, "needs async buffering on (buffer_tokens)")
            _check_block_after("observation.block_after", obs.block_after, obs.message_tokens)
        for name, value in (("buffer_activation", activation), ("block_after", obs.block_after)):
            if value is not None and buffer is False:
                _fail(f"observation.{name}", value, "needs async buffering on; observation.buffer_tokens is false")

    def _validate_reflection(self) -> None:
        ref = self.reflection
        _check_positive_int("reflection.observation_tokens", ref.observation_tokens)
        activation = ref.buffer_activation
        if activation is not None and (not _is_number(activation) or not 0 < activation <= 1):
            _fail("reflection.buffer_activation", activation, "allowed range is (0, 1]")
        if ref.block_after is not None:
            _check_block_after("reflection.block_after", ref.block_after, ref.observation_tokens)
        level = ref.start_level
        if level != "auto" and (
            isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= MAX_COMPRESSION_LEVEL
        ):
            _fail("reflection.start_level", level, f"allowed: 'auto' or a whole number 0-{MAX_COMPRESSION_LEVEL}")
        if not _is_number(ref.retry_after_growth) or ref.retry_after_growth <= 0:
            _fail("reflection.retry_after_growth", ref.retry_after_growth, "must be a number > 0")
        if ref.instruction is not None and not isinstance(ref.instruction, str):
            _fail("reflection.instruction", ref.instruction, "must be text or null")
        ref.model.validate("reflection.model")

    # -- conversion -----------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready dict of every setting, which :meth:`from_dict` turns back into an equal config."""
        plain: dict[str, Any] = _plain(dataclasses.asdict(self))
        return plain

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OMConfig:
        """Build a config from nested mappings; unknown keys raise :class:`ConfigError` naming them."""
        values = _take_known(cls, data, "")
        if "observation" in values:
            values["observation"] = _section(ObservationConfig, values["observation"], "observation")
        if "reflection" in values:
            values["reflection"] = _section(ReflectionConfig, values["reflection"], "reflection")
        return cls(**values)


def _check_block_after(option: str, value: Any, threshold: int) -> None:
    if not _is_number(value) or value < 1:
        _fail(option, value, "allowed: a multiplier in [1, 100) or an absolute token count >= 100")
    if resolve_block_after(value, threshold) < threshold:
        _fail(option, value, f"resolves below its threshold ({threshold}); it must be >= the threshold")


def _take_known(cls: type, data: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'} must be a mapping, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"unknown option {prefix}{unknown[0]}; known options of {prefix.rstrip('.') or 'config'}: "
            + ", ".join(sorted(known))
        )
    return dict(data)


def _section(cls: type, data: Any, name: str) -> Any:
    if isinstance(data, cls):
        return data
    values = _take_known(cls, data, name + ".")
    if "model" in values and not isinstance(values["model"], ModelSettings):
        if isinstance(values["model"], str):
            values["model"] = _model_from_id(cls().model, values["model"])
        else:
            values["model"] = ModelSettings(**_take_known(ModelSettings, values["model"], name + ".model."))
    return cls(**values)


def _model_from_id(default: ModelSettings, model: str) -> ModelSettings:
    """Settings for a model given by id: the default's sampling, but Gemini-only options only for Gemini.

    1.10 applies ``maxOutputTokens`` and thinking budgets only to its default model; most other providers
    reject a 100k output cap.
    """
    if model == default.model:
        return default
    return dataclasses.replace(default, model=model, max_output_tokens=None, provider_options={})


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
