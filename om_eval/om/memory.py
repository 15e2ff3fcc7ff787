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

The class is written in five files, one idea each: this one (ingestion, thresholds, synchronous observation),
:mod:`om_eval.om.buffering` (buffering and activation), :mod:`om_eval.om.reflecting` (reflection),
:mod:`om_eval.om.actor_view` (what the actor sees) and :mod:`om_eval.om.snapshots` (saving and restoring), the last
four as mixins it inherits; :mod:`om_eval.om.outcomes` holds what it reports.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import xxhash

from om_eval.om.actor_view import ActorView
from om_eval.om.buffering import Buffering
from om_eval.om.config import MastraRelease, OMConfig
from om_eval.om.dates import format_boundary
from om_eval.om.engine_state import MessageQueue
from om_eval.om.exact.pack import PromptPack
from om_eval.om.groups import group_id_for, message_range, wrap_in_group
from om_eval.om.history_lines import format_history_lines, format_thread_lines
from om_eval.om.model import ChatModel, ModelReply
from om_eval.om.observer import (
    ObserverCall,
    ObserverRequest,
    ThreadHints,
    call_observer,
    format_messages,
    format_thread_blocks,
)
from om_eval.om.outcomes import ObservationOutcome, OMEvent
from om_eval.om.parsing import (
    MultiThreadOutput,
    ObserverOutput,
)
from om_eval.om.records import (
    Message,
    OMRecord,
    ThreadState,
    lines_after,
)
from om_eval.om.reflecting import Reflecting
from om_eval.om.rules import rules_for
from om_eval.om.snapshots import Snapshots, stored_config
from om_eval.om.threads import (
    ThreadLoad,
    merge_thread_section_as_mastra,
    obscure_thread_id,
    pack_batches,
    replace_or_append_thread_section,
    select_threads,
)
from om_eval.om.thresholds import (
    dynamic_message_threshold,
    observation_due,
)
from om_eval.om.tokens import (
    TOKENS_PER_CONVERSATION,
    TokenCounter,
    count_message,
    default_counter,
    over_limit,
)
from om_eval.om.truncation import prepare_previous_observations
from om_eval.om.wording import Wording, wording_for


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


class ObservationalMemory(Buffering, Reflecting, ActorView, Snapshots):
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
        prompts: whose words the models read: ``None`` for om-eval's own (:data:`~om_eval.om.wording.PARAPHRASE`),
            or, with ``prompt_variant="mastra_exact"``, a Mastra release's
            (:func:`om_eval.om.exact.load_pack`), which must fit the engine settings
            (:func:`~om_eval.om.wording.release_conflicts`); any :class:`~om_eval.om.wording.Wording` also does.

    Raises:
        ConfigError: ``prompts`` do not fit ``config`` (the message names the settings and what they need).
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
        prompts: PromptPack | Wording | None = None,
    ) -> None:
        self.config = config
        self.rules = rules_for(config)
        self.wording = wording_for(config, prompts)
        self.observer = observer
        self.reflector = reflector or observer
        self.resource_id = resource_id
        self.counter = token_counter or default_counter()
        self._clock = clock
        self._on_event = on_event
        self.events: list[OMEvent] = []
        self._messages: dict[str, Message] = {}
        self._message_tokens: dict[str, int] = {}
        self._queues: dict[str, MessageQueue] = {}
        # Every queue's messages and tokens together, kept as messages come and go: resource scope checks its
        # threshold after every message, and summing a conversation's thousand queues each time is quadratic.
        self._queued_messages = 0
        self._queued_tokens = 0
        # The threads whose queue holds messages, each with its queue's place in ``_queues``: an observation reads
        # those, in ``_queues``' order, not every thread a long conversation has had (thousands at 10M tokens).
        self._waiting: dict[str, int] = {}
        self._threads: dict[str, ThreadState] = {}
        self._generations: dict[str, list[OMRecord]] = {}
        self._reflection_hold: dict[str, int] = {}
        # Rules whose failed reflection is skip_while_unchanged: observation tokens at which it is skipped.
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
    def buffered_steps(self) -> MastraRelease:
        """Whose per-step schedule buffering follows: the rules' in thread scope, 1.10's in resource scope (whose
        buffering is om-eval's extension of 1.10)."""
        return "v1_10" if self.resource_scope else self.rules.buffered_steps

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

    def shown_message_id(self, message_id: str) -> str:
        """The id a model sees for a message (group ranges, the recall tool): 16 hex digits of its 64-bit xxHash when
        thread ids are obscured (a stored id can name its thread, and so its question), else the id with ``:``
        written ``-`` (the recall tool reads ``a:b`` as a range, never as one id)."""
        if self.config.obscure_thread_ids:
            return xxhash.xxh64_hexdigest(message_id.encode("utf-8"))
        return message_id.replace(":", "-")

    def _grouped(self, observations: str, messages: Sequence[Message]) -> str:
        """Retrieval mode: one cycle's observations as an observation group over ``messages`` (as shown)."""
        if self.config.retrieval == "off" or not observations.strip() or not messages:
            return observations
        range_ = message_range(messages, self.shown_message_id)
        assert range_ is not None
        return wrap_in_group(observations, range_, group_id_for(range_, observations))

    def record(self, thread_id: str | None = None) -> OMRecord:
        """The active record (latest generation) for ``thread_id`` (ignored in resource scope).

        Reading never changes the memory: a thread with no record yet gets a fresh, unsaved one.
        """
        key = self._key(thread_id)
        generations = self._generations.get(key)
        return generations[-1] if generations else self._new_record(key)

    def observations(self, thread_id: str | None = None) -> str:
        """The observations held now for ``thread_id`` (all threads' in resource scope): what the Observer wrote and
        the Reflector condensed, as the actor reads them before its context adds relative dates. The same as
        ``record(thread_id).active_observations``; :meth:`build_context` gives the actor's whole view."""
        return self.record(thread_id).active_observations

    def _new_record(self, key: str) -> OMRecord:
        now = self._now()
        return OMRecord(
            id=f"om-{key}-gen0",
            scope=self.config.scope,
            resource_id=self.resource_id,
            thread_id=None if self.resource_scope else key,
            created_at=now,
            updated_at=now,
            config=stored_config(self.config),
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

    def queued_tokens(self, thread_id: str | None = None) -> int:
        """Tokens of the messages not yet observed: of one thread's queue, or of every queue when ``thread_id`` is
        None (kept as messages come and go: no counting)."""
        if thread_id is not None:
            queue = self._queues.get(thread_id)
            return queue.tokens if queue else 0
        return self._queued_tokens

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
        queue = self._queues.get(message.thread_id)
        if queue is None:
            queue = self._queues[message.thread_id] = MessageQueue(place=len(self._queues))
        if not queue.messages:
            self._waiting[message.thread_id] = queue.place
        queue.messages.append(message)
        queue.tokens += tokens
        self._queued_messages += 1
        self._queued_tokens += tokens
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
            return TOKENS_PER_CONVERSATION + self._queued_tokens if self._queued_messages else 0
        queue = self._queues.get(self._key(thread_id))
        return TOKENS_PER_CONVERSATION + queue.tokens if queue and queue.messages else 0

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

    def _previous(self, record: OMRecord, extra: Sequence[str] = (), *,
                  unseen_reflection: str | None = None) -> tuple[str, bool]:
        """The prior observations the Observer sees (§1.14): ``extra`` texts (buffered chunks) are appended, and
        with a token budget a buffered reflection stands in for the lines it condenses (unless it is
        ``unseen_reflection``, one the call does not see yet)."""
        budget = self.config.observation.previous_observer_tokens
        chunks = "\n\n".join(t for t in extra if t)
        joint = self.rules.buffered_mark  # 1.31 marks where the chunks not yet activated begin
        text = joint.join(t for t in (record.active_observations, chunks) if t)
        seen = record.buffered_reflection is not None and record.buffered_reflection != unseen_reflection
        if budget is not False and seen and record.buffered_reflection and record.reflected_observation_line_count:
            rest = lines_after(text, record.reflected_observation_line_count).strip()
            text = record.buffered_reflection + ("\n\n" + rest if rest else "")
        return prepare_previous_observations(text, budget, self.counter.count_text, exceeds=over_limit(self.counter))

    def _history(self, messages: Sequence[Message]) -> str:
        """The Observer's view of ``messages``: 1.10's blocks, or 1.15+'s lines (:attr:`EngineRules.history_lines`)."""
        return format_history_lines(messages) if self.rules.history_lines else format_messages(messages)

    def _thread_history(self, threads: Mapping[str, Sequence[Message]]) -> str:
        return format_thread_lines(threads) if self.rules.history_lines else format_thread_blocks(threads)

    def _take_from_queue(self, thread_id: str, ids: set[str]) -> int:
        """Remove ``ids`` from the thread's unobserved messages; returns the tokens of those it held."""
        queue = self._queues[thread_id]
        held = {m.id for m in queue.messages} & ids
        tokens = sum(self._message_tokens[i] for i in held)
        queue.messages = [m for m in queue.messages if m.id not in held]
        queue.tokens -= tokens
        self._queued_messages -= len(held)
        self._queued_tokens -= tokens
        if not queue.messages:
            self._waiting.pop(thread_id, None)
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
            hint_blocks=self.rules.hint_sections,
            messages={"": messages},
            line_history=self.rules.history_lines,
            thread_title=obs.thread_title,
            hint_tags=self._hint_tags(),
        )
        system = self.wording.observer_system_prompt(
            self.config.prompt_variant,
            multi_thread=False,
            instruction=obs.instruction,
            thread_title=obs.thread_title,
            hint_tags=self._hint_tags(),
        )
        before = record.observation_token_count
        try:
            call = await call_observer(
                self.observer, obs.model, system, self.wording.observer_request(request, obs.request_layout),
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
            grouped = self._grouped(output.observations, messages)
            record.active_observations = self._append(record.active_observations, grouped, observed_at)
        message_tokens = self._mark_observed(record, thread_id, messages)
        self._write_hints(thread_id, output)
        self._finish_record(record, observed_at, message_tokens)
        # Every buffered message was just observed: its chunks are void, and buffering starts over (§1.8 step 10).
        if not self.rules.sync_observation_keeps_chunks:
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
        queues = {t: list(self._queues[t].messages) for t in sorted(self._waiting, key=self._waiting.__getitem__)}
        if not self.rules.resource_turn_history:
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
        hidden = buffered and not self.rules.buffered_call_shows_hints
        by_shown = {shown[t]: sent[t] for t in shown}
        request = ObserverRequest(
            history=self._thread_history(by_shown),
            previous_observations=previous[0],
            previous_truncated=previous[1],
            thread_count=len(batch),
            hints={} if hidden else {shown[t]: self._hints_for(t) for t in shown},
            skip_continuation_hints=buffered,
            messages=by_shown,
            line_history=self.rules.history_lines,
            thread_title=obs.thread_title,
            hint_tags=self._hint_tags(buffered=buffered),
        )
        system = self.wording.observer_system_prompt(
            self.config.prompt_variant, multi_thread=True, instruction=obs.instruction,
            thread_title=obs.thread_title, hint_tags=self._hint_tags(buffered=buffered),
        )
        return await call_observer(
            self.observer, obs.model, system, self.wording.observer_request(request, obs.request_layout),
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
        merge = (merge_thread_section_as_mastra if self.rules.thread_sections == "mastra"
                 else replace_or_append_thread_section)
        for load in batch:
            thread_id = load.thread_id
            shown = self.shown_thread_id(thread_id)
            result = output.threads.get(shown, ObserverOutput(observations=""))
            messages = sent[thread_id]
            observed_at = max(m.created_at for m in messages)
            record.active_observations = merge(
                record.active_observations, shown, self._grouped(result.observations, messages),
                self._separator(observed_at)
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
