"""The state every part of :class:`~om_eval.om.memory.ObservationalMemory` shares, declared once.

The memory is written in five files (ingestion and observation, buffering, reflection, the actor's view, snapshots);
the last four are mixins. Each inherits :class:`EngineState`, so the attributes they share and the methods one part
calls on another are declared here, with their types, and a type checker follows every part on its own. The
methods are declared for the checker only: at run time each is found on the part that defines it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from om_eval.om.config import MastraRelease, OMConfig
from om_eval.om.model import ChatModel, ModelReply
from om_eval.om.outcomes import ObservationOutcome, OMEvent, ReflectionOutcome
from om_eval.om.records import Message, OMRecord, ThreadState
from om_eval.om.rules import EngineRules
from om_eval.om.tokens import TokenCounter

if TYPE_CHECKING:
    from om_eval.om.exact.pack import PromptPack
    from om_eval.om.observer import ObserverCall, ThreadHints
    from om_eval.om.parsing import ObserverOutput
    from om_eval.om.threads import ThreadLoad
    from om_eval.om.wording import Wording


@dataclass
class MessageQueue:
    """Unobserved messages of one thread, in arrival order, with their token sum."""

    messages: list[Message] = field(default_factory=list)
    tokens: int = 0
    place: int = 0
    """The queue's position among the memory's queues (the order threads are observed in)."""


class EngineState:
    """What the parts of the memory share: its collaborators, its state, and the methods they call on each other."""

    config: OMConfig
    rules: EngineRules
    """The rules the engine follows, chosen once from :attr:`config` (:func:`om_eval.om.rules.rules_for`)."""
    wording: Wording
    """Whose words the models read (:mod:`om_eval.om.wording`), chosen once when the memory is built."""
    observer: ChatModel
    reflector: ChatModel
    resource_id: str
    counter: TokenCounter
    events: list[OMEvent]
    _clock: Callable[[], datetime] | None
    _on_event: Callable[[OMEvent], None] | None
    _messages: dict[str, Message]
    _message_tokens: dict[str, int]
    _queues: dict[str, MessageQueue]
    _queued_messages: int
    _queued_tokens: int
    _waiting: dict[str, int]
    _threads: dict[str, ThreadState]
    _generations: dict[str, list[OMRecord]]
    """Every record by memory key (a thread id, or the resource id in resource scope), oldest generation first."""
    _reflection_hold: dict[str, int]
    """om-eval's back-off: observation tokens the next automatic reflection waits for, by key."""
    _reflection_suppressed: dict[str, int]
    """1.31's skip: observation tokens at which a threshold reflection is not tried again, by key."""
    _reflection_failures: dict[str, int]
    _observed_ids: set[str]
    _latest_time: datetime | None
    _lock: asyncio.Lock
    _prefix_check: tuple[tuple[str, str, int], bool] | None
    _buffer_cursor: dict[str, datetime]
    _reminded: set[str]
    """Keys whose turn began with observations (1.10 showed its continuation reminder)."""
    _step_pending: dict[str, int]
    """1.31: pending tokens as its last step counted them; activation sizes a swap by this stale figure."""
    _turn_boundary: dict[str, int]
    """1.31: where a buffering pass of this turn started (its turn's copy of the record)."""

    if TYPE_CHECKING:
        def __init__(
            self, config: OMConfig, *, observer: ChatModel, reflector: ChatModel | None = None,
            resource_id: str = "default", token_counter: TokenCounter | None = None,
            clock: Callable[[], datetime] | None = None, on_event: Callable[[OMEvent], None] | None = None,
            prompts: PromptPack | Wording | None = None,
        ) -> None: ...

        # memory.py: identity, lookups, thresholds, observation, events
        @property
        def resource_scope(self) -> bool: ...
        @property
        def buffered_steps(self) -> MastraRelease: ...
        @property
        def thread_ids(self) -> list[str]: ...
        def _key(self, thread_id: str | None) -> str: ...
        def _now(self) -> datetime: ...
        def shown_thread_id(self, thread_id: str) -> str: ...
        def shown_message_id(self, message_id: str) -> str: ...
        def _grouped(self, observations: str, messages: Sequence[Message]) -> str: ...
        def record(self, thread_id: str | None = None) -> OMRecord: ...
        def _ensure_record(self, thread_id: str | None) -> OMRecord: ...
        def thread_state(self, thread_id: str) -> ThreadState: ...
        def unobserved_messages(self, thread_id: str | None = None) -> list[Message]: ...
        def pending_tokens(self, thread_id: str | None = None) -> int: ...
        def observation_threshold(self, thread_id: str | None = None) -> int: ...
        async def _with_reflection(self, outcome: ObservationOutcome, thread_id: str | None, *,
                                   background_only: bool = False) -> ObservationOutcome: ...
        def _append(self, existing: str, new: str, at: datetime) -> str: ...
        def _separator(self, at: datetime) -> str: ...
        def _previous(self, record: OMRecord, extra: Sequence[str] = (), *,
                      unseen_reflection: str | None = None) -> tuple[str, bool]: ...
        def _history(self, messages: Sequence[Message]) -> str: ...
        def _take_from_queue(self, thread_id: str, ids: set[str]) -> int: ...
        def _mark_observed(self, record: OMRecord, thread_id: str, messages: Sequence[Message]) -> int: ...
        def _write_hints(self, thread_id: str, output: ObserverOutput) -> None: ...
        def _hints_for(self, thread_id: str) -> ThreadHints: ...
        async def _observe_thread(self, thread_id: str) -> ObservationOutcome: ...
        def _observable_by_thread(self, current: str | None) -> dict[str, list[Message]]: ...
        def _loads_of(self, sent: Mapping[str, Sequence[Message]]) -> list[ThreadLoad]: ...
        async def _observe_resource(self, take_all: bool, current: str | None = None) -> ObservationOutcome: ...
        async def _observe_batch(self, batch: Sequence[ThreadLoad], sent: Mapping[str, list[Message]],
                                 previous: tuple[str, bool], *, buffered: bool = False) -> ObserverCall: ...
        def _emit(self, kind: str, record: OMRecord, *, replies: Iterable[ModelReply] = (), **values: Any) -> None: ...

        # buffering.py
        async def _observe_resource_sync(self, take_all: bool, current: str | None = None) -> ObservationOutcome: ...
        def _list_tokens(self, messages: Sequence[Message]) -> int: ...
        def _drop_observed_parts(self, record: OMRecord) -> None: ...

        # reflecting.py
        async def _maybe_reflect_async(self, key: str, *, after_observation: bool = True,
                                       background_only: bool = False) -> ReflectionOutcome | None: ...
        async def _maybe_reflect(self, thread_id: str | None) -> ReflectionOutcome | None: ...
        def _hint_tags(self, *, buffered: bool = False, reflector: bool = False) -> tuple[str, ...] | None: ...
        def _observer_rules(self, *, buffered: bool = False) -> dict[str, Any]: ...

        # actor_view.py
        def turn_history(self, thread_id: str | None = None) -> list[Message]: ...
        def listed_threads(self, thread_id: str | None = None, *, every: bool = False) -> list[str]: ...
