"""The simple observational-memory layer: buffer, distil, cap, recall (its rules 1-7: docs/memory-systems.md).

One mutable state per scope key (the resource id or the thread id). A hook call holds its key's
:class:`asyncio.Lock` from buffering to distillation, so two concurrent calls on one key cannot hand the same
buffer to the observer twice, and items buffered during a distillation are not emptied with it. The state changes
only after the observer has answered: an observer that fails or runs out of time leaves observations and version
as they were and keeps the buffer, with the failing call's items in it (nothing is lost; the next hook call that
finds the buffer at the threshold distils it all).

Our reading of the hook timeout: it bounds the observer's answer, the one part that waits on a model. A
synchronous observer runs to completion on the event loop and cannot be interrupted; an observer that may block
should be ``async`` (or hand its work to :func:`asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from om_eval.om.tokens import default_counter
from om_eval.simple_om.block import fit_block
from om_eval.simple_om.config import Scope, SimpleOMConfig
from om_eval.simple_om.items import appended_text, stored_text

#: ``(buffer, oldest first) -> observations``, or an awaitable of them.
Observer = Callable[[list[str]], Sequence[str] | Awaitable[Sequence[str]]]

SNAPSHOT_FORMAT = "om-eval/simple-om@1"


class SimpleOMTimeout(TimeoutError):
    """The observer did not answer within the hook timeout; the buffer was kept."""


def fallback_observer(buffer: list[str]) -> list[str]:
    """What a distillation records when no observer is given (rule 4)."""
    return [f"Processed {len(buffer)} items"]


@dataclass(frozen=True)
class SimpleOMState:
    """A snapshot of one scope key's state; later hook calls do not change it."""

    observations: tuple[str, ...] = ()
    buffer: tuple[str, ...] = ()
    buffer_tokens: int = 0
    version: int = 0


@dataclass
class _LiveState:
    observations: list[str] = field(default_factory=list)
    buffer: list[str] = field(default_factory=list)
    buffer_tokens: int = 0
    version: int = 0

    def frozen(self) -> SimpleOMState:
        return SimpleOMState(tuple(self.observations), tuple(self.buffer), self.buffer_tokens, self.version)


def count_o200k(text: str) -> int:
    """The default counter, tiktoken ``o200k_base``; loaded at the first count, so that building a memory only to
    check its settings needs no tokenizer file."""
    return default_counter().count_text(text)


def _describe(function: Callable[..., Any]) -> str:
    """A name for the record: a token counter's own name, else the function's qualified name."""
    if function is count_o200k:
        return "tiktoken/o200k_base"
    owner_name = getattr(getattr(function, "__self__", None), "name", None)
    if isinstance(owner_name, str):
        return owner_name
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', type(function).__name__)}"


def _observations_from(answer: object) -> list[str]:
    if isinstance(answer, str) or not isinstance(answer, Sequence) or not all(isinstance(o, str) for o in answer):
        raise TypeError(f"the observer returned {answer!r:.200}: it must return a list of strings (or an awaitable "
                        "of one); the buffer is kept")
    return list(answer)


class SimpleObservationalMemory:
    """Observations distilled from a token-counted buffer, one state per resource or per thread.

    Args:
        buffer_threshold: buffer tokens at which the observer runs (``>=``).
        max_observations: observations kept; the oldest are evicted first.
        scope: ``"resource"`` (all threads of a resource share one state) or ``"thread"``.
        observer: ``(buffer) -> list[str]`` or an awaitable of it; None records ``Processed N items``.
        budget: ``(min, max)`` tokens of the recalled block; it never exceeds max, min is recorded only.
        count_tokens: any ``str -> int`` that never counts fewer tokens for a text with a line added (every
            tokenizer: the recalled block is fitted by halving on that); None counts with tiktoken ``o200k_base``.
        timeout_s: seconds a hook waits for an awaitable observer before raising :class:`SimpleOMTimeout`.
    """

    def __init__(
        self,
        buffer_threshold: int = 2000,
        max_observations: int = 50,
        scope: Scope = "resource",
        observer: Observer | None = None,
        budget: tuple[int, int] = (500, 2500),
        count_tokens: Callable[[str], int] | None = None,
        *,
        timeout_s: float = 60.0,
    ) -> None:
        self.config = SimpleOMConfig(buffer_threshold, max_observations, scope, budget, timeout_s)
        for name, value in (("observer", observer), ("count_tokens", count_tokens)):
            if value is not None and not callable(value):
                raise ValueError(f"{name}={value!r:.200} is invalid: pass a function, or None for the default")
        self.observer: Observer = observer if observer is not None else fallback_observer
        self.count_tokens: Callable[[str], int] = count_tokens if count_tokens is not None else count_o200k
        self._states: dict[str, _LiveState] = {}
        # A lock binds to the event loop that first waits on it; a harness may run one memory under several loops.
        self._locks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}

    # -- identity -------------------------------------------------------------------------------------------

    def key_for(self, *, thread_id: str | None = None, resource_id: str | None = None) -> str:
        """The state key of a conversation (rule 7): the resource id in resource scope, the thread id in thread
        scope (our reading: thread ids are taken as unique across resources)."""
        name, value = ("resource_id", resource_id) if self.config.scope == "resource" else ("thread_id", thread_id)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name}={value!r} is invalid: scope={self.config.scope!r} keys its state by "
                             f"{name}, so pass {name}= as a non-empty string")
        return value

    # -- hooks ----------------------------------------------------------------------------------------------

    async def on_item_append(self, item: Mapping[str, Any], *, thread_id: str | None = None,
                             resource_id: str | None = None) -> bool:
        """Buffer an input item (a user message or a tool output, rule 1), then distil if due (rule 3).

        Returns:
            Whether this call distilled.
        """
        key = self.key_for(thread_id=thread_id, resource_id=resource_id)
        text = appended_text(item)
        return await self._buffer_and_distil(key, [] if text is None else [text])

    async def store(self, items: Sequence[Mapping[str, Any]], *, thread_id: str | None = None,
                    resource_id: str | None = None) -> bool:
        """Buffer the ``message`` items of the model's response (rule 2), then distil if due (rule 3).

        Returns:
            Whether this call distilled.
        """
        key = self.key_for(thread_id=thread_id, resource_id=resource_id)
        if isinstance(items, str | Mapping) or not isinstance(items, Sequence):
            raise ValueError(f"items={items!r:.200} is invalid: store() takes the list of the response's items; "
                             "wrap a single item as [item]")
        texts = [text for text in map(stored_text, items) if text is not None]
        return await self._buffer_and_distil(key, texts)

    async def _buffer_and_distil(self, key: str, texts: list[str]) -> bool:
        counts = [self._count(text) for text in texts]  # before anything changes: a failing counter changes nothing
        async with self._lock(key):
            state = self._states.get(key)
            if texts:
                state = self._states.setdefault(key, _LiveState())
                state.buffer.extend(texts)
                state.buffer_tokens += sum(counts)
            # Checked even when this call buffered nothing: a buffer kept after a timeout is then distilled.
            if state is None or state.buffer_tokens < self.config.buffer_threshold:
                return False
            await self._distil(key, state)
            return True

    async def _distil(self, key: str, state: _LiveState) -> None:
        answer = self.observer(list(state.buffer))
        if inspect.isawaitable(answer):
            deadline = asyncio.timeout(self.config.timeout_s)
            try:
                async with deadline:
                    answer = await answer
            except TimeoutError as error:
                if not deadline.expired():
                    raise  # the observer's own TimeoutError, not ours
                raise SimpleOMTimeout(
                    f"the observer did not answer within timeout_s={self.config.timeout_s} s for key {key!r}; "
                    f"the buffer ({len(state.buffer)} entries, {state.buffer_tokens} tokens) is kept and the next "
                    "hook call distils it"
                ) from error
        observations = _observations_from(answer)
        state.observations = (state.observations + observations)[-self.config.max_observations:]
        state.buffer = []
        state.buffer_tokens = 0
        state.version += 1

    def _count(self, text: str) -> int:
        count = self.count_tokens(text)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(f"count_tokens returned {count!r} for {text!r:.80}: it must return an int >= 0")
        return count

    def _lock(self, key: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        held = self._locks.get(key)
        if held is None or held[0] is not loop:
            held = (loop, asyncio.Lock())
            self._locks[key] = held
        return held[1]

    # -- reading --------------------------------------------------------------------------------------------

    def state(self, *, thread_id: str | None = None, resource_id: str | None = None) -> SimpleOMState:
        """The conversation's state as a frozen snapshot (a new key reads empty, 0, 0)."""
        live = self._states.get(self.key_for(thread_id=thread_id, resource_id=resource_id))
        return live.frozen() if live is not None else SimpleOMState()

    def recall(self, *, thread_id: str | None = None, resource_id: str | None = None) -> str | None:
        """The ``<observations>`` block within ``budget[1]`` tokens, or None when there is nothing to inject."""
        live = self._states.get(self.key_for(thread_id=thread_id, resource_id=resource_id))
        if live is None:
            return None
        return fit_block(live.observations, self.config.budget[1], self.count_tokens)

    def recall_message(self, *, thread_id: str | None = None, resource_id: str | None = None,
                       developer_role: bool = True) -> dict[str, str] | None:
        """The block as the message rule 5 asks for: ``developer``, or ``system`` for providers without it."""
        block = self.recall(thread_id=thread_id, resource_id=resource_id)
        if block is None:
            return None
        return {"role": "developer" if developer_role else "system", "content": block}

    # -- copies ---------------------------------------------------------------------------------------------

    def spawn(self) -> Self:
        """A child with a deep copy of every state (rule 6); it shares the observer and the counter."""
        child = self._from_config(self.config, self.observer, self.count_tokens)
        child._states = copy.deepcopy(self._states)
        return child

    def snapshot(self) -> dict[str, Any]:
        """Every state and the config as JSON-ready data; :meth:`from_snapshot` restores it."""
        return {
            "format": SNAPSHOT_FORMAT,
            "config": self.config.to_dict(),
            "observer": _describe(self.observer),
            "token_counter": _describe(self.count_tokens),
            "states": {
                key: {"observations": list(s.observations), "buffer": list(s.buffer),
                      "buffer_tokens": s.buffer_tokens, "version": s.version}
                for key, s in sorted(self._states.items())
            },
        }

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any], *, observer: Observer | None = None,
                      count_tokens: Callable[[str], int] | None = None) -> Self:
        """Rebuild a memory saved by :meth:`snapshot` (functions are not stored: pass them again).

        Buffer tokens are recounted with ``count_tokens``, so the next threshold check compares like with like
        even if the snapshot was built with another counter; with the same counter nothing changes.
        """
        if not isinstance(data, Mapping) or data.get("format") != SNAPSHOT_FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise ValueError(f"not a simple OM snapshot (format {found!r}, expected {SNAPSHOT_FORMAT!r}): pass "
                             "what SimpleObservationalMemory.snapshot() returned")
        memory = cls._from_config(SimpleOMConfig.from_dict(data["config"]), observer, count_tokens)
        for key, stored in data["states"].items():
            observations, buffer, version = stored["observations"], stored["buffer"], stored["version"]
            if not (all(isinstance(o, str) for o in observations) and all(isinstance(b, str) for b in buffer)
                    and isinstance(version, int) and version >= 0):
                raise ValueError(f"snapshot state {key!r} is malformed: observations and buffer must be lists of "
                                 "strings and version an integer >= 0")
            memory._states[key] = _LiveState(list(observations), list(buffer),
                                              sum(memory._count(entry) for entry in buffer), version)
        return memory

    @classmethod
    def _from_config(cls, config: SimpleOMConfig, observer: Observer | None,
                     count_tokens: Callable[[str], int] | None) -> Self:
        return cls(config.buffer_threshold, config.max_observations, config.scope, observer, config.budget,
                   count_tokens, timeout_s=config.timeout_s)
