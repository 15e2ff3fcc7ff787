"""Replay one question's haystack through Observational Memory (om-reference §6.4, §1.16).

The default protocol is the one Mastra used for its published LongMemEval scores: resource scope, one thread per
session in date order, obscured thread ids, messages timed at session date + 5 s per turn, user/assistant pairs
fed one at a time with a threshold-checked observe after each pair (so pending tokens carry across sessions),
reflection inside observe, and no final flush. Each choice is an option, so other protocols can be compared.

Nothing from the benchmark's answer key reaches the memory: the replay is given the history's gold-free view
(:func:`~om_eval.memory.view.history_view`: no answer, no evidence flags), thread ids are derived from (history,
index) (and hashed with ``om.obscure_thread_ids``, as Mastra's harness does), and the question date is never
ingested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from om_eval.bench.history import history_thread_id, turn_messages
from om_eval.bench.turn_costs import TurnRecorder
from om_eval.data.records import HaystackSession, Question
from om_eval.memory.view import HistoryView, QuestionView, SessionView, history_view
from om_eval.om.config import ConfigError, OMConfig, option_error
from om_eval.om.exact.pack import PromptPack
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel
from om_eval.om.outcomes import ObservationOutcome
from om_eval.om.records import Message
from om_eval.om.tokens import TokenCounter, default_counter
from om_eval.systems.om.accounting import (
    PENDING_ACCOUNTINGS,
    PendingAccounting,
    PendingCounter,
)


@dataclass(frozen=True)
class ReplayConfig:
    """How a haystack is fed into memory. Defaults reproduce Mastra's published protocol."""

    session_order: Literal["date", "file"] = "date"
    """``date``: oldest session first (stable for ties); ``file``: the order of the haystack lists."""
    unit: Literal["pair", "message", "session"] = "pair"
    """What is added between two threshold checks: a user/assistant pair, one message, or a whole session."""
    turn_spacing_seconds: int = 5
    """Message time = session date + this many seconds x turn index (skipped turns keep their index)."""
    skip_empty_turns: bool = True
    """Leave out turns whose text is empty or only whitespace (om-eval; 1.10 keeps whitespace-only ones)."""
    final_flush: bool = False
    """Observe whatever is still pending after the last session (Mastra's published runs did not)."""
    scope: Literal["resource", "thread"] = "resource"
    """Forced onto the OM config: one memory across sessions, or one per session."""
    buffering: bool = False
    """Run 1.10's async buffering (buffer ahead, activate at the threshold, buffered reflection) with the OM
    config's buffering options (1.10 defaults when unset). Off (the default) is the published, synchronous protocol.
    1.10 has no async buffering in resource scope; with ``scope="resource"`` this turns on om-eval's extension
    (``OMConfig.resource_buffering``)."""
    pending_accounting: PendingAccounting = "exact"
    """What counts toward the observation threshold after each unit (:mod:`om_eval.systems.om.accounting`): ``exact``
    (om-eval), ``mastra_dev`` (the code behind Mastra's published runs) or ``mastra_step`` (1.1-1.31). Buffering
    needs ``exact``: the engine's own per-step pipeline decides there."""

    def __post_init__(self) -> None:
        checks = (
            ("session_order", self.session_order, ("date", "file")),
            ("unit", self.unit, ("pair", "message", "session")),
            ("scope", self.scope, ("resource", "thread")),
            ("pending_accounting", self.pending_accounting, PENDING_ACCOUNTINGS),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise option_error(f"replay.{name}", f"={value!r} is invalid: allowed values are {', '.join(allowed)}")
        if self.buffering is not False and self.buffering is not True:
            raise option_error("replay.buffering", f"={self.buffering!r} is invalid: must be true or false")
        if self.buffering and self.pending_accounting != "exact":
            raise option_error("replay.pending_accounting", f"={self.pending_accounting} needs replay.buffering=false: "
                               "with buffering the engine's per-step pipeline decides when to observe")
        if self.turn_spacing_seconds < 0:
            raise option_error("replay.turn_spacing_seconds",
                               f"={self.turn_spacing_seconds!r} is invalid: must be >= 0")

    def engine_settings(self) -> dict[str, Any]:
        """The OM engine settings the replay decides (the one place that does): its scope, and om-eval's resource-scope
        buffering, which ``buffering`` alone switches on (1.10 has none in resource scope)."""
        return {"scope": self.scope, "resource_buffering": self.buffering and self.scope == "resource"}


def session_messages(session: HaystackSession | SessionView, config: ReplayConfig, thread_id: str | None = None
                     ) -> list[Message]:
    """The session's turns as OM messages, timed and filtered as ``config`` says
    (:func:`~om_eval.bench.history.turn_messages`)."""
    return turn_messages(session, thread_id, spacing_seconds=config.turn_spacing_seconds,
                         skip_empty=config.skip_empty_turns)


def haystack_messages(question: Question, config: ReplayConfig | None = None) -> list[Message]:
    """The question's haystack as the replay feeds it (sessions in order, turns timed): what an agent lived
    through."""
    config = config or ReplayConfig()
    return [m for session in _ordered(question, config) for m in session_messages(session, config)]


def ingest_units(messages: list[Message], unit: str) -> Iterator[list[Message]]:
    """Split one session's messages into the units added between threshold checks."""
    if unit == "session":
        if messages:
            yield messages
    elif unit == "message":
        yield from ([m] for m in messages)
    else:
        for start in range(0, len(messages), 2):
            yield messages[start : start + 2]


@dataclass
class ReplayStats:
    """What the replay did, for reports."""

    sessions: int = 0
    messages: int = 0
    history_tokens: int = 0
    """Tokens of every ingested message (the raw history OM had to compress)."""
    observe_checks: int = 0
    observations: int = 0
    reflections: int = 0
    observer_calls: int = 0
    reflector_calls: int = 0
    pending_tokens: int = 0
    observation_tokens: int = 0
    buffered_chunks: int = 0
    """Chunks stored by async buffering passes (buffering on only)."""
    activations: int = 0
    """Observations added by activating buffered chunks; counted in ``observations`` too."""
    observation_cycles: int = 0
    """Times observation ran (one cycle may make several Observer calls, one per batch); ``observations``
    counts the batches applied."""
    observed_message_tokens: int = 0
    """Message tokens the Observer was given, summed over its calls (divided by ``observer_calls``: tokens per
    observer call)."""
    reflection_errors: list[str] = field(default_factory=list)

    def count(self, outcome: ObservationOutcome) -> None:
        """One observation cycle; a failed reflection inside it must be seen."""
        self.observation_cycles += 1
        if outcome.reflection_error:
            self.reflection_errors.append(outcome.reflection_error)

    @property
    def compression_ratio(self) -> float | None:
        """Raw history tokens per observation token (None with no observations)."""
        return self.history_tokens / self.observation_tokens if self.observation_tokens else None


def _ordered(history: Question | HistoryView, config: ReplayConfig) -> list[Any]:
    return history.sessions_by_date() if config.session_order == "date" else list(history.sessions)


async def replay_question(question: Question, om_config: OMConfig, **options: Any) -> tuple[ObservationalMemory,
                                                                                         ReplayStats]:
    """:func:`replay_history` of ``question``'s gold-free view (:func:`~om_eval.memory.view.history_view`)."""
    return await replay_history(history_view(question), om_config, **options)


async def replay_history(
    history: HistoryView,
    om_config: OMConfig,
    *,
    observer: ChatModel,
    reflector: ChatModel | None = None,
    replay: ReplayConfig | None = None,
    token_counter: TokenCounter | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    prompts: PromptPack | None = None,
    turns: TurnRecorder | None = None,
) -> tuple[ObservationalMemory, ReplayStats]:
    """Feed ``history`` into a fresh memory and return it with statistics.

    ``on_progress(done, total)`` is called after each session. ``prompts``: the pack of ``prompt=mastra_exact``.
    ``turns`` records what an agent on this memory would send at each user turn (it changes nothing).
    """
    replay = replay or ReplayConfig()
    observation = om_config.observation
    if not replay.buffering:
        # The published protocol is synchronous: drop every async option (resource scope refuses them anyway).
        observation = replace(observation, buffer_tokens=False, buffer_activation=None, block_after=None)
    elif observation.buffer_tokens is False:
        observation = replace(observation, buffer_tokens=None)  # 1.10's default interval
    try:
        config = replace(om_config, observation=observation, **replay.engine_settings())
    except ConfigError as error:  # e.g. share_token_budget with buffering: say which replay options led there
        raise ConfigError(
            f"replay.scope={replay.scope} replay.buffering={str(replay.buffering).lower()} cannot be used with this "
            f"OM config: {error}"
        ) from error
    counter = token_counter or default_counter()
    memory = ObservationalMemory(
        config, observer=observer, reflector=reflector, resource_id=f"resource_{history.id}",
        token_counter=counter, prompts=prompts,
    )
    stats = ReplayStats()
    sessions = _ordered(history, replay)
    accounting = PendingCounter(replay.pending_accounting)
    last_thread = None
    shown_raw = not config.obscure_thread_ids
    for done, session in enumerate(sessions, start=1):
        last_thread = history_thread_id(history.id, session.index, shown_raw=shown_raw)
        messages = session_messages(session, replay, last_thread)
        stats.sessions += 1
        stats.messages += len(messages)
        for unit in ingest_units(messages, replay.unit):
            memory.add_messages(unit)
            if turns is not None:
                turns.unit_added(memory, last_thread, unit)
            stats.history_tokens += sum(memory.message_tokens(m.id) for m in unit)
            stats.observe_checks += 1
            for outcome in await check_unit(memory, last_thread, buffering=replay.buffering, accounting=accounting):
                stats.count(outcome)
            if turns is not None:
                turns.after_unit(memory)
        if on_progress is not None:
            on_progress(done, len(sessions))
    for outcome in await check_question_turn(memory, history_eval_thread_id(history.id), buffering=replay.buffering,
                                             accounting=accounting):
        stats.count(outcome)
    if replay.final_flush:
        threads = [None] if replay.scope == "resource" else [
            history_thread_id(history.id, s.index, shown_raw=shown_raw) for s in sessions]
        for thread in threads:
            flushed = await memory.observe(thread, force=True)
            if flushed is not None:
                stats.count(flushed)
    if turns is not None:
        turns.after_unit(memory)  # what the question's turn and a final flush spent, charged to the last turn
    _finish_stats(memory, stats, replay.scope)
    return memory, stats


async def check_unit(
    memory: ObservationalMemory, thread_id: str, *, buffering: bool, accounting: PendingCounter
) -> list[ObservationOutcome]:
    """The checks after one replay unit, as one agent turn of 1.x: with buffering its first step
    (:meth:`~ObservationalMemory.start_turn`), then the threshold check of a later step under ``accounting``'s
    reading. Returns what added observations (activations and observations), in order."""
    outcomes = [await memory.start_turn(thread_id)] if buffering else []
    if accounting.reading == "exact":
        outcomes.append(await memory.observe(thread_id))
    else:
        decision = accounting.after_unit(memory, thread_id)
        if decision.due:
            outcomes.append(await memory.observe(thread_id, force=True, select_all=decision.select_all))
    return [o for o in outcomes if o is not None]


async def check_question_turn(
    memory: ObservationalMemory, thread_id: str, *, buffering: bool, accounting: PendingCounter
) -> list[ObservationOutcome]:
    """Step 0 of the turn that asks the question on its fresh thread ``thread_id``, before the actor's call.

    With buffering, 1.x's first-step pipeline (activation once pending tokens reach the threshold). Without,
    only 1.31 does anything: it runs threshold observation at step 0 too (#16523), and in resource scope its
    turn history holds every unobserved message, so the question's turn can observe what the haystack left.
    """
    if buffering:
        outcome = await memory.start_turn(thread_id)
        return [outcome] if outcome is not None else []
    if not memory.rules.observes_at_first_step:
        return []
    return await check_unit(memory, thread_id, buffering=False, accounting=accounting)


def eval_thread_id(question: Question) -> str:
    """The fresh thread the question is asked on (never part of the replayed memory). Questions that share a
    haystack share it too: its first step belongs to the shared build, and no question's words enter the memory."""
    return history_eval_thread_id(question.memory_owner)


#: A question as the benchmark holds it, or as a memory system is shown it (the same fields are read).
Asked = Question | QuestionView


def asked_thread_id(question: Asked) -> str:
    """The fresh thread ``question`` is asked on (:func:`eval_thread_id`)."""
    if isinstance(question, QuestionView):
        return history_eval_thread_id(question.history_id)
    return eval_thread_id(question)


def history_eval_thread_id(history_id: str) -> str:
    """:func:`eval_thread_id` of the questions asked of history ``history_id``."""
    return f"eval:{history_id}"


def _finish_stats(memory: ObservationalMemory, stats: ReplayStats, scope: str) -> None:
    stats.observations = sum(e.kind in ("observation", "observation_activated") for e in memory.events)
    stats.reflections = sum(e.kind in ("reflection", "reflection_activated") for e in memory.events)
    stats.buffered_chunks = sum(e.kind == "observation_buffered" and '"stored": true' in e.detail
                                for e in memory.events)
    stats.activations = sum(e.kind == "observation_activated" for e in memory.events)
    stats.observer_calls = sum(e.calls for e in memory.events if e.kind.startswith("observation"))
    stats.reflector_calls = sum(e.calls for e in memory.events if e.kind.startswith("reflection"))
    stats.observed_message_tokens = sum(e.message_tokens for e in memory.events if e.kind == "observation")
    if scope == "resource":
        stats.pending_tokens = memory.pending_tokens()
        stats.observation_tokens = memory.record().observation_token_count
    else:
        stats.pending_tokens = sum(memory.pending_tokens(t) for t in memory.thread_ids)
        stats.observation_tokens = sum(memory.record(t).observation_token_count for t in memory.thread_ids)
