"""Reflection, synchronous and buffered: a part of :class:`~om_eval.om.memory.ObservationalMemory`.

A mixin like :mod:`om_eval.om.buffering`: when observations pass their threshold the Reflector condenses them into
a new generation, synchronously or from a reflection buffered ahead of time; the reply rules and hint rules of each
release are chosen here too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from om_eval.om.engine_state import EngineState
from om_eval.om.groups import group_id_for, reconcile_after_reflection, strip_groups
from om_eval.om.observer import (
    ThreadHints,
)
from om_eval.om.outcomes import ReflectionOutcome
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    ReplyReading,
)
from om_eval.om.records import (
    OMRecord,
    lines_after,
)
from om_eval.om.reflector import ReflectionResult, reflect_observations
from om_eval.om.thresholds import (
    js_round,
    reflection_buffer_due,
    reflection_due,
    reflection_slice,
)

#: Record metadata key: digest of the lines a resource-scope buffered reflection condensed.
_REFLECTED_PREFIX = "buffered_reflection_prefix_sha256"


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


class Reflecting(EngineState):
    """When to reflect, how the Reflector is asked and read, and what a reflection changes."""

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
                self.reflector, ref.model, self._reflector_view(text), target=max(target, 1), start_level=level,
                counter=self.counter,
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
        result = self._regrouped(result, text)
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
        changed = bool(_digest("\n".join(lines[: record.reflected_observation_line_count or 0])) != digest)
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
        rest = lines_after(record.active_observations, record.reflected_observation_line_count or 0)
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
                self.reflector, ref.model, self._reflector_view(record.active_observations),
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
        result = self._regrouped(result, record.active_observations)
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

    def _reflector_view(self, observations: str) -> str:
        """What the Reflector reads: in retrieval mode the observations without their group tags (1.31)."""
        return strip_groups(observations) if self.config.retrieval != "off" else observations

    def _regrouped(self, result: ReflectionResult, source: str) -> ReflectionResult:
        """Retrieval mode: the reflection grouped again over the ranges of ``source`` (1.31's reconciliation; the
        ladder judged the text without tags, the new generation keeps them and is counted with them)."""
        if self.config.retrieval == "off":
            return result
        grouped = reconcile_after_reflection(result.observations, source,
                                             lambda: group_id_for("reflection", result.observations))
        if grouped is None:
            return result
        return dataclasses.replace(result, observations=grouped, tokens=self.counter.count_text(grouped))

    def _keep_reflection_hints(self, thread_id: str | None, result: ReflectionResult) -> None:
        """1.27+ keeps the hints a synchronous reflection gives for a thread-scope record (an absent one keeps the
        thread's); 1.10 reads the suggested response and drops it."""
        if not self.rules.hint_sections or self.resource_scope or thread_id is None:
            return
        state = self.thread_state(thread_id)
        state.current_task = result.current_task or state.current_task
        state.suggested_response = result.suggested_response or state.suggested_response

    def _hint_tags(self, *, buffered: bool = False, reflector: bool = False) -> tuple[str, ...] | None:
        """The hints a call asks for as 1.27+'s sections (:attr:`EngineRules.hint_sections`; the thread title too
        when asked for, never of the Reflector; none for a buffered call); ``None`` is 1.10's way of asking."""
        if not self.rules.hint_sections:
            return None
        if buffered:
            return ()
        title = self.config.observation.thread_title and not reflector
        return CONTINUATION_HINT_TAGS + (("thread-title",) if title else ())

    def _prior_hints(self, thread_id: str | None) -> dict[str, str]:
        """The thread's hints so far by tag, which a 1.27+ reflection is shown."""
        hints = self._hints_for(thread_id) if thread_id is not None and self.rules.hint_sections else ThreadHints()
        pairs = (("current-task", hints.current_task), ("suggested-response", hints.suggested_response))
        return {tag: value for tag, value in pairs if value}

    def _observer_rules(self, *, buffered: bool = False) -> dict[str, Any]:
        """How Observer replies are read, by the rules: 1.27+ reads the hints of a call that asks for them (not a
        buffered one) as hint sections."""
        reading = ReplyReading(self.rules.degenerate_detector, self._hint_tags(buffered=buffered) or ())
        return {"checks": self.rules.reply_checks, "reading": reading}

    def _reflector_rules(self, *, buffered: bool = False) -> dict[str, Any]:
        """How the Reflector is asked and read: hints as the Observer's (no thread title), and 1.31's input without
        anchors and empty rule."""
        rules = self.rules
        tags = self._hint_tags(buffered=buffered, reflector=True)
        reading = ReplyReading(rules.degenerate_detector, tags or ())
        return {"checks": rules.reply_checks, "reading": reading, "anchor_ids": rules.reflector_anchor_ids,
                "empty_fails": rules.empty_reflection_fails, "hint_tags": tags, "wording": self.wording}

    def _reflection_due(self, tokens: int) -> bool:
        """Above the threshold; 1.31 also reflects at it."""
        return reflection_due(tokens, self.config.reflection.observation_tokens,
                              at_threshold=self.rules.reflects_at_threshold)

    def _applicable(self, result: ReflectionResult) -> bool:
        """om-eval never applies an unproductive reflection; 1.10 (``reply_checks="mastra"``) applies any."""
        return result.productive or self.rules.applies_unproductive_reflection

    def _hold_reflection(self, key: str, tokens: int) -> None:
        """Wait for growth before the next automatic reflection; the wait doubles with each failure in a row.
        1.10 (``reply_checks="mastra"``) never waits: it reflects again at the next check; 1.31 only skips a
        threshold reflection while the observations stay at ``tokens``."""
        failed = self.rules.failed_reflection
        if failed == "skip_while_unchanged":
            self._reflection_suppressed[key] = tokens
        if failed != "wait_for_growth":
            return
        ref = self.config.reflection
        failures = self._reflection_failures[key] = self._reflection_failures.get(key, 0) + 1
        growth = ref.retry_after_growth * ref.observation_tokens * 2 ** (failures - 1)
        self._reflection_hold[key] = tokens + round(growth)
