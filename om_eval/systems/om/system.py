"""``memory=om``: Observational Memory (:mod:`om_eval.om`) as a system under test, the default one.

Ingest replays the history as the protocol of ``replay`` says (om-reference §6: sessions in date order, one thread
each, the question's haystack as the resource), through the engine's Observer and Reflector with the run's
``models.observer`` and ``models.reflector``. The question is asked on a fresh thread at its date: the actor reads
OM's context for that date (its observations, and in resource scope the other threads' unobserved tail), laid out
by OM's own actor prompt; in retrieval mode (``om.retrieval``) it may first read raw history with the recall tool.

Its runs keep the identities they had before the seam (:meth:`ObservationalMemorySystem.pinned_identity`): the
memory key is the engine's memory hash, and the run id hashes OM's prompt files, not the harness's actor layout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from om_eval.bench.answer import actor_prompt_hash, actor_prompts
from om_eval.bench.history import history_thread_id
from om_eval.bench.turn_costs import TurnRecorder
from om_eval.common.files import short_hash
from om_eval.common.run_identity import RUN_ID_ENGINE_REVISION
from om_eval.llm.request import canonical_json
from om_eval.memory import (
    Forecast,
    HistoryView,
    MemoryBuildError,
    MemoryContext,
    MemoryServices,
    MemorySystemBase,
    PinnedIdentity,
    QuestionView,
    TurnTrace,
)
from om_eval.memory.options import reject_unknown
from om_eval.om.config import ConfigError, ModelSettings, OMConfig
from om_eval.om.exact import PackError, PromptPack
from om_eval.om.mastra_prompts import MastraPrompts
from om_eval.om.memory import ObservationalMemory
from om_eval.om.prompts import RETRIEVAL_PROMPT_FILES, prompt_set_hash, text_hash
from om_eval.om.revision import ENGINE_REVISION
from om_eval.om.rules import rules_for
from om_eval.om.tokens import TokenCounter, make_counter
from om_eval.systems.om.answer import actor_messages, raw_tail_tokens
from om_eval.systems.om.identity import MEMORY_PROMPTS, memory_hash
from om_eval.systems.om.recall import RecallTools
from om_eval.systems.om.replay import ReplayConfig, ReplayStats, replay_history, session_messages
from om_eval.systems.om.trace import turn_statuses

#: The options: the engine's config (an :class:`OMConfig` or its dict), the replay protocol (a
#: :class:`ReplayConfig` or its dict), Mastra's own prompts (``prompt=mastra_exact``) and the token estimator.
_OPTIONS = ("config", "replay", "prompts", "token_estimator")
#: The forecast's assumptions: history tokens per observation token, and the Observer's and Reflector's own
#: instructions (tokens).
TYPICAL_COMPRESSION = 6.0
OBSERVER_PROMPT_TOKENS = 4_000
REFLECTOR_PROMPT_TOKENS = 5_000
#: Where a snapshot keeps the replay's statistics beside the engine's own state.
STATS_KEY = "replay_stats"


class ReflectionFailed(MemoryBuildError):
    """A memory kept observations a failed reflection should have condensed: not the memory its config asks for."""


@dataclass
class OMBuild:
    """A built memory with what its replay did; what answering rendered from it is kept beside it."""

    memory: ObservationalMemory
    stats: ReplayStats
    renders: dict[Any, list[dict[str, str]]] = field(default_factory=dict)
    """The memory's messages per (question date, thread), shared by the questions that ask of this build."""


class ObservationalMemorySystem(MemorySystemBase):
    """Observational Memory, replayed over a history and read at the question's date."""

    name = "om"
    records_turns = True
    uses_observer_model = False  # its models are its own settings (own_models), not the seam's default observer
    config_groups = ("om", "prompt", "baseline")  # baseline=none chooses OM over a reader
    options_group = "om"  # its options are its own config groups, as before the seam
    about = "answered through Observational Memory"

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return "OM"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        reject_unknown(self.name, options, _OPTIONS)
        config, replay = options.get("config"), options.get("replay")
        self.config = config if isinstance(config, OMConfig) else OMConfig.from_dict(config or {})
        self.replay = replay if isinstance(replay, ReplayConfig) else ReplayConfig(**(replay or {}))
        prompts = options.get("prompts")
        if prompts is not None and not isinstance(prompts, MastraPrompts):
            raise ConfigError("memory option prompts must be a MastraPrompts (prompt=mastra_exact) or None",
                              option="prompt")
        self.prompts: MastraPrompts | None = prompts
        self.token_estimator = str(options.get("token_estimator") or "tiktoken")
        try:
            self.counter: TokenCounter = make_counter(self.token_estimator)
        except ValueError as error:
            raise ConfigError(f"om.token_estimator={self.token_estimator!r} is invalid: {error}",
                              option="om.token_estimator") from None
        self._pack: PromptPack | None = None
        super().__init__({})

    # -- identity ---------------------------------------------------------------------------------------------

    def identity(self) -> Mapping[str, Any]:
        return {"om": self.prompts.identity if self.prompts is not None else prompt_set_hash(MEMORY_PROMPTS)}

    def pinned_identity(self) -> PinnedIdentity:
        prompts: dict[str, Any] = {"om": self.prompts.identity if self.prompts is not None else prompt_set_hash(),
                                   "actor": actor_prompt_hash()}
        if self.config.retrieval != "off":  # the tool's words, only then
            prompts["recall"] = prompt_set_hash(RETRIEVAL_PROMPT_FILES)
        stored = self.prompts.provenance() if self.prompts is not None else {
            "om": prompt_set_hash(), "variant": self.config.prompt_variant}
        # An engine that builds other memories from the same input gives other answers: another run.
        extra = {"engine_revision": ENGINE_REVISION} if ENGINE_REVISION != RUN_ID_ENGINE_REVISION else {}
        key = memory_hash(self.config, self.replay, self.counter.name,
                          self.prompts.identity if self.prompts is not None else None)
        return PinnedIdentity(prompts, stored, key, per_history=True, run_id_extra=extra)

    def budget(self) -> Mapping[str, Any]:
        return {"observation_tokens": self.config.reflection.observation_tokens,
                "message_tokens": self.config.observation.message_tokens}

    def own_models(self) -> Mapping[str, ModelSettings]:
        models = {"models.observer": self.config.observation.model, "models.reflector": self.config.reflection.model}
        if self.config.retrieval_search == "embedding":
            models["om.retrieval_embedding_model"] = ModelSettings(
                model=self.config.retrieval_embedding_model, temperature=None, max_output_tokens=None)
        return models

    def forecast(self, history_tokens: int) -> Forecast:
        """Observation every ``message_tokens`` of history (all of it with a final flush), about sixfold
        compression, a reflection every ``observation_tokens`` of observations; the actor reads at most the
        reflection threshold of observations and the unobserved rest."""
        observation, reflection = self.config.observation, self.config.reflection
        flush = self.replay.final_flush
        calls = max(1, history_tokens // observation.message_tokens) if (
            history_tokens >= observation.message_tokens or flush) else 0
        observed = history_tokens if flush else calls * observation.message_tokens
        observations = observed / TYPICAL_COMPRESSION
        previous = min(observations / 2, observation.previous_observer_tokens or observations / 2)
        reflections = int(observations // reflection.observation_tokens)
        return Forecast(
            stages={"observer": (calls, int(observed + calls * (OBSERVER_PROMPT_TOKENS + previous)), int(observations)),
                    "reflector": (reflections, reflections * (reflection.observation_tokens + REFLECTOR_PROMPT_TOKENS),
                                  reflections * reflection.observation_tokens // 2)},
            shown_tokens=int(min(observations, reflection.observation_tokens) + (history_tokens - observed)))

    def prepare(self) -> None:
        """Load ``prompt=mastra_exact``'s pack before the first question (a pack that cannot be had fails the run
        at once, not each question)."""
        self.prompt_pack()

    def prompt_pack(self) -> PromptPack | None:
        """Mastra's pack, loaded once (from the cache, else rendered: Node and the registry); ``None`` for om-eval's
        own words."""
        choice = self.prompts
        if choice is None:
            return None
        if self._pack is None:
            try:
                pack = choice.load()
            except PackError as error:
                raise ConfigError(f"prompt=mastra_exact cannot be used: {error}", option="prompt") from None
            if pack.identity != choice.identity:  # the pins hold the digest, so this cannot drift silently
                raise ConfigError(f"the @mastra/memory {choice.version} pack is {pack.identity}, the run id was made "
                                  f"for {choice.identity}", option="prompt")
            self._pack = pack
        return self._pack

    # -- building -----------------------------------------------------------------------------------------------

    async def ingest(self, history: HistoryView, services: MemoryServices) -> OMBuild:
        recorder = TurnRecorder(self.counter, actor_prompts()["instructions"], self.config.context_layout) \
            if services.recording_turns else None
        memory, stats = await replay_history(history, self.config, observer=services.chat, replay=self.replay,
                                             token_counter=self.counter, prompts=self.prompt_pack(), turns=recorder)
        if recorder is not None:
            services.record_table(recorder.table)
        if stats.reflection_errors and rules_for(self.config).failed_reflection != "skip_while_unchanged":
            # Not the memory the config asks for: the question fails and is retried on resume from a fresh build
            # (good replies come back from the cache); nothing of it is kept.
            build = OMBuild(memory, stats)
            raise ReflectionFailed(f"reflection failed ({len(stats.reflection_errors)}x), so the memory is not the "
                                   f"configured one: {stats.reflection_errors[0]}", self.build_events(build),
                                   self.build_figures(build))
        return OMBuild(memory, stats)

    def snapshot(self, memory: OMBuild) -> dict[str, Any]:
        """The engine's snapshot (what ``om-eval show`` reads), with the replay's statistics under ``replay_stats``."""
        return {**memory.memory.snapshot(), STATS_KEY: asdict(memory.stats)}

    async def restore(self, data: Any, services: MemoryServices) -> OMBuild:
        if not isinstance(data, Mapping) or STATS_KEY not in data:
            raise ValueError(f"the snapshot has no {STATS_KEY} (it predates OM behind the memory seam)")
        engine = {key: value for key, value in data.items() if key != STATS_KEY}
        memory = ObservationalMemory.from_snapshot(engine, observer=services.chat, reflector=None,
                                                   token_counter=self.counter, prompts=self.prompt_pack())
        stats = dict(data[STATS_KEY])
        return OMBuild(memory, ReplayStats(**{**stats, "reflection_errors": list(stats["reflection_errors"])}))

    def memory_digest(self, memory: OMBuild) -> str:
        """The engine's state a reader could change: its threads, their observations and what is still queued (an
        observation or reflection moves these too; answering renders into :attr:`OMBuild.renders`, which is no part
        of the memory)."""
        om = memory.memory
        if om.resource_scope:  # one record for every thread
            state: list[Any] = [text_hash(om.record().active_observations), om.pending_tokens()]
        else:
            state = [[t, text_hash(om.record(t).active_observations), om.pending_tokens(t)] for t in om.thread_ids]
        return short_hash(canonical_json([len(om.thread_ids), state]))

    def build_figures(self, memory: OMBuild) -> Mapping[str, Any]:
        stats = memory.stats
        return {"observer_calls": stats.observer_calls, "reflector_calls": stats.reflector_calls,
                "observations": stats.observations, "reflections": stats.reflections,
                "history_tokens": stats.history_tokens, "observation_tokens": stats.observation_tokens,
                "pending_tokens": stats.pending_tokens, "compression_ratio": stats.compression_ratio,
                "observed_message_tokens": stats.observed_message_tokens or None,
                "observation_cycles": stats.observation_cycles if stats.observed_message_tokens else None}

    def build_events(self, memory: OMBuild) -> list[dict[str, Any]]:
        rows = []
        for seq, event in enumerate(memory.memory.events):
            row = asdict(event)
            row["seq"] = seq
            row["thread_count"] = len(row.pop("thread_ids"))
            row["levels"] = json.dumps(list(row["levels"]))
            rows.append(row)
        return rows

    # -- answering ----------------------------------------------------------------------------------------------

    async def context(self, memory: OMBuild, question: QuestionView, services: MemoryServices) -> MemoryContext:
        messages = actor_messages(memory.memory, question, memory.renders)
        tools = None
        if self.config.retrieval != "off":
            tools = await RecallTools.open(memory.memory, question, services.chat)
        return MemoryContext(messages=tuple(messages), injected="".join(m["content"] for m in messages[1:-1]),
                             tools=tools, detail={"raw_tail_tokens": raw_tail_tokens(memory.memory, question)})

    def trace_turns(self, memory: OMBuild, history: HistoryView, turn_ids: Sequence[str]) -> Mapping[str, TurnTrace]:
        """Where each turn went: ``in_raw_tail`` (never observed), ``in_memory`` (observation lines carry it),
        ``lost_at_reflection`` (an earlier generation's lines did) or ``not_captured``; lines are matched by shared
        content words (:func:`~om_eval.systems.om.trace.turn_statuses`), a reading aid, not a metric."""
        om = memory.memory
        wanted = set(turn_ids)
        unobserved = {m.id for m in om.unobserved_messages()}
        histories = [om.generations()] if om.resource_scope else [om.generations(t) for t in om.thread_ids]
        active = "\n".join(generations[-1].active_observations for generations in histories)
        earlier = [g.active_observations for generations in histories for g in generations[:-1]]
        shown_raw = not om.config.obscure_thread_ids
        asked = []
        for session in history.sessions:
            if not any(turn.id in wanted for turn in session.turns):
                continue  # most sessions hold no turn asked about: their messages are not rebuilt
            thread = history_thread_id(history.id, session.index, shown_raw=shown_raw)
            messages = {m.id.rsplit(":", 1)[-1]: m for m in session_messages(session, self.replay, thread)}
            asked += [(turn.id, messages.get(f"{position:04d}"), turn.content)
                      for position, turn in enumerate(session.turns) if turn.id in wanted]
        # All at once: each earlier generation is indexed once for every turn, one generation at a time.
        statuses = turn_statuses(asked, unobserved, active, earlier)
        return {str(turn_id): TurnTrace(status, tuple(lines)) for turn_id, (status, lines) in statuses.items()}
