"""Async buffering and activation: a part of :class:`~om_eval.om.memory.ObservationalMemory`.

A mixin: its methods run on the memory's own state (records, queues, thread states, events) and are only meant to be
inherited by ``ObservationalMemory``; they are here because buffering is its own idea, with its own rules per
release (1.10's steps, 1.31's steps, and om-eval's resource-scope extension). The module docstring of
:mod:`om_eval.om.memory` says how the background passes of 1.x are run deterministically.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from datetime import timedelta

from om_eval.om.engine_state import EngineState
from om_eval.om.observer import (
    ObserverCall,
    ObserverRequest,
    call_observer,
)
from om_eval.om.outcomes import ObservationOutcome
from om_eval.om.parsing import (
    MultiThreadOutput,
    ObserverOutput,
)
from om_eval.om.records import (
    BufferedChunk,
    Message,
    OMRecord,
    ThreadChunk,
)
from om_eval.om.threads import (
    ThreadLoad,
    pack_batches,
    replace_or_append_thread_section,
    select_threads,
    strip_thread_tags,
)
from om_eval.om.thresholds import (
    REMINDER_TOKENS_1_10,
    buffer_has_enough,
    observation_due,
    plan_activation,
    select_activation_boundary,
    should_trigger_async_buffer,
)
from om_eval.om.tokens import (
    TOKENS_PER_CONVERSATION,
)


class Buffering(EngineState):
    """Buffering passes, activation of buffered chunks, and the per-step schedule of 1.10 and 1.31."""

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
            first_step, _ = STEP_MODELS[self.buffered_steps]
            return await first_step(self, key)

    async def _step_async(self, key: str) -> ObservationOutcome | None:
        """A step after the first with buffering on; see :meth:`observe` and the module docstring."""
        if key not in self._generations:  # nothing was ever added: reading must not create a record
            return None
        _, later_step = STEP_MODELS[self.buffered_steps]
        return await later_step(self, key)

    # -- 1.10's per-step buffering (thread scope; resource scope with resource_buffering) -------------------------

    async def _first_step_v1_10(self, key: str) -> ObservationOutcome | None:
        record = self._ensure_record(key)
        threshold = self.observation_threshold(key)
        pending = self.pending_tokens(key)
        # The context may have shrunk since the last pass (§1.8 step 4).
        record.last_buffered_at_tokens = min(record.last_buffered_at_tokens, pending)
        outcome = None
        known = record.buffered_reflection
        if record.buffered_observation_chunks and observation_due(pending, threshold):
            outcome = self._activate(key, pending, threshold)
            if outcome is not None:
                outcome = await self._with_reflection(outcome, key)
        # A failure is recorded as an event; with no activation there is no outcome to carry it.
        with contextlib.suppress(Exception):
            await self._maybe_reflect_async(key, after_observation=False)
        buffered = self.record(key).buffered_reflection
        unseen = buffered if buffered != known and self.config.observation.buffer_ignores_new_reflection else None
        await self._maybe_buffer(key, self.pending_tokens(key), threshold, unseen_reflection=unseen)
        # The first step ends by showing the observations, and with them 1.x's continuation reminder.
        if self.record(key).active_observations:
            self._reminded.add(key)
        else:
            self._reminded.discard(key)
        return outcome

    async def _later_step_v1_10(self, key: str) -> ObservationOutcome | None:
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

    async def _maybe_buffer(self, key: str, pending: int, threshold: int, *,
                            unseen_reflection: str | None = None) -> None:
        """Start a buffering pass when pending tokens crossed a new interval (§1.8 step 8).

        As 1.10 does, the boundary remembered is the *unbuffered* part of the pending tokens (pending minus the
        message tokens chunks already cover), while the trigger compares the whole pending count with it: after
        the first chunk a pass is tried at almost every interval, and skipped when under half an interval is new.
        ``unseen_reflection``: a buffered reflection the pass does not see yet
        (``observation.buffer_ignores_new_reflection``).
        """
        record = self._ensure_record(key)
        if not should_trigger_async_buffer(pending, record.last_buffered_at_tokens, self.config.buffer_tokens or 0,
                                           threshold):
            return
        covered = sum(c.message_tokens for c in record.buffered_observation_chunks)
        record.last_buffered_at_tokens = max(0, pending - covered)
        if self.resource_scope:
            await self._buffer_observations_resource(unseen_reflection)
        else:
            await self._buffer_observations(key, unseen_reflection)

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

    async def _buffer_observations(self, key: str, unseen_reflection: str | None = None) -> BufferedChunk | None:
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
        previous, truncated = self._previous(record, [c.observations for c in record.buffered_observation_chunks],
                                             unseen_reflection=unseen_reflection)
        request = ObserverRequest(
            history=self._history(candidates),
            previous_observations=previous,
            previous_truncated=truncated,
            hints={"": self._hints_for(key)} if self.rules.buffered_call_shows_hints else {},
            skip_continuation_hints=True,
            messages={"": candidates},
            line_history=self.rules.history_lines,
            thread_title=obs.thread_title,
            hint_tags=self._hint_tags(buffered=True),
        )
        system = self.wording.observer_system_prompt(
            self.config.prompt_variant, multi_thread=False, instruction=obs.instruction, thread_title=obs.thread_title,
            hint_tags=self._hint_tags(buffered=True),
        )
        try:
            call = await call_observer(
                self.observer, obs.model, system, self.wording.observer_request(request, obs.request_layout),
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
        observations = self._grouped(output.observations, candidates)
        chunk = BufferedChunk(
            id=f"ombuf-{record.id}-{candidates[0].id}",
            cycle_id=f"buffer-{record.id}-{candidates[0].id}",
            observations=observations,
            token_count=self.counter.count_text(observations),
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

    async def _buffer_observations_resource(self, unseen_reflection: str | None = None) -> BufferedChunk | None:
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
                previous = self._previous(record, prior, unseen_reflection=unseen_reflection)
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
                    calls.append(await self._observe_batch(batch, sent, self._previous(
                        record, extra, unseen_reflection=unseen_reflection), buffered=True))
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
                observations=self._grouped(strip_thread_tags(result.observations), sent[load.thread_id]),
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
                queue = self._queues.get(thread_id)
                messages = [m for m in (queue.messages if queue else []) if m.id in ids]
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


#: Each release's per-step schedule of a buffered memory: its first step of a turn, and its steps after the first.
STEP_MODELS = {
    "v1_10": (Buffering._first_step_v1_10, Buffering._later_step_v1_10),
    "v1_31": (Buffering._first_step_v1_31, Buffering._later_step_v1_31),
}
