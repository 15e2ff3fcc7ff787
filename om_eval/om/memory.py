"""The Observational Memory engine: ingest, observe (synchronously or through async buffers), reflect, build the
actor's context.

One :class:`ObservationalMemory` holds the memory of one *resource* (a user). In thread scope each thread has
its own record; in resource scope one record spans all threads, with observations kept in per-thread sections.

Bookkeeping is incremental: each message's tokens are counted once when it arrives, and pending totals are kept
as running sums, so checking the threshold after every message costs O(1) (om-reference §1.16 asks for a
threshold-checked observe after every ingested pair). Nothing is marked observed until the Observer's answer is
accepted, so a failed or degenerate call leaves the memory exactly as it was.

Async buffering (om-reference §1.7-§1.11) is run deterministically. In 1.10 a buffering pass starts in the
background when its trigger fires and activation waits for it (up to 30 s) before swapping chunks in. Here a pass
runs to completion inside the :meth:`ObservationalMemory.start_turn` or :meth:`ObservationalMemory.observe` call
whose check fired it, before the caller adds the next message. An agent turn of 1.x has a first step (activation
at the threshold, the reflection check, a buffering pass: :meth:`~ObservationalMemory.start_turn`) and later steps
(a buffering pass, activation or, past ``block_after``, synchronous observation:
:meth:`~ObservationalMemory.observe`); a replay runs both for each unit, as
``tests/om/test_mastra_engine_differential.py`` drives the real package. That is the schedule 1.10 follows whenever
the Observer answers before the next message arrives (always the case in a replay, where nothing else is
waiting); only wall-clock overlap is lost, never an ordering decision: the trigger sees the same pending tokens,
the pass sees the same candidate messages, and activation sees every chunk whose pass had started, exactly as
after 1.10's wait. The same holds for buffered reflection.

Buffering in resource scope is an om-eval extension (``OMConfig.resource_buffering``; 1.10 refuses it): the
resource's pending tokens drive the same math, a pass observes all threads with the multi-thread Observer call,
and each chunk keeps a part per thread that activation merges into that thread's section.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from om_eval.common.secrets import redact_secrets
from om_eval.om.config import OMConfig
from om_eval.om.context import (
    ContextInputs,
    actor_memory_messages,
    format_other_conversations,
)
from om_eval.om.dates import format_boundary
from om_eval.om.history_lines import format_history_lines, format_thread_lines
from om_eval.om.model import ChatModel, ModelReply
from om_eval.om.observer import (
    ObserverCall,
    ObserverRequest,
    ThreadHints,
    call_observer,
    format_messages,
    format_thread_blocks,
    render_observer_request,
    render_observer_system_prompt,
)
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    MultiThreadOutput,
    ObserverOutput,
    ReplyReading,
)
from om_eval.om.records import (
    BufferedChunk,
    Message,
    OMRecord,
    ThreadChunk,
    ThreadState,
)
from om_eval.om.reflector import ReflectionResult, reflect_observations
from om_eval.om.threads import (
    ThreadLoad,
    merge_thread_section_as_mastra,
    obscure_thread_id,
    pack_batches,
    replace_or_append_thread_section,
    select_threads,
    strip_thread_tags,
)
from om_eval.om.thresholds import (
    REMINDER_TOKENS_1_10,
    buffer_has_enough,
    dynamic_message_threshold,
    js_round,
    observation_due,
    plan_activation,
    reflection_buffer_due,
    reflection_due,
    reflection_slice,
    select_activation_boundary,
    should_trigger_async_buffer,
)
from om_eval.om.tokens import (
    TOKENS_PER_CONVERSATION,
    TokenCounter,
    count_message,
    default_counter,
)
from om_eval.om.truncation import prepare_previous_observations

SNAPSHOT_FORMAT = "om-eval/memory@1"


@dataclass(frozen=True)
class OMEvent:
    """Something the engine did, for logs and the run store."""

    kind: str
    """``observation``, ``observation_failed``, ``reflection``, ``reflection_unproductive``,
    ``reflection_failed``, ``reflection_deferred``; with async buffering also ``observation_buffered``,
    ``observation_buffer_failed``, ``observation_activated``, ``reflection_buffered`` and
    ``reflection_activated`` (and, in resource scope, ``reflection_buffer_discarded`` when the lines a buffered
    reflection condensed changed before it could be activated); ``observation_suspect`` when a kept Observer
    reply looked like a repeat of earlier observations (:mod:`om_eval.om.suspect`; ``detail`` says how much and
    quotes a line); ``messages_dropped`` when, with ``observation.buffer_candidates="after_cursor"`` (1.10's rule),
    the observation cursor passed messages no chunk covered. Buffering events carry their chunk figures as JSON in
    ``detail``."""
    at: datetime
    record_id: str
    generation: int
    thread_ids: tuple[str, ...] = ()
    message_tokens: int = 0
    observation_tokens_before: int = 0
    observation_tokens_after: int = 0
    level: int | None = None
    levels: tuple[int, ...] = ()
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    detail: str = ""


@dataclass(frozen=True)
class ObservationOutcome:
    """What one observation pass did."""

    thread_ids: tuple[str, ...]
    batches: tuple[tuple[str, ...], ...]
    batch_tokens: tuple[int, ...]
    message_tokens: int
    observation_tokens: int
    reflection: ReflectionOutcome | None = None
    reflection_error: str | None = None
    """Set when the reflection that followed failed; the observation itself was saved and memory kept."""


@dataclass(frozen=True)
class ReflectionOutcome:
    """What one reflection did. ``applied`` is False when the result was not good enough to keep."""

    applied: bool
    result: ReflectionResult
    generation: int


@dataclass(frozen=True)
class ActorContext:
    """The messages an actor receives: memory messages, then the thread's unobserved tail."""

    memory_messages: list[dict[str, str]]
    tail_messages: list[dict[str, str]]

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.memory_messages, *self.tail_messages]


#: 1.31's line between the active observations and the buffered chunks in a buffering call's previous observations.
BUFFERED_MARK = "\n\n--- BUFFERED (pending activation) ---\n\n"


def _canonical(message: Message) -> str:
    """A message's identity for duplicate checks (lists and tuples of parts compare equal)."""
    return json.dumps(message.to_dict(), sort_keys=True, default=str)


def _usage(replies: Iterable[ModelReply]) -> tuple[int, int, int]:
    replies = list(replies)
    return (
        len(replies),
        sum(r.prompt_tokens or 0 for r in replies),
        sum(r.completion_tokens or 0 for r in replies),
    )


#: Record metadata key: digest of the lines a resource-scope buffered reflection condensed.
_REFLECTED_PREFIX = "buffered_reflection_prefix_sha256"


def _stored_config(config: OMConfig) -> dict[str, Any]:
    """The config as records and snapshots keep it: provider options may carry credentials, never stored."""
    return redact_secrets(config.to_dict())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _align_to_sections(lines: Sequence[str], count: int) -> int:
    """Move the end of a buffered-reflection slice onto the end of a ``<thread>`` section (resource scope).

    The slice ends at the last ``</thread>`` line within its first ``count`` lines, or, when the first section
    alone is longer, at that section's end; text with no sections keeps ``count``. Cutting a section in two
    would leave its tail without an opening tag after activation.
    """
    ends = [index + 1 for index, line in enumerate(lines) if line.strip() == "</thread>"]
    if not ends:
        return count
    within = [end for end in ends if end <= count]
    return within[-1] if within else ends[0]


@dataclass
class _ThreadQueue:
    """Unobserved messages of one thread, in arrival order, with their token sum."""

    messages: list[Message] = field(default_factory=list)
    tokens: int = 0


class ObservationalMemory:
    """Observational Memory for one resource.

    Args:
        config: the OM configuration.
        observer: model used by the Observer.
        reflector: model used by the Reflector (defaults to ``observer``).
        resource_id: the resource (user) this memory belongs to.
        token_counter: the token estimator (default tiktoken ``o200k_base``); its name is recorded.
        clock: returns "now" for record timestamps; by default the time of the latest message, which keeps
            replays deterministic.
        on_event: called with every :class:`OMEvent` as it happens.
    """

    def __init__(
        self,
        config: OMConfig,
        *,
        observer: ChatModel,
        reflector: ChatModel | None = None,
        resource_id: str = "default",
        token_counter: TokenCounter | None = None,
        clock: Callable[[], datetime] | None = None,
        on_event: Callable[[OMEvent], None] | None = None,
    ) -> None:
        self.config = config
        self.observer = observer
        self.reflector = reflector or observer
        self.resource_id = resource_id
        self.counter = token_counter or default_counter()
        self._clock = clock
        self._on_event = on_event
        self.events: list[OMEvent] = []
        self._messages: dict[str, Message] = {}
        self._message_tokens: dict[str, int] = {}
        self._queues: dict[str, _ThreadQueue] = {}
        self._threads: dict[str, ThreadState] = {}
        self._generations: dict[str, list[OMRecord]] = {}
        self._reflection_hold: dict[str, int] = {}
        # 1.31 (keeps_going_after_failed_reflection): observation tokens at which threshold reflection is skipped.
        self._reflection_suppressed: dict[str, int] = {}
        self._reflection_failures: dict[str, int] = {}
        self._observed_ids: set[str] = set()
        self._latest_time: datetime | None = None
        self._lock = asyncio.Lock()
        self._prefix_check: tuple[tuple[str, str, int], bool] | None = None
        self._buffer_cursor: dict[str, datetime] = {}
        self._reminded: set[str] = set()  # keys whose turn began with observations (1.10 showed its reminder)
        # 1.31: pending tokens as its last step counted them (its record's pendingMessageTokens); activation
        # sizes a swap by this stale figure. Process state like the two above: a restored memory starts without.
        self._step_pending: dict[str, int] = {}
        self._turn_boundary: dict[str, int] = {}  # 1.31: where a pass of this turn started (its turn's copy)

    # -- identity and lookups -------------------------------------------------------------------------------

    @property
    def resource_scope(self) -> bool:
        return self.config.scope == "resource"

    @property
    def _steps_as_v1_31(self) -> bool:
        """Buffered steps follow 1.31 (thread scope; resource-scope buffering is om-eval's 1.10-based extension)."""
        return self.config.follows_v1_31 and not self.resource_scope

    def _key(self, thread_id: str | None) -> str:
        if self.resource_scope:
            return self.resource_id
        if thread_id is None:
            raise ValueError("thread scope needs a thread_id: pass the thread whose memory you mean")
        return thread_id

    def _now(self) -> datetime:
        if self._clock is not None:
            return self._clock()
        return self._latest_time or datetime.now(UTC)

    def shown_thread_id(self, thread_id: str) -> str:
        """The id a model sees for ``thread_id`` (obscured when ``obscure_thread_ids`` is on)."""
        if not self.config.obscure_thread_ids:
            return thread_id
        return obscure_thread_id(thread_id, self.config.thread_id_hash)

    def record(self, thread_id: str | None = None) -> OMRecord:
        """The active record (latest generation) for ``thread_id`` (ignored in resource scope).

        Reading never changes the memory: a thread with no record yet gets a fresh, unsaved one.
        """
        key = self._key(thread_id)
        generations = self._generations.get(key)
        return generations[-1] if generations else self._new_record(key)

    def _new_record(self, key: str) -> OMRecord:
        now = self._now()
        return OMRecord(
            id=f"om-{key}-gen0",
            scope=self.config.scope,
            resource_id=self.resource_id,
            thread_id=None if self.resource_scope else key,
            created_at=now,
            updated_at=now,
            config=_stored_config(self.config),
        )

    def _ensure_record(self, thread_id: str | None) -> OMRecord:
        key = self._key(thread_id)
        if key not in self._generations:
            self._generations[key] = [self._new_record(key)]
        return self._generations[key][-1]

    def generations(self, thread_id: str | None = None) -> list[OMRecord]:
        """All generations, oldest first; the last one is active."""
        return list(self._generations.get(self._key(thread_id)) or [self.record(thread_id)])

    def thread_state(self, thread_id: str) -> ThreadState:
        state = self._threads.get(thread_id)
        if state is None:
            state = self._threads[thread_id] = ThreadState(thread_id)
        return state

    @property
    def thread_ids(self) -> list[str]:
        return list(self._threads)

    def message_tokens(self, message_id: str) -> int:
        """The token count of an ingested message (computed once, when it was added)."""
        return self._message_tokens[message_id]

    def unobserved_messages(self, thread_id: str | None = None) -> list[Message]:
        """Messages not yet observed: of one thread, or of all threads when ``thread_id`` is None."""
        if thread_id is not None:
            queue = self._queues.get(thread_id)
            return list(queue.messages) if queue else []
        return [m for queue in self._queues.values() for m in queue.messages]

    # -- ingestion ------------------------------------------------------------------------------------------

    def add_message(self, message: Message) -> None:
        """Ingest one message. Re-adding an identical message is a no-op; a conflicting one is an error.

        A message counts as observed only when its id was observed. Unlike Mastra, a message timestamped at or
        before the observation cursor is not dropped: it waits for the next observation like any other.
        """
        if not isinstance(message.created_at, datetime):
            raise TypeError(f"message {message.id!r}: created_at must be a datetime, got {message.created_at!r}")
        known = self._messages.get(message.id)
        if known is not None:
            if _canonical(known) != _canonical(message):
                raise ValueError(f"message id {message.id!r} was already added with different content")
            return
        if self._latest_time is not None and (message.created_at.tzinfo is None) != (self._latest_time.tzinfo is None):
            raise TypeError(
                f"message {message.id!r}: created_at {message.created_at.isoformat()} mixes timezone-aware and "
                "naive datetimes with earlier messages; use one kind for the whole memory"
            )
        tokens = count_message(message, self.counter)
        self._messages[message.id] = message
        self._message_tokens[message.id] = tokens
        self.thread_state(message.thread_id)
        record = self._ensure_record(message.thread_id)
        if self._latest_time is None or message.created_at > self._latest_time:
            self._latest_time = message.created_at
        queue = self._queues.setdefault(message.thread_id, _ThreadQueue())
        queue.messages.append(message)
        queue.tokens += tokens
        record.pending_message_tokens = self.pending_tokens(message.thread_id)

    def add_messages(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.add_message(message)

    # -- thresholds -----------------------------------------------------------------------------------------

    def pending_tokens(self, thread_id: str | None = None) -> int:
        """Unobserved message tokens that count toward the observation threshold.

        Resource scope counts every thread; thread scope only ``thread_id``'s. A non-empty list carries the
        per-conversation overhead once.
        """
        if self.resource_scope:
            queues = [q for q in self._queues.values() if q.messages]
        else:
            queue = self._queues.get(self._key(thread_id))
            queues = [queue] if queue and queue.messages else []
        if not queues:
            return 0
        return TOKENS_PER_CONVERSATION + sum(q.tokens for q in queues)

    def observation_threshold(self, thread_id: str | None = None) -> int:
        """The threshold in force now (dynamic when ``share_token_budget`` is on)."""
        obs = self.config.observation
        if self.config.share_token_budget:
            return dynamic_message_threshold(
                obs.message_tokens,
                self.config.reflection.observation_tokens,
                self.record(thread_id).observation_token_count,
            )
        return obs.message_tokens

    # -- observation ----------------------------------------------------------------------------------------

    async def observe(
        self, thread_id: str | None = None, *, force: bool = False, select_all: bool | None = None
    ) -> ObservationOutcome | None:
        """Observe if pending tokens reached the threshold (or always with ``force``, e.g. a final flush).

        Returns ``None`` when nothing was due. Reflection runs inside, when observations pass their threshold.
        Resource scope observes the largest threads until they make up the threshold, or every thread with
        unobserved messages when ``select_all`` (default: ``force``; a caller that decides for itself when
        observation is due passes ``force=True, select_all=False`` to keep 1.x's selection).

        With async buffering on (thread scope, the 1.10 default; resource scope with ``resource_buffering``) this
        is a step after the first of 1.10's per-step pipeline (§1.8; :meth:`start_turn` is the first): a buffering
        pass when pending tokens crossed a new interval, then at the threshold the activation of buffered chunks,
        or synchronous observation once ``block_after`` is reached, each followed by the reflection check, which
        may buffer or activate a reflection. Returns an outcome only when observations were added to memory
        (activated or observed), not for a pass that only buffered.
        """
        async with self._lock:
            if self.config.async_observation_enabled and not force:
                return await self._step_async(self._key(thread_id))
            pending = self.pending_tokens(thread_id)
            if pending == 0:
                return None
            if not force and not observation_due(pending, self.observation_threshold(thread_id)):
                return None
            if self.resource_scope:
                outcome = await self._observe_resource_sync(force if select_all is None else select_all, thread_id)
            else:
                outcome = await self._observe_thread(self._key(thread_id))
            return await self._with_reflection(outcome, thread_id)

    async def _with_reflection(
        self, outcome: ObservationOutcome, thread_id: str | None, *, background_only: bool = False
    ) -> ObservationOutcome:
        try:
            if self.config.async_reflection_enabled:
                reflection = await self._maybe_reflect_async(self._key(thread_id), background_only=background_only)
            else:
                reflection = await self._maybe_reflect(thread_id)
        except Exception as error:  # the observation is saved; report the failed reflection, keep memory
            return replace(outcome, reflection_error=f"{type(error).__name__}: {error}")
        return outcome if reflection is None else replace(outcome, reflection=reflection)

    def _append(self, existing: str, new: str, at: datetime) -> str:
        if not existing.strip():
            return new
        return existing + self._separator(at) + new

    def _separator(self, at: datetime) -> str:
        return format_boundary(at) if self.config.boundary_delimiters else "\n\n"

    def _previous(self, record: OMRecord, extra: Sequence[str] = ()) -> tuple[str, bool]:
        """The prior observations the Observer sees (§1.14): ``extra`` texts (buffered chunks) are appended, and
        with a token budget a buffered reflection stands in for the lines it condenses."""
        budget = self.config.observation.previous_observer_tokens
        chunks = "\n\n".join(t for t in extra if t)
        # 1.31 marks where the chunks not yet activated begin.
        joint = BUFFERED_MARK if self.config.follows_v1_31 else "\n\n"
        text = joint.join(t for t in (record.active_observations, chunks) if t)
        if budget is not False and record.buffered_reflection and record.reflected_observation_line_count:
            rest = "\n".join(text.split("\n")[record.reflected_observation_line_count:]).strip()
            text = record.buffered_reflection + ("\n\n" + rest if rest else "")
        return prepare_previous_observations(text, budget, self.counter.count_text)

    def _history(self, messages: Sequence[Message]) -> str:
        """The Observer's view of ``messages``: 1.10's blocks, or 1.15+'s lines under ``mastra_release=v1_31``."""
        return format_history_lines(messages) if self.config.follows_v1_31 else format_messages(messages)

    def _thread_history(self, threads: Mapping[str, Sequence[Message]]) -> str:
        return format_thread_lines(threads) if self.config.follows_v1_31 else format_thread_blocks(threads)

    def _take_from_queue(self, thread_id: str, ids: set[str]) -> int:
        """Remove ``ids`` from the thread's unobserved messages; returns the tokens of those it held."""
        queue = self._queues[thread_id]
        held = {m.id for m in queue.messages} & ids
        tokens = sum(self._message_tokens[i] for i in held)
        queue.messages = [m for m in queue.messages if m.id not in held]
        queue.tokens -= tokens
        return tokens

    def _mark_observed(self, record: OMRecord, thread_id: str, messages: Sequence[Message]) -> int:
        """Mark ``messages`` observed under ``thread_id`` (under 1.31 a thread's batch may hold other threads'
        messages: each leaves its own thread's queue, once)."""
        observed_ids = {m.id for m in messages}
        tokens = sum(self._take_from_queue(t, observed_ids) for t in {m.thread_id for m in messages})
        record.observed_message_ids.extend(m.id for m in messages)
        self._observed_ids.update(observed_ids)
        state = self.thread_state(thread_id)
        latest = max(messages, key=lambda m: m.created_at)
        if state.last_observed_at is None or latest.created_at >= state.last_observed_at:
            state.last_observed_at = latest.created_at
            state.last_observed_message_id = latest.id
        return tokens

    def _write_hints(self, thread_id: str, output: ObserverOutput) -> None:
        state = self.thread_state(thread_id)
        state.current_task = output.current_task  # an omitted hint clears the stale one
        state.suggested_response = output.suggested_response
        title = (output.thread_title or "").strip()
        if len(title) >= 3 and title != state.thread_title:
            state.thread_title = title

    def _finish_record(
        self, record: OMRecord, observed_at: datetime, message_tokens: int, *, recount: bool = True
    ) -> None:
        if record.last_observed_at is None or observed_at > record.last_observed_at:
            record.last_observed_at = observed_at
        if recount:
            record.observation_token_count = self.counter.count_text(record.active_observations)
        record.total_tokens_observed += message_tokens
        record.pending_message_tokens = self.pending_tokens(record.thread_id)
        record.updated_at = self._now()

    def _hints_for(self, thread_id: str) -> ThreadHints:
        state = self.thread_state(thread_id)
        return ThreadHints(state.current_task, state.suggested_response, state.thread_title)

    async def _observe_thread(self, thread_id: str) -> ObservationOutcome:
        record = self._ensure_record(thread_id)
        messages = list(self._queues[thread_id].messages)
        previous, truncated = self._previous(record)
        obs = self.config.observation
        request = ObserverRequest(
            history=self._history(messages),
            previous_observations=previous,
            previous_truncated=truncated,
            hints={"": self._hints_for(thread_id)},
            hint_blocks=self.config.follows_v1_31,
        )
        system = render_observer_system_prompt(
            self.config.prompt_variant,
            multi_thread=False,
            instruction=obs.instruction,
            thread_title=obs.thread_title,
            hint_tags=self._hint_tags(),
        )
        before = record.observation_token_count
        try:
            call = await call_observer(
                self.observer, obs.model, system, render_observer_request(request, obs.request_layout),
                multi_thread=False, previous_observations=previous, new_messages=request.history,
                **self._observer_rules(),
            )
        except Exception as error:
            self._emit("observation_failed", record, thread_ids=(thread_id,), detail=str(error))
            raise
        if call.suspect is not None:
            self._emit("observation_suspect", record, thread_ids=(thread_id,), detail=call.suspect.describe())
        output = call.output
        assert isinstance(output, ObserverOutput)
        observed_at = max(m.created_at for m in messages)
        if output.observations:
            record.active_observations = self._append(record.active_observations, output.observations, observed_at)
        message_tokens = self._mark_observed(record, thread_id, messages)
        self._write_hints(thread_id, output)
        self._finish_record(record, observed_at, message_tokens)
        # Every buffered message was just observed: its chunks are void, and buffering starts over (§1.8 step 10).
        # 1.31 leaves the chunks in place (they are activated later all the same).
        if not self.config.follows_v1_31:
            record.buffered_observation_chunks = []
        record.last_buffered_at_tokens = 0
        self._emit(
            "observation", record, thread_ids=(thread_id,), message_tokens=message_tokens,
            observation_tokens_before=before, observation_tokens_after=record.observation_token_count,
            replies=call.replies,
        )
        return ObservationOutcome(
            (thread_id,), ((thread_id,),), (message_tokens,), message_tokens, record.observation_token_count
        )

    def _observable_by_thread(self, current: str | None) -> dict[str, list[Message]]:
        """The messages each thread would hand the Observer now (the messages of a call that starts).

        1.10: each thread's unobserved messages. 1.31 (resource scope): the same, listed newest thread first (its
        thread listing, which decides ties in size), and the asked thread's entry also holds its turn's history,
        i.e. the other threads' messages newer than the record's cursor, so those are counted and sent twice.
        """
        queues = {t: list(q.messages) for t, q in self._queues.items() if q.messages}
        if not self.config.follows_v1_31:
            return queues
        ordered = {}
        for thread_id in self.listed_threads(current, every=True):
            # A thread reads its messages after its own cursor: one sharing the cursor's instant is never observed.
            cursor = self._threads[thread_id].last_observed_at if thread_id in self._threads else None
            own = [m for m in queues.get(thread_id, []) if cursor is None or m.created_at > cursor]
            if own:
                ordered[thread_id] = own
        if current is not None:
            own = ordered.get(current, [])
            ids = {m.id for m in own}
            merged = own + [m for m in self.turn_history(current) if m.id not in ids]
            if merged:
                ordered[current] = merged  # a thread with no messages of its own joins last
        return ordered

    def _loads_of(self, sent: Mapping[str, Sequence[Message]]) -> list[ThreadLoad]:
        return [ThreadLoad(t, self._list_tokens(messages), min(m.created_at for m in messages))
                for t, messages in sent.items()]

    async def _observe_resource(self, take_all: bool, current: str | None = None) -> ObservationOutcome:
        record = self._ensure_record(None)
        # The messages each thread had when the call started: later arrivals wait for the next observation.
        observable = self._observable_by_thread(current)
        selected = select_threads(self._loads_of(observable), self.observation_threshold(), take_all=take_all)
        batches = pack_batches(selected, self.config.observation.max_tokens_per_batch)
        thread_ids = tuple(load.thread_id for load in selected)
        sent = {t: observable[t] for t in thread_ids}
        applied: list[int] = []
        try:
            if self.config.observation.batch_mode == "parallel":
                previous = self._previous(record)
                calls = await asyncio.gather(*(self._observe_batch(batch, sent, previous) for batch in batches))
                applied += [self._apply_batch(record, b, sent, c) for b, c in zip(batches, calls)]
            else:
                for batch in batches:
                    call = await self._observe_batch(batch, sent, self._previous(record))
                    applied.append(self._apply_batch(record, batch, sent, call))
        except Exception as error:
            self._emit("observation_failed", record, thread_ids=thread_ids, detail=str(error))
            raise
        finally:
            if applied:  # sequential mode keeps the batches that finished before a failure
                done = [load.thread_id for batch in batches[: len(applied)] for load in batch]
                # Each applied batch already recounted the observation tokens.
                self._finish_record(record, max(m.created_at for t in done for m in sent[t]), sum(applied),
                                    recount=False)
        return ObservationOutcome(
            thread_ids,
            tuple(tuple(load.thread_id for load in batch) for batch in batches),
            tuple(sum(load.tokens for load in batch) for batch in batches),
            sum(applied),
            record.observation_token_count,
        )

    async def _observe_batch(
        self, batch: Sequence[ThreadLoad], sent: Mapping[str, list[Message]], previous: tuple[str, bool],
        *, buffered: bool = False,
    ) -> ObserverCall:
        """One multi-thread Observer call; a ``buffered`` one (a buffering pass) asks for no hints and, under 1.31,
        shows none."""
        obs = self.config.observation
        shown = {load.thread_id: self.shown_thread_id(load.thread_id) for load in batch}
        hidden = buffered and self.config.follows_v1_31
        request = ObserverRequest(
            history=self._thread_history({shown[t]: sent[t] for t in shown}),
            previous_observations=previous[0],
            previous_truncated=previous[1],
            thread_count=len(batch),
            hints={} if hidden else {shown[t]: self._hints_for(t) for t in shown},
            skip_continuation_hints=buffered,
        )
        system = render_observer_system_prompt(
            self.config.prompt_variant, multi_thread=True, instruction=obs.instruction,
            thread_title=obs.thread_title, hint_tags=self._hint_tags(buffered=buffered),
        )
        return await call_observer(
            self.observer, obs.model, system, render_observer_request(request, obs.request_layout),
            multi_thread=True, thread_ids=tuple(shown.values()), previous_observations=previous[0],
            new_messages=request.history, **self._observer_rules(buffered=buffered),
        )

    def _apply_batch(
        self, record: OMRecord, batch: Sequence[ThreadLoad], sent: Mapping[str, list[Message]], call: ObserverCall
    ) -> int:
        output = call.output
        assert isinstance(output, MultiThreadOutput)
        if call.suspect is not None:
            self._emit("observation_suspect", record, thread_ids=tuple(load.thread_id for load in batch),
                       detail=call.suspect.describe())
        before = record.observation_token_count
        message_tokens = 0
        merge = (merge_thread_section_as_mastra if self.config.thread_sections == "mastra"
                 else replace_or_append_thread_section)
        for load in batch:
            thread_id = load.thread_id
            shown = self.shown_thread_id(thread_id)
            result = output.threads.get(shown, ObserverOutput(observations=""))
            messages = sent[thread_id]
            observed_at = max(m.created_at for m in messages)
            record.active_observations = merge(
                record.active_observations, shown, result.observations, self._separator(observed_at)
            )
            message_tokens += self._mark_observed(record, thread_id, messages)
            self._write_hints(thread_id, result)
        after = self.counter.count_text(record.active_observations)
        record.observation_token_count = after
        self._emit(
            "observation", record, thread_ids=tuple(load.thread_id for load in batch),
            message_tokens=message_tokens, observation_tokens_before=before, observation_tokens_after=after,
            replies=call.replies,
        )
        return message_tokens

    # -- async buffering (§1.7, §1.8 steps 4-10, §1.10) -----------------------------------------------------

    async def start_turn(self, thread_id: str | None = None) -> ObservationOutcome | None:
        """What 1.x checks before the first model call of an agent turn (step 0 of its per-step pipeline, §1.8).

        With async buffering on: activate buffered chunks once pending tokens reach the threshold, check
        reflection, then start a buffering pass when a new interval was crossed. Synchronous observation never
        runs here; :meth:`observe` is the check of the steps after the first. Without buffering this does nothing
        (1.x's step 0 would only reflect observations already over their threshold, which synchronous observation
        never leaves behind). Returns an outcome only when chunks were activated.
        """
        async with self._lock:
            if not self.config.async_observation_enabled:
                return None
            key = self._key(thread_id)
            if key not in self._generations:  # nothing was ever added: reading must not create a record
                return None
            if self._steps_as_v1_31:
                return await self._first_step_v1_31(key)
            record = self._ensure_record(key)
            threshold = self.observation_threshold(key)
            pending = self.pending_tokens(key)
            # The context may have shrunk since the last pass (§1.8 step 4).
            record.last_buffered_at_tokens = min(record.last_buffered_at_tokens, pending)
            outcome = None
            if record.buffered_observation_chunks and observation_due(pending, threshold):
                outcome = self._activate(key, pending, threshold)
                if outcome is not None:
                    outcome = await self._with_reflection(outcome, key)
            # A failure is recorded as an event; with no activation there is no outcome to carry it.
            with contextlib.suppress(Exception):
                await self._maybe_reflect_async(key, after_observation=False)
            await self._maybe_buffer(key, self.pending_tokens(key), threshold)
            # The first step ends by showing the observations, and with them 1.x's continuation reminder.
            if self.record(key).active_observations:
                self._reminded.add(key)
            else:
                self._reminded.discard(key)
            return outcome

    async def _step_async(self, key: str) -> ObservationOutcome | None:
        """A step after the first with buffering on; see :meth:`observe` and the module docstring."""
        if key not in self._generations:  # nothing was ever added: reading must not create a record
            return None
        if self._steps_as_v1_31:
            return await self._later_step_v1_31(key)
        threshold = self.observation_threshold(key)
        block_after = self.config.observation_block_after or threshold
        pending = self.pending_tokens(key)
        await self._maybe_buffer(key, pending, threshold)
        if not observation_due(pending, threshold):
            return None
        reminder = key in self._reminded and self.config.observation.activation_counts_reminder
        outcome = self._activate(key, pending + (REMINDER_TOKENS_1_10 if reminder else 0), threshold)
        if outcome is not None:  # 1.10 then only buffers or activates a reflection, even past block_after
            return await self._with_reflection(outcome, key, background_only=True)
        if pending >= block_after:
            outcome = await (self._observe_resource_sync(False) if self.resource_scope else self._observe_thread(key))
            return await self._with_reflection(outcome, key)
        return None

    # -- 1.31's per-step buffering (thread scope) ------------------------------------------------------------
    #
    # What changed from 1.10 (§8.6 of the 1.31 notes): a buffering pass starts only below the threshold; the
    # boundary it leaves is the whole pending count, or the tokens of what it buffered when it stored a chunk;
    # activation has no projected-remainder gate and sizes its swap by the pending count of the previous step;
    # at the threshold, a step that cannot activate observes synchronously at once (``block_after`` only forces
    # the largest swap); a synchronous observation leaves the chunks where they are; a turn resets a boundary
    # more than twice its context. Threshold observation runs at the first step too.

    async def _first_step_v1_31(self, key: str) -> ObservationOutcome | None:
        record = self._ensure_record(key)
        threshold = self.observation_threshold(key)
        pending = self.pending_tokens(key)
        if record.last_buffered_at_tokens > 0 and pending < 0.5 * record.last_buffered_at_tokens:
            record.last_buffered_at_tokens = 0
        outcome = None
        if record.buffered_observation_chunks and observation_due(pending, threshold):
            outcome = await self._with_reflection(self._activate_v1_31(key), key)
        else:  # one reflection check per first step, activation or not
            with contextlib.suppress(Exception):  # recorded as an event; buffering goes on
                await self._maybe_reflect_async(key, after_observation=False)
        self._turn_boundary.pop(key, None)
        later = await self._buffer_or_observe_v1_31(key, threshold)
        return later or outcome

    async def _later_step_v1_31(self, key: str) -> ObservationOutcome | None:
        return await self._buffer_or_observe_v1_31(key, self.observation_threshold(key))

    async def _buffer_or_observe_v1_31(self, key: str, threshold: int) -> ObservationOutcome | None:
        """The part of a 1.31 step every step runs: a buffering pass below the threshold, observation at it.

        A pass started in this turn leaves the pending count it started at as the boundary for the turn's later
        steps, even once it stored a chunk: 1.31's turn keeps a copy of its record taken while the pass ran (with
        its in-memory storage), and its later steps decide with the larger of that copy and the process's value.
        """
        record = self._ensure_record(key)
        pending = self.pending_tokens(key)
        outcome = None
        if not observation_due(pending, threshold):
            boundary = max(record.last_buffered_at_tokens, self._turn_boundary.get(key, 0))
            if should_trigger_async_buffer(pending, boundary, self.config.buffer_tokens or 0, threshold):
                record.last_buffered_at_tokens = self._turn_boundary[key] = pending
                chunk = await self._buffer_observations(key)
                if chunk is not None:
                    record.last_buffered_at_tokens = chunk.message_tokens
        else:
            self._turn_boundary.pop(key, None)  # the turn reads its record afresh after threshold work
            if record.buffered_observation_chunks:
                outcome = await self._with_reflection(self._activate_v1_31(key), key)
            else:
                outcome = await self._with_reflection(await self._observe_thread(key), key)
        self._step_pending[key] = self.pending_tokens(key)
        return outcome

    def _activate_v1_31(self, key: str) -> ObservationOutcome:
        """1.31's swap: sized by the previous step's pending count (or the chunks' tokens), at least one chunk."""
        record = self._ensure_record(key)
        chunks = record.buffered_observation_chunks
        covered = [c.message_tokens for c in chunks]
        pending = self._step_pending.get(key) or sum(covered)
        block_after = self.config.observation_block_after
        force = block_after is not None and pending >= block_after
        count = max(1, select_activation_boundary(covered, self.config.retention_floor, pending, force))
        outcome = self._apply_activation(key, count, pending, force)
        self._step_pending[key] = max(0, pending - sum(covered[:count]))
        return outcome

    def _activate(self, key: str, pending: int, threshold: int) -> ObservationOutcome | None:
        buffer_tokens = self.config.buffer_tokens or 0
        block_after = self.config.observation_block_after or threshold
        if self.resource_scope:
            return self._activate_observations_resource(pending, threshold, buffer_tokens, block_after)
        return self._activate_observations(key, pending, threshold, buffer_tokens, block_after)

    async def _maybe_buffer(self, key: str, pending: int, threshold: int) -> None:
        """Start a buffering pass when pending tokens crossed a new interval (§1.8 step 8).

        As 1.10 does, the boundary remembered is the *unbuffered* part of the pending tokens (pending minus the
        message tokens chunks already cover), while the trigger compares the whole pending count with it: after
        the first chunk a pass is tried at almost every interval, and skipped when under half an interval is new.
        """
        record = self._ensure_record(key)
        if not should_trigger_async_buffer(pending, record.last_buffered_at_tokens, self.config.buffer_tokens or 0,
                                           threshold):
            return
        covered = sum(c.message_tokens for c in record.buffered_observation_chunks)
        record.last_buffered_at_tokens = max(0, pending - covered)
        if self.resource_scope:
            await self._buffer_observations_resource()
        else:
            await self._buffer_observations(key)

    def _drop_passed_messages(self, record: OMRecord, key: str) -> None:
        """``after_cursor`` (1.10): messages no chunk covers that the observation cursor has passed leave the
        context unobserved, as 1.10 filters them by time; recorded as ``messages_dropped`` (1.10 says nothing)."""
        if self.config.observation.buffer_candidates != "after_cursor" or record.last_observed_at is None:
            return
        covered = self._buffered_ids(record)
        passed = [m for m in self._queues[key].messages
                  if m.id not in covered and m.created_at <= record.last_observed_at]
        if not passed:
            return
        ids = {m.id for m in passed}
        tokens = self._take_from_queue(key, ids)
        self._emit("messages_dropped", record, thread_ids=(key,), message_tokens=tokens,
                   observation_tokens_before=record.observation_token_count,
                   observation_tokens_after=record.observation_token_count,
                   detail=json.dumps({"messages": sorted(ids), "reason": "passed by the observation cursor "
                                      "without being observed (1.10, observation.buffer_candidates=after_cursor)"}))

    def _list_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` counted as one list (1.10 counts a chunk's messages so, overhead included)."""
        return TOKENS_PER_CONVERSATION + sum(self._message_tokens[m.id] for m in messages) if messages else 0

    def _buffered_ids(self, record: OMRecord) -> set[str]:
        return {i for chunk in record.buffered_observation_chunks for i in chunk.message_ids}

    async def _buffer_observations(self, key: str) -> BufferedChunk | None:
        """One buffering pass: observe the messages no chunk covers yet into a new chunk (§1.10).

        Candidates are chosen by id (unobserved and in no chunk), not by the time cursor, for the same reason
        :meth:`add_message` keeps late-timestamped messages; the cursor ``last_buffered_at_time`` is still kept.
        Failures are recorded as ``observation_buffer_failed`` and never raised: buffering is best effort.
        """
        record = self._ensure_record(key)
        covered = self._buffered_ids(record)
        candidates = [m for m in self._queues[key].messages if m.id not in covered]
        if self.config.observation.buffer_candidates == "after_cursor":
            cursor = self._buffer_cursor.get(key) or record.last_buffered_at_time
            if record.last_observed_at is not None and (cursor is None or record.last_observed_at > cursor):
                cursor = record.last_observed_at
            if cursor is not None:
                candidates = [m for m in candidates if m.created_at > cursor]
        candidate_tokens = self._list_tokens(candidates)
        if not buffer_has_enough(candidate_tokens, self.config.buffer_tokens or 0):
            return None
        obs = self.config.observation
        previous, truncated = self._previous(record, [c.observations for c in record.buffered_observation_chunks])
        request = ObserverRequest(
            history=self._history(candidates),
            previous_observations=previous,
            previous_truncated=truncated,
            hints={} if self.config.follows_v1_31 else {"": self._hints_for(key)},  # 1.31 shows a buffered call none
            skip_continuation_hints=True,
        )
        system = render_observer_system_prompt(
            self.config.prompt_variant, multi_thread=False, instruction=obs.instruction, thread_title=obs.thread_title,
            hint_tags=self._hint_tags(buffered=True),
        )
        try:
            call = await call_observer(
                self.observer, obs.model, system, render_observer_request(request, obs.request_layout),
                multi_thread=False, previous_observations=previous, new_messages=request.history,
                **self._observer_rules(buffered=True),
            )
        except Exception as error:
            replies = getattr(error, "replies", ())
            self._emit("observation_buffer_failed", record, thread_ids=(key,), message_tokens=candidate_tokens,
                       replies=replies, detail=f"{type(error).__name__}: {error}")
            return None
        if call.suspect is not None:
            self._emit("observation_suspect", record, thread_ids=(key,), detail=call.suspect.describe())
        output = call.output
        assert isinstance(output, ObserverOutput)
        if not output.observations:
            self._emit("observation_buffered", record, thread_ids=(key,), message_tokens=candidate_tokens,
                       observation_tokens_before=record.observation_token_count,
                       observation_tokens_after=record.observation_token_count, replies=call.replies,
                       detail=json.dumps({"stored": False, "chunks": len(record.buffered_observation_chunks)}))
            return None
        now = self._now()
        last_at = max(m.created_at for m in candidates) + timedelta(milliseconds=1)
        chunk = BufferedChunk(
            id=f"ombuf-{record.id}-{candidates[0].id}",
            cycle_id=f"buffer-{record.id}-{candidates[0].id}",
            observations=output.observations,
            token_count=self.counter.count_text(output.observations),
            message_ids=[m.id for m in candidates],
            message_tokens=candidate_tokens,
            last_observed_at=last_at,
            created_at=now,
            suggested_continuation=output.suggested_response,
            current_task=output.current_task,
        )
        record.buffered_observation_chunks.append(chunk)
        record.last_buffered_at_time = last_at
        self._buffer_cursor[key] = last_at  # 1.10 keeps it in process memory, across generations
        record.updated_at = now
        self._emit(
            "observation_buffered", record, thread_ids=(key,), message_tokens=candidate_tokens,
            observation_tokens_before=record.observation_token_count,
            observation_tokens_after=record.observation_token_count, replies=call.replies,
            detail=json.dumps({
                "stored": True, "chunk_id": chunk.id, "chunk_tokens": chunk.token_count,
                "chunk_messages": len(chunk.message_ids), "chunks": len(record.buffered_observation_chunks),
                "buffered_message_tokens": sum(c.message_tokens for c in record.buffered_observation_chunks),
                "pending_tokens": record.last_buffered_at_tokens,
            }),
        )
        return chunk

    def _activate_observations(
        self, key: str, pending: int, threshold: int, buffer_tokens: int, block_after: int
    ) -> ObservationOutcome | None:
        """Swap the chosen prefix of buffered chunks into the active observations (§1.7); None when gated."""
        record = self._ensure_record(key)
        count = plan_activation(
            [c.message_tokens for c in record.buffered_observation_chunks], pending_tokens=pending,
            threshold=threshold, retention_floor=self.config.retention_floor, buffer_tokens=buffer_tokens,
            block_after=block_after,
        )
        return self._apply_activation(key, count, pending, pending >= block_after) if count else None

    def _apply_activation(self, key: str, count: int, pending: int, forced: bool) -> ObservationOutcome:
        """Move the first ``count`` buffered chunks into the active observations."""
        record = self._ensure_record(key)
        chunks = record.buffered_observation_chunks
        activated, record.buffered_observation_chunks = chunks[:count], chunks[count:]
        before = record.observation_token_count
        latest = activated[-1].last_observed_at
        record.active_observations = self._append(
            record.active_observations, "\n\n".join(c.observations for c in activated), latest
        )
        record.observation_token_count = before + sum(c.token_count for c in activated)
        ids = {i for c in activated for i in c.message_ids}
        messages = [m for m in self._queues[key].messages if m.id in ids]
        message_tokens = self._mark_observed(record, key, messages) if messages else 0
        if record.last_observed_at is None or latest > record.last_observed_at:
            record.last_observed_at = latest
        self._drop_passed_messages(record, key)
        record.total_tokens_observed += message_tokens
        record.pending_message_tokens = self.pending_tokens(key)
        record.last_buffered_at_tokens = 0
        record.updated_at = self._now()
        # The last chunk's hints replace the thread's, an absent one clearing it (1.10 and 1.31 alike: buffered
        # calls are asked for none, so activation usually clears them).
        hints = activated[-1]
        state = self.thread_state(key)
        state.current_task = hints.current_task
        state.suggested_response = hints.suggested_continuation
        self._emit(
            "observation_activated", record, thread_ids=(key,), message_tokens=message_tokens,
            observation_tokens_before=before, observation_tokens_after=record.observation_token_count,
            detail=json.dumps({
                "chunks": count, "chunks_left": len(record.buffered_observation_chunks),
                "chunk_tokens": record.observation_token_count - before, "pending_before": pending,
                "pending_after": self.pending_tokens(key), "forced": forced,
            }),
        )
        return ObservationOutcome(
            (key,), ((key,),), (message_tokens,), message_tokens, record.observation_token_count
        )

    # -- async buffering in resource scope (om-eval extension, ``resource_buffering``) ------------------------
    #
    # 1.10 refuses async options in resource scope. Here the resource's pending tokens (all threads) drive the
    # same trigger, interval and activation math as in thread scope; a pass observes every thread's uncovered
    # messages with the multi-thread Observer call, and its chunk keeps each thread's part so that activation can
    # merge it into that thread's section, as a synchronous resource-scope observation does.

    def _chunk_text(self, parts: Mapping[str, ThreadChunk]) -> str:
        """A resource chunk's parts as ``<thread>`` sections: what later Observer calls see of it."""
        return "\n\n".join(
            f'<thread id="{self.shown_thread_id(t)}">\n{p.observations}\n</thread>'
            for t, p in parts.items() if p.observations
        )

    async def _buffer_observations_resource(self) -> BufferedChunk | None:
        """One resource-scope buffering pass: every thread's messages that no chunk covers, observed in batches
        (``max_tokens_per_batch``) into one chunk with a part per thread. Failures are recorded as
        ``observation_buffer_failed`` and never raised; a failed pass stores nothing."""
        record = self._ensure_record(None)
        covered = self._buffered_ids(record)
        sent = {
            thread_id: [m for m in queue.messages if m.id not in covered] for thread_id, queue in self._queues.items()
        }
        sent = {t: messages for t, messages in sent.items() if messages}
        candidate_tokens = sum(self._message_tokens[m.id] for messages in sent.values() for m in messages)
        if not buffer_has_enough(candidate_tokens, self.config.buffer_tokens or 0):
            return None
        batches = pack_batches(select_threads(self._loads_of(sent), 0, take_all=True),
                               self.config.observation.max_tokens_per_batch)
        thread_ids = tuple(load.thread_id for batch in batches for load in batch)
        prior = [c.observations for c in record.buffered_observation_chunks]
        parts: dict[str, ThreadChunk] = {}
        calls: list[ObserverCall] = []
        try:
            if self.config.observation.batch_mode == "parallel":
                previous = self._previous(record, prior)
                results = await asyncio.gather(
                    *(self._observe_batch(b, sent, previous, buffered=True) for b in batches), return_exceptions=True
                )
                calls = [r for r in results if not isinstance(r, BaseException)]
                errors = [r for r in results if isinstance(r, BaseException)]
                if errors:
                    raise errors[0]
                for batch, call in zip(batches, calls):
                    parts.update(self._chunk_parts(batch, sent, call))
            else:  # each batch sees the parts of the batches before it
                for batch in batches:
                    extra = [*prior, self._chunk_text(parts)] if parts else prior
                    calls.append(await self._observe_batch(batch, sent, self._previous(record, extra), buffered=True))
                    parts.update(self._chunk_parts(batch, sent, calls[-1]))
        except Exception as error:  # the calls that did answer were paid for: count them
            replies = [r for call in calls for r in call.replies] + list(getattr(error, "replies", ()))
            self._emit("observation_buffer_failed", record, thread_ids=thread_ids, message_tokens=candidate_tokens,
                       replies=replies, detail=f"{type(error).__name__}: {error}")
            return None
        replies = [r for call in calls for r in call.replies]
        for batch, call in zip(batches, calls):
            if call.suspect is not None:
                self._emit("observation_suspect", record, thread_ids=tuple(load.thread_id for load in batch),
                           detail=call.suspect.describe())
        parts = {t: parts[t] for t in thread_ids}
        if not any(p.observations for p in parts.values()):
            self._emit("observation_buffered", record, thread_ids=thread_ids, message_tokens=candidate_tokens,
                       observation_tokens_before=record.observation_token_count,
                       observation_tokens_after=record.observation_token_count, replies=replies,
                       detail=json.dumps({"stored": False, "chunks": len(record.buffered_observation_chunks)}))
            return None
        now = self._now()
        first = sent[thread_ids[0]][0]
        last_at = max(m.created_at for messages in sent.values() for m in messages) + timedelta(milliseconds=1)
        text = self._chunk_text(parts)
        chunk = BufferedChunk(
            id=f"ombuf-{record.id}-{first.id}",
            cycle_id=f"buffer-{record.id}-{first.id}",
            observations=text,
            token_count=self.counter.count_text(text),
            message_ids=[i for p in parts.values() for i in p.message_ids],
            message_tokens=candidate_tokens,
            last_observed_at=last_at,
            created_at=now,
            threads=parts,
        )
        record.buffered_observation_chunks.append(chunk)
        record.last_buffered_at_time = last_at
        record.updated_at = now
        self._emit(
            "observation_buffered", record, thread_ids=thread_ids, message_tokens=candidate_tokens,
            observation_tokens_before=record.observation_token_count,
            observation_tokens_after=record.observation_token_count, replies=replies,
            detail=json.dumps({
                "stored": True, "chunk_id": chunk.id, "chunk_tokens": chunk.token_count,
                "chunk_messages": len(chunk.message_ids), "chunks": len(record.buffered_observation_chunks),
                "buffered_message_tokens": sum(c.message_tokens for c in record.buffered_observation_chunks),
                "pending_tokens": record.last_buffered_at_tokens, "batches": len(batches),
            }),
        )
        return chunk

    def _chunk_parts(
        self, batch: Sequence[ThreadLoad], sent: Mapping[str, list[Message]], call: ObserverCall
    ) -> dict[str, ThreadChunk]:
        """Each thread's part of one buffering batch; a thread the model left out gets an empty part, so its
        messages still count as covered (as a synchronous batch advances their cursor)."""
        output = call.output
        assert isinstance(output, MultiThreadOutput)
        parts = {}
        for load in batch:
            result = output.threads.get(self.shown_thread_id(load.thread_id), ObserverOutput(observations=""))
            parts[load.thread_id] = ThreadChunk(
                observations=strip_thread_tags(result.observations),
                message_ids=[m.id for m in sent[load.thread_id]],
                current_task=result.current_task,
                suggested_continuation=result.suggested_response,
                thread_title=result.thread_title,
            )
        return parts

    def _activate_observations_resource(
        self, pending: int, threshold: int, buffer_tokens: int, block_after: int
    ) -> ObservationOutcome | None:
        """Activate the chosen prefix of resource chunks (§1.7 rule): each thread's part goes into its section
        with :func:`replace_or_append_thread_section`, as a synchronous batch does; None when gated."""
        record = self._ensure_record(None)
        chunks = record.buffered_observation_chunks
        count = plan_activation(
            [c.message_tokens for c in chunks], pending_tokens=pending, threshold=threshold,
            retention_floor=self.config.retention_floor, buffer_tokens=buffer_tokens, block_after=block_after,
        )
        if count == 0:
            return None
        activated, record.buffered_observation_chunks = chunks[:count], chunks[count:]
        before = record.observation_token_count
        message_tokens = 0
        involved: dict[str, None] = {}
        batch_tokens = []
        for chunk in activated:
            chunk_tokens = 0
            for thread_id, part in (chunk.threads or {}).items():
                involved[thread_id] = None
                ids = set(part.message_ids)
                messages = [m for m in self._queues.get(thread_id, _ThreadQueue()).messages if m.id in ids]
                if not messages:
                    continue  # already observed synchronously; its part is void
                observed_at = max(m.created_at for m in messages)
                record.active_observations = self._merge_part(
                    record, self.shown_thread_id(thread_id), part.observations, self._separator(observed_at)
                )
                chunk_tokens += self._mark_observed(record, thread_id, messages)
                self._write_buffered_hints(thread_id, part)
            batch_tokens.append(chunk_tokens)
            message_tokens += chunk_tokens
        latest = max(c.last_observed_at for c in activated)
        if record.last_observed_at is None or latest > record.last_observed_at:
            record.last_observed_at = latest
        record.observation_token_count = self.counter.count_text(record.active_observations)
        record.total_tokens_observed += message_tokens
        record.pending_message_tokens = self.pending_tokens(None)
        record.last_buffered_at_tokens = 0
        record.updated_at = self._now()
        thread_ids = tuple(involved)
        self._emit(
            "observation_activated", record, thread_ids=thread_ids, message_tokens=message_tokens,
            observation_tokens_before=before, observation_tokens_after=record.observation_token_count,
            detail=json.dumps({
                "chunks": count, "chunks_left": len(record.buffered_observation_chunks),
                "chunk_tokens": sum(c.token_count for c in activated), "pending_before": pending,
                "pending_after": record.pending_message_tokens, "forced": pending >= block_after,
            }),
        )
        return ObservationOutcome(
            thread_ids, tuple(tuple(c.threads or ()) for c in activated), tuple(batch_tokens), message_tokens,
            record.observation_token_count,
        )

    def _merge_part(self, record: OMRecord, shown: str, observations: str, separator: str) -> str:
        """:func:`replace_or_append_thread_section`, but never inside the lines a buffered reflection condensed:
        those stay as they were, so activating the reflection later loses nothing."""
        text = record.active_observations
        frozen = record.reflected_observation_line_count if record.buffered_reflection is not None else 0
        if not frozen:
            return replace_or_append_thread_section(text, shown, observations, separator)
        lines = text.split("\n")
        head, tail = "\n".join(lines[:frozen]), "\n".join(lines[frozen:])
        if not tail.strip():
            section = replace_or_append_thread_section("", shown, observations, separator)
            return text + separator + section if section else text
        return head + "\n" + replace_or_append_thread_section(tail, shown, observations, separator)

    def _write_buffered_hints(self, thread_id: str, part: ThreadChunk) -> None:
        """Hints from an activated part. Buffered calls are asked for none, so an absent hint keeps the one the
        thread has (as thread-scope activation does); a hint or title given anyway replaces it."""
        state = self.thread_state(thread_id)
        if part.current_task:
            state.current_task = part.current_task
        if part.suggested_continuation:
            state.suggested_response = part.suggested_continuation
        title = (part.thread_title or "").strip()
        if len(title) >= 3 and title != state.thread_title:
            state.thread_title = title

    async def _observe_resource_sync(self, take_all: bool, current: str | None = None) -> ObservationOutcome:
        """Synchronous resource observation; afterwards the chunk parts of threads it observed are dropped
        (their messages are in memory now) and buffering starts a fresh interval, as in thread scope."""
        record = self._ensure_record(None)
        try:
            outcome = await self._observe_resource(take_all, current)
        finally:
            if record.buffered_observation_chunks:  # sequential batches may have applied before a failure
                self._drop_observed_parts(record)
        record.last_buffered_at_tokens = 0
        return outcome

    def _drop_observed_parts(self, record: OMRecord) -> None:
        """Remove from resource chunks every thread part with an observed message; drop chunks left empty."""
        kept = []
        for chunk in record.buffered_observation_chunks:
            if chunk.threads is None:
                kept.append(chunk)
                continue
            parts = {t: p for t, p in chunk.threads.items() if self._observed_ids.isdisjoint(p.message_ids)}
            if len(parts) == len(chunk.threads):
                kept.append(chunk)
                continue
            if not parts:
                continue
            chunk.threads = parts
            chunk.message_ids = [i for p in parts.values() for i in p.message_ids]
            chunk.message_tokens = sum(self._message_tokens[i] for i in chunk.message_ids)
            chunk.observations = self._chunk_text(parts)
            chunk.token_count = self.counter.count_text(chunk.observations)
            chunk.last_observed_at = max(self._messages[i].created_at for i in chunk.message_ids) + timedelta(
                milliseconds=1
            )
            kept.append(chunk)
        record.buffered_observation_chunks = kept

    # -- async reflection (§1.11) ---------------------------------------------------------------------------

    async def _maybe_reflect_async(
        self, key: str, *, after_observation: bool = True, background_only: bool = False
    ) -> ReflectionOutcome | None:
        """1.10's ``maybeReflect`` with buffering on: buffer ahead of the threshold, activate above it, and
        reflect synchronously only from ``reflection.block_after`` on. The back-off after a failed reflection
        (an om-eval guard) holds buffering too; its ``reflection_deferred`` event is only emitted after an
        observation, not at every step.

        ``background_only`` is 1.10's ``maybeAsyncReflect``, its check after an activation at a later step: never
        synchronous, so above the threshold with nothing buffered it buffers a reflection whatever the size.
        """
        record = self.record(key)
        if record.buffered_reflection is not None and self._reflected_prefix_changed(record):
            self._discard_buffered_reflection(record)
        ref = self.config.reflection
        tokens = record.observation_token_count
        hold = self._reflection_hold.get(key)
        held = hold is not None and tokens <= hold
        if not self._reflection_due(tokens):
            if (not held and record.buffered_reflection is None
                    and reflection_buffer_due(tokens, ref.observation_tokens, self.config.reflection_activation)):
                await self._buffer_reflection(key)
            return None
        if record.buffered_reflection is not None:
            return self._activate_reflection(key)
        if held:
            return await self._maybe_reflect(key) if after_observation else None  # emits reflection_deferred
        if background_only or tokens < self.config.reflection_block_after:
            await self._buffer_reflection(key)  # activated at the next check, as after 1.10's background run
            return None
        return await self._maybe_reflect(key)

    async def _buffer_reflection(self, key: str) -> None:
        """Condense the oldest lines, worth ``reflection_activation`` x the threshold, ahead of time."""
        record = self._ensure_record(key)
        if not record.active_observations.strip():
            return
        ref = self.config.reflection
        lines = record.active_observations.split("\n")
        count, target = reflection_slice(
            record.observation_token_count, len(lines), ref.observation_tokens, self.config.reflection_activation
        )
        if self.resource_scope:  # om-eval: never cut a thread section in two
            aligned = _align_to_sections(lines, count)
            if aligned != count:
                count = aligned
                target = js_round(0.75 * record.observation_token_count / len(lines) * count)
        text = "\n".join(lines[:count])
        before = record.observation_token_count
        level = 2 if "gemini-2.5-flash" in ref.model.model else 1
        try:
            result = await reflect_observations(
                self.reflector, ref.model, text, target=max(target, 1), start_level=level, counter=self.counter,
                variant=self.config.prompt_variant, instruction=ref.instruction, skip_continuation_hints=True,
                **self._reflector_rules(buffered=True),
            )
        except Exception as error:
            self._hold_reflection(key, before)
            replies = [a.reply for a in getattr(error, "attempts", ())]
            self._emit("reflection_failed", record, observation_tokens_before=before, observation_tokens_after=before,
                       replies=replies, detail=f"buffered: {type(error).__name__}: {error}")
            return
        replies = [a.reply for a in result.attempts]
        levels = tuple(a.level for a in result.attempts)
        if not self._applicable(result):
            self._hold_reflection(key, before)
            self._emit("reflection_unproductive", record, observation_tokens_before=before,
                       observation_tokens_after=before, level=result.level, levels=levels, replies=replies,
                       detail=f"buffered: {result.tokens} tokens for {result.input_tokens} in; nothing stored")
            return
        record.buffered_reflection = result.observations
        record.buffered_reflection_tokens = result.tokens
        record.buffered_reflection_input_tokens = result.input_tokens
        record.reflected_observation_line_count = count
        record.metadata["buffered_reflection_level"] = result.level
        if self.resource_scope:  # sections can grow in place: remember what the reflection condensed
            record.metadata[_REFLECTED_PREFIX] = _digest(text)
        record.updated_at = self._now()
        self._emit(
            "reflection_buffered", record, observation_tokens_before=result.input_tokens,
            observation_tokens_after=result.tokens, level=result.level, levels=levels, replies=replies,
            detail=json.dumps({"lines": count, "line_count": len(lines), "target": target,
                               "observation_tokens": before}),
        )

    def _reflected_prefix_changed(self, record: OMRecord) -> bool:
        """Whether the lines a buffered reflection condensed were changed since (resource scope only).

        Thread-scope observations only grow at the end, but a resource-scope observation may add lines inside an
        older thread section; activating then would drop those lines. Activation of buffered chunks avoids that
        (:meth:`_merge_part`), a synchronous observation at ``block_after`` does not.
        """
        digest = record.metadata.get(_REFLECTED_PREFIX)
        if digest is None:
            return False
        # Checked at every step: recompute only when the observations changed (a str caches its own hash).
        key = (record.id, digest, hash(record.active_observations))
        if self._prefix_check is not None and self._prefix_check[0] == key:
            return self._prefix_check[1]
        lines = record.active_observations.split("\n")
        changed = _digest("\n".join(lines[: record.reflected_observation_line_count or 0])) != digest
        self._prefix_check = (key, changed)
        return changed

    def _discard_buffered_reflection(self, record: OMRecord) -> None:
        self._emit(
            "reflection_buffer_discarded", record, observation_tokens_before=record.observation_token_count,
            observation_tokens_after=record.observation_token_count,
            detail=json.dumps({"reflected_lines": record.reflected_observation_line_count,
                               "reason": "the condensed lines changed since the reflection was buffered"}),
        )
        record.buffered_reflection = None
        record.buffered_reflection_tokens = None
        record.buffered_reflection_input_tokens = None
        record.reflected_observation_line_count = None
        record.metadata.pop(_REFLECTED_PREFIX, None)
        record.metadata.pop("buffered_reflection_level", None)

    def _new_generation(self, key: str, record: OMRecord, observations: str, tokens: int) -> OMRecord:
        """Start the generation a reflection makes. The buffering boundary carries over: 1.10 resets the stored
        copy but decides with the larger of it and the copy it keeps in process memory, which survives."""
        new_record = record.next_generation(observations, tokens, self._now())
        new_record.last_buffered_at_tokens = record.last_buffered_at_tokens
        self._generations[key].append(new_record)
        return new_record

    def _activate_reflection(self, key: str) -> ReflectionOutcome:
        """A new generation: the buffered reflection, then the lines it did not cover (§1.11 activation)."""
        record = self.record(key)
        assert record.buffered_reflection is not None
        rest = "\n".join(record.active_observations.split("\n")[record.reflected_observation_line_count or 0:])
        text = record.buffered_reflection + ("\n\n" + rest.strip() if rest.strip() else "")
        tokens = self.counter.count_text(text)
        before = record.observation_token_count
        level = int(record.metadata.get("buffered_reflection_level", 0))
        new_record = self._new_generation(key, record, text, tokens)
        target = self.config.reflection.observation_tokens
        if tokens < target:
            self._reflection_hold.pop(key, None)
            self._reflection_failures.pop(key, None)
        self._emit(
            "reflection_activated", new_record, observation_tokens_before=before, observation_tokens_after=tokens,
            level=level, detail=json.dumps({
                "reflected_lines": record.reflected_observation_line_count,
                "reflection_tokens": record.buffered_reflection_tokens,
                "reflection_input_tokens": record.buffered_reflection_input_tokens,
            }),
        )
        result = ReflectionResult(text, tokens, before, target, level, None, ())
        return ReflectionOutcome(True, result, new_record.generation_count)

    # -- reflection -----------------------------------------------------------------------------------------

    async def _maybe_reflect(self, thread_id: str | None) -> ReflectionOutcome | None:
        record = self.record(thread_id)
        if not self._reflection_due(record.observation_token_count):
            return None
        key = self._key(thread_id)
        if self._reflection_suppressed.get(key) == record.observation_token_count:
            return None  # 1.31: the same observations failed or stayed too large at the last try
        hold = self._reflection_hold.get(key)
        if hold is not None and record.observation_token_count <= hold:
            self._emit(
                "reflection_deferred", record, observation_tokens_before=record.observation_token_count,
                observation_tokens_after=record.observation_token_count,
                detail=f"the last reflection could not reach the target; waiting until observations pass {hold}",
            )
            return None
        return await self._reflect(thread_id, guidance=None)

    async def reflect(self, thread_id: str | None = None, *, guidance: str | None = None) -> ReflectionOutcome:
        """Reflect now, whatever the token count, with optional specific guidance."""
        async with self._lock:
            return await self._reflect(thread_id, guidance=guidance)

    async def _reflect(self, thread_id: str | None, guidance: str | None) -> ReflectionOutcome:
        key = self._key(thread_id)
        record = self.record(thread_id)
        if not record.active_observations.strip():
            raise ValueError(f"there are no observations to reflect on yet for {key!r}")
        ref = self.config.reflection
        before = record.observation_token_count
        try:
            result = await reflect_observations(
                self.reflector, ref.model, record.active_observations,
                target=ref.observation_tokens, start_level=self.config.reflection_start_level(),
                counter=self.counter, variant=self.config.prompt_variant, instruction=ref.instruction,
                guidance=guidance, prior_hints=self._prior_hints(thread_id), **self._reflector_rules(),
            )
        except Exception as error:  # degenerate ladder or provider failure: memory stays as it is
            self._hold_reflection(key, before)
            # The memory is kept, so "after" is "before" (0 would read as a wiped memory); the failed rungs' replies
            # were paid for and count as calls.
            replies = [a.reply for a in getattr(error, "attempts", ())]
            self._emit("reflection_failed", record, observation_tokens_before=before,
                       observation_tokens_after=before, replies=replies, detail=str(error))
            raise
        replies = [a.reply for a in result.attempts]
        levels = tuple(a.level for a in result.attempts)
        if not self._applicable(result):
            self._hold_reflection(key, before)
            self._emit(
                "reflection_unproductive", record, observation_tokens_before=before, observation_tokens_after=before,
                level=result.level, levels=levels, replies=replies,
                detail=f"smallest attempt had {result.tokens} tokens for {result.input_tokens} in; memory kept",
            )
            return ReflectionOutcome(False, result, record.generation_count)
        new_record = self._new_generation(key, record, result.observations, result.tokens)
        self._keep_reflection_hints(thread_id, result)
        if result.below_target:
            self._reflection_hold.pop(key, None)
            self._reflection_failures.pop(key, None)
            self._reflection_suppressed.pop(key, None)
        else:
            self._hold_reflection(key, result.tokens)
        self._emit(
            "reflection", new_record, observation_tokens_before=before, observation_tokens_after=result.tokens,
            level=result.level, levels=levels, replies=replies,
        )
        return ReflectionOutcome(True, result, new_record.generation_count)

    def _keep_reflection_hints(self, thread_id: str | None, result: ReflectionResult) -> None:
        """1.27+ keeps the hints a synchronous reflection gives for a thread-scope record (an absent one keeps the
        thread's); 1.10 reads the suggested response and drops it."""
        if not self.config.follows_v1_31 or self.resource_scope or thread_id is None:
            return
        state = self.thread_state(thread_id)
        state.current_task = result.current_task or state.current_task
        state.suggested_response = result.suggested_response or state.suggested_response

    def _hint_tags(self, *, buffered: bool = False, reflector: bool = False) -> tuple[str, ...] | None:
        """The hints a call asks for as 1.27+'s sections under ``mastra_release=v1_31`` (the thread title too when
        asked for, never of the Reflector; none for a buffered call); ``None`` is 1.10's way of asking."""
        if not self.config.follows_v1_31:
            return None
        if buffered:
            return ()
        title = self.config.observation.thread_title and not reflector
        return CONTINUATION_HINT_TAGS + (("thread-title",) if title else ())

    def _prior_hints(self, thread_id: str | None) -> dict[str, str]:
        """The thread's hints so far by tag, which a 1.27+ reflection is shown."""
        hints = self._hints_for(thread_id) if thread_id is not None and self.config.follows_v1_31 else ThreadHints()
        pairs = (("current-task", hints.current_task), ("suggested-response", hints.suggested_response))
        return {tag: value for tag, value in pairs if value}

    def _observer_rules(self, *, buffered: bool = False) -> dict[str, Any]:
        """How Observer replies are read, by ``reply_checks`` and ``mastra_release``: 1.27+ reads the hints of a
        call that asks for them (not a buffered one) as hint sections."""
        reading = ReplyReading(self.config.degenerate_strategy, self._hint_tags(buffered=buffered) or ())
        return {"checks": self.config.reply_checks, "reading": reading}

    def _reflector_rules(self, *, buffered: bool = False) -> dict[str, Any]:
        """How the Reflector is asked and read: hints as the Observer's (no thread title), and 1.31's input without
        anchors and empty rule."""
        newer = self.config.follows_v1_31
        tags = self._hint_tags(buffered=buffered, reflector=True)
        reading = ReplyReading(self.config.degenerate_strategy, tags or ())
        return {"checks": self.config.reply_checks, "reading": reading, "anchor_ids": not newer, "empty_fails": newer,
                "hint_tags": tags}

    def _reflection_due(self, tokens: int) -> bool:
        """Above the threshold; 1.31 also reflects at it."""
        return reflection_due(tokens, self.config.reflection.observation_tokens, at_threshold=self.config.follows_v1_31)

    def _applicable(self, result: ReflectionResult) -> bool:
        """om-eval never applies an unproductive reflection; 1.10 (``reply_checks="mastra"``) applies any."""
        return result.productive or self.config.reply_checks == "mastra"

    def _hold_reflection(self, key: str, tokens: int) -> None:
        """Wait for growth before the next automatic reflection; the wait doubles with each failure in a row.
        1.10 (``reply_checks="mastra"``) never waits: it reflects again at the next check; 1.31 only skips a
        threshold reflection while the observations stay at ``tokens``."""
        if self.config.keeps_going_after_failed_reflection:
            self._reflection_suppressed[key] = tokens
        if self.config.reply_checks == "mastra":
            return
        ref = self.config.reflection
        failures = self._reflection_failures[key] = self._reflection_failures.get(key, 0) + 1
        growth = ref.retry_after_growth * ref.observation_tokens * 2 ** (failures - 1)
        self._reflection_hold[key] = tokens + round(growth)

    # -- events ---------------------------------------------------------------------------------------------

    def _emit(self, kind: str, record: OMRecord, *, replies: Iterable[ModelReply] = (), **values: Any) -> None:
        calls, prompt_tokens, completion_tokens = _usage(replies)
        event = OMEvent(
            kind=kind, at=self._now(), record_id=record.id, generation=record.generation_count,
            calls=calls, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, **values,
        )
        self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    # -- what the actor sees --------------------------------------------------------------------------------

    def build_context(self, now: datetime, thread_id: str | None = None) -> ActorContext:
        """The actor's view at ``now``: memory messages plus ``thread_id``'s unobserved tail.

        In resource scope the other threads' unobserved messages appear raw in the other-conversations block, as
        1.x lists them (:meth:`listed_threads`); pass a fresh ``thread_id`` (or None) to see all threads that way.
        With no observations yet there are no memory messages at all (1.x injects nothing then).
        """
        memory_messages = actor_memory_messages(self.context_inputs(now, thread_id), self.config.context_layout)
        return ActorContext(memory_messages, self.history_messages(thread_id))

    def history_messages(self, thread_id: str | None = None) -> list[dict[str, str]]:
        """:meth:`turn_history` as chat messages, the raw tail an actor on ``thread_id`` is shown."""
        return [{"role": m.role, "content": m.text()} for m in self.turn_history(thread_id)]

    def context_inputs(self, now: datetime, thread_id: str | None = None) -> ContextInputs:
        """What :meth:`build_context` renders: observations, other threads' raw messages, continuity hints."""
        state = self._threads.get(thread_id) if thread_id is not None else None
        return ContextInputs(
            observations=self.record(thread_id).active_observations,
            now=now,
            other_conversations=self.other_conversations(thread_id),
            current_task=state.current_task if state else None,
            suggested_response=state.suggested_response if state else None,
            release=self.config.mastra_release,
        )

    def turn_history(self, thread_id: str | None = None) -> list[Message]:
        """The unobserved messages an agent turn on ``thread_id`` holds as its chat history.

        Thread scope and 1.10: the thread's own. 1.31 in resource scope: every thread's messages not observed and
        newer than the record's cursor, in time order (its ``Memory.getContext`` loads the resource's history), so
        other threads' messages are both history and other conversations, and count twice toward the threshold.
        """
        if not (self.resource_scope and self.config.follows_v1_31):
            return self.unobserved_messages(thread_id) if thread_id is not None else []
        cursor = self.record().last_observed_at
        pending = [m for m in self._messages.values()
                   if m.id not in self._observed_ids and (cursor is None or m.created_at > cursor)]
        return sorted(pending, key=lambda m: m.created_at)

    def other_conversations(self, thread_id: str | None = None) -> dict[str, list[Message]]:
        """Resource scope: the unobserved messages of the threads listed besides ``thread_id``, by shown id, in
        the order the actor's context shows them (empty in thread scope).

        1.31 starts a thread never observed at the record's cursor (#15265), so its messages older than the
        latest observation are hidden here (they are still observed when the thread is chosen)."""
        other: dict[str, list[Message]] = {}
        if not self.resource_scope:
            return other
        record_cursor = self.record().last_observed_at if self.config.follows_v1_31 else None
        for other_id in self.listed_threads(thread_id):
            queue = self._queues.get(other_id)
            if other_id == thread_id or queue is None or not queue.messages:
                continue
            state = self._threads.get(other_id)
            cursor = state.last_observed_at if state and state.last_observed_at else record_cursor
            messages = [m for m in queue.messages if cursor is None or m.created_at > cursor]
            if messages:
                other[self.shown_thread_id(other_id)] = messages
        return other

    def other_conversations_text(self, thread_id: str | None = None) -> str:
        """The other-conversations block as the actor's context writes it ('' when there is none)."""
        return format_other_conversations(self.other_conversations(thread_id),
                                          line_history=self.config.follows_v1_31)

    def listed_threads(self, thread_id: str | None = None, *, every: bool = False) -> list[str]:
        """The threads whose unobserved messages the actor's context may show, in the order it shows them.

        1.x lists a resource's threads newest first (by creation: here, by first message) and reads one page of
        ``other_threads_limit`` (``every``: all threads, newest first); a thread asked on for the first time was just
        created, so it is the newest and takes one place. ``other_threads_order="oldest_first"`` shows the same
        threads oldest first.
        """
        created = list(self._threads)
        if thread_id is not None and thread_id not in self._threads:
            created.append(thread_id)
        newest = created[::-1]
        if every:
            return newest
        page = self.config.other_threads_limit
        chosen = newest[:page] if page is not None else newest
        return chosen[::-1] if self.config.other_threads_order == "oldest_first" else chosen

    # -- snapshots ------------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-ready data; :meth:`from_snapshot` restores it exactly."""
        return {
            "format": SNAPSHOT_FORMAT,
            "resource_id": self.resource_id,
            "config": _stored_config(self.config),
            "token_counter": self.counter.name,
            "generations": {k: [r.to_dict() for r in gens] for k, gens in self._generations.items()},
            "threads": {k: s.to_dict() for k, s in self._threads.items()},
            "messages": [
                {**m.to_dict(), "tokens": self._message_tokens[m.id], "observed": m.id in self._observed_ids}
                for m in self._messages.values()
            ],
            # Queue order decides tie-breaks in thread selection and the order of other conversations.
            "queues": {t: [m.id for m in q.messages] for t, q in self._queues.items()},
            "reflection_hold": dict(self._reflection_hold),
            "reflection_suppressed": dict(self._reflection_suppressed),
            "reflection_failures": dict(self._reflection_failures),
        }

    @classmethod
    def from_snapshot(
        cls,
        data: Mapping[str, Any],
        *,
        observer: ChatModel,
        reflector: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
        clock: Callable[[], datetime] | None = None,
        on_event: Callable[[OMEvent], None] | None = None,
        config: OMConfig | None = None,
    ) -> ObservationalMemory:
        """Rebuild a memory saved by :meth:`snapshot`.

        With the same token estimator the state is restored exactly. With another one, message and observation
        tokens are recounted with it and reflection back-off is reset (its token marks were in the old units).
        A snapshot stores its config with credentials redacted (``***``); pass the live ``config`` to keep
        observing with provider options that carry credentials.
        """
        if data.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(
                f"snapshot format {data.get('format')!r} is not supported: expected {SNAPSHOT_FORMAT!r}"
            )
        memory = cls(
            config or OMConfig.from_dict(data["config"]), observer=observer, reflector=reflector,
            resource_id=data["resource_id"], token_counter=token_counter, clock=clock, on_event=on_event,
        )
        same_counter = memory.counter.name == data["token_counter"]
        memory._threads = {k: ThreadState.from_dict(v) for k, v in data["threads"].items()}
        memory._generations = {k: [OMRecord.from_dict(r) for r in gens] for k, gens in data["generations"].items()}
        if same_counter:
            memory._reflection_hold = dict(data.get("reflection_hold", {}))
            memory._reflection_suppressed = dict(data.get("reflection_suppressed", {}))
            memory._reflection_failures = dict(data.get("reflection_failures", {}))
        else:
            for generations in memory._generations.values():
                for record in generations:
                    record.observation_token_count = memory.counter.count_text(record.active_observations)
                    for chunk in record.buffered_observation_chunks:
                        chunk.token_count = memory.counter.count_text(chunk.observations)
                    if record.buffered_reflection is not None:
                        record.buffered_reflection_tokens = memory.counter.count_text(record.buffered_reflection)
                    record.last_buffered_at_tokens = 0  # old units: the next step starts a fresh interval
        for item in data["messages"]:
            message = Message.from_dict(item)
            memory._messages[message.id] = message
            tokens = item["tokens"] if same_counter else count_message(message, memory.counter)
            memory._message_tokens[message.id] = tokens
            if item["observed"]:
                memory._observed_ids.add(message.id)
            if memory._latest_time is None or message.created_at > memory._latest_time:
                memory._latest_time = message.created_at
        for thread_id, message_ids in data["queues"].items():
            queue = memory._queues[thread_id] = _ThreadQueue()
            for message_id in message_ids:
                queue.messages.append(memory._messages[message_id])
                queue.tokens += memory._message_tokens[message_id]
        if not same_counter:
            for key, generations in memory._generations.items():
                generations[-1].pending_message_tokens = memory.pending_tokens(None if memory.resource_scope else key)
                for chunk in generations[-1].buffered_observation_chunks:
                    chunk.message_tokens = sum(memory._message_tokens[i] for i in chunk.message_ids)
        return memory
