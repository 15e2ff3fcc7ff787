"""A memory's whole state as JSON-ready data, and back: a part of :class:`~om_eval.om.memory.ObservationalMemory`.

A mixin like :mod:`om_eval.om.buffering`. :meth:`Snapshots.snapshot` writes everything (records by generation,
thread states, unobserved queues, buffered chunks, guards, events) and :meth:`Snapshots.from_snapshot` restores it
exactly, so a benchmark can build a memory once and answer every question of it from the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from om_eval.common.secrets import redact_secrets
from om_eval.om.config import OMConfig
from om_eval.om.engine_state import EngineState, MessageQueue
from om_eval.om.model import ChatModel
from om_eval.om.outcomes import OMEvent
from om_eval.om.records import (
    Message,
    OMRecord,
    ThreadState,
)
from om_eval.om.tokens import (
    TokenCounter,
    count_message,
)

if TYPE_CHECKING:
    from om_eval.om.exact.pack import PromptPack
    from om_eval.om.wording import Wording

SNAPSHOT_FORMAT = "om-eval/memory@1"


def stored_config(config: OMConfig) -> dict[str, Any]:
    """The config as records and snapshots keep it: provider options may carry credentials, never stored."""
    stored: dict[str, Any] = redact_secrets(config.to_dict())
    return stored


class Snapshots(EngineState):
    """Saving a memory and restoring it."""

    # -- snapshots ------------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-ready data; :meth:`from_snapshot` restores it exactly."""
        return {
            "format": SNAPSHOT_FORMAT,
            "resource_id": self.resource_id,
            "config": stored_config(self.config),
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
        prompts: PromptPack | Wording | None = None,
    ) -> Self:
        """Rebuild a memory saved by :meth:`snapshot`.

        With the same token estimator the state is restored exactly. With another one, message and observation
        tokens are recounted with it and reflection back-off is reset (its token marks were in the old units).
        A snapshot stores its config with credentials redacted (``***``); pass the live ``config`` to keep
        observing with provider options that carry credentials. A memory of ``prompt_variant="mastra_exact"``
        needs its ``prompts`` (the pack) again, as when it was built.
        """
        if data.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(
                f"snapshot format {data.get('format')!r} is not supported: expected {SNAPSHOT_FORMAT!r}"
            )
        memory = cls(
            config or OMConfig.from_dict(data["config"]), observer=observer, reflector=reflector,
            resource_id=data["resource_id"], token_counter=token_counter, clock=clock, on_event=on_event,
            prompts=prompts,
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
            queue = memory._queues[thread_id] = MessageQueue(place=len(memory._queues))
            for message_id in message_ids:
                queue.messages.append(memory._messages[message_id])
                queue.tokens += memory._message_tokens[message_id]
        memory._queued_messages = sum(len(q.messages) for q in memory._queues.values())  # the running totals
        memory._queued_tokens = sum(q.tokens for q in memory._queues.values())
        memory._waiting = {t: q.place for t, q in memory._queues.items() if q.messages}
        if not same_counter:
            for key, generations in memory._generations.items():
                generations[-1].pending_message_tokens = memory.pending_tokens(None if memory.resource_scope else key)
                for chunk in generations[-1].buffered_observation_chunks:
                    chunk.message_tokens = sum(memory._message_tokens[i] for i in chunk.message_ids)
        return memory
