"""The data OM keeps: messages, the memory record and its generations, per-thread hints (om-reference §1.1–§1.3).

Every type converts to and from plain JSON-ready dicts, so a memory snapshot round-trips exactly, async
buffering state included (chunks, buffered reflection, buffer cursors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]


def to_iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def from_iso(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


@dataclass(frozen=True)
class Message:
    """One conversation message. ``content`` is text or a tuple of parts (text, tool-call, tool-result, ...)."""

    id: str
    thread_id: str
    role: str
    content: str | tuple[Mapping[str, Any], ...]
    created_at: datetime

    def text(self) -> str:
        """The message's plain text (text parts joined); tool parts are left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type", "text") == "text")

    def to_dict(self) -> dict[str, Any]:
        content = self.content if isinstance(self.content, str) else [dict(p) for p in self.content]
        return {
            "id": self.id,
            "thread_id": self.thread_id,
            "role": self.role,
            "content": content,
            "created_at": to_iso(self.created_at),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        content = data["content"]
        return cls(
            id=data["id"],
            thread_id=data["thread_id"],
            role=data["role"],
            content=content if isinstance(content, str) else tuple(dict(p) for p in content),
            created_at=datetime.fromisoformat(data["created_at"]),
        )


@dataclass
class ThreadChunk:
    """om-eval: one thread's share of a resource-scope buffered chunk (1.10 has no buffering in resource scope).

    Kept apart so that activation can merge each thread's observations into that thread's section, and so that a
    synchronous observation of some threads can drop just their part of a chunk.
    """

    observations: str
    message_ids: list[str]
    current_task: str | None = None
    suggested_continuation: str | None = None
    thread_title: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThreadChunk:
        values = dict(data)
        values["message_ids"] = list(values.get("message_ids", []))
        return cls(**values)


@dataclass
class BufferedChunk:
    """Observations produced ahead of time by async buffering, waiting for activation (§1.2).

    In resource scope (an om-eval extension) ``threads`` holds each thread's part, keyed by the real thread id
    in the order the Observer was given them; ``observations`` is then those parts in ``<thread>`` sections,
    which is what later Observer calls see as prior observations. Thread scope leaves ``threads`` as None.
    """

    id: str
    cycle_id: str
    observations: str
    token_count: int
    message_ids: list[str]
    message_tokens: int
    last_observed_at: datetime
    created_at: datetime
    suggested_continuation: str | None = None
    current_task: str | None = None
    threads: dict[str, ThreadChunk] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["last_observed_at"] = to_iso(self.last_observed_at)
        data["created_at"] = to_iso(self.created_at)
        if self.threads is None:
            del data["threads"]  # thread-scope chunks keep the shape snapshots had before resource buffering
        else:
            data["threads"] = {t: part.to_dict() for t, part in self.threads.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BufferedChunk:
        values = dict(data)
        values["last_observed_at"] = datetime.fromisoformat(values["last_observed_at"])
        values["created_at"] = datetime.fromisoformat(values["created_at"])
        threads = values.get("threads")
        values["threads"] = None if threads is None else {t: ThreadChunk.from_dict(p) for t, p in threads.items()}
        return cls(**values)


_DATETIME_FIELDS = ("created_at", "updated_at", "last_observed_at", "last_buffered_at_time")


def lines_after(text: str, count: int) -> str:
    """``"\\n".join(text.split("\\n")[count:])`` for a ``count`` >= 0, without splitting the whole text: a buffered
    reflection stands in for the first ``count`` lines of observations that run to thousands, at every pass."""
    position = 0
    for _ in range(count):
        position = text.find("\n", position) + 1
        if not position:
            return ""
    return text[position:]


@dataclass
class OMRecord:
    """One generation of a memory: the active observations and the counters and cursors that go with them."""

    id: str
    scope: str
    resource_id: str
    thread_id: str | None
    created_at: datetime
    updated_at: datetime
    origin_type: Literal["initial", "reflection"] = "initial"
    generation_count: int = 0
    active_observations: str = ""
    last_observed_at: datetime | None = None
    observed_message_ids: list[str] = field(default_factory=list)
    observed_timezone: str | None = None
    total_tokens_observed: int = 0
    observation_token_count: int = 0
    pending_message_tokens: int = 0
    buffered_observation_chunks: list[BufferedChunk] = field(default_factory=list)
    buffered_reflection: str | None = None
    buffered_reflection_tokens: int | None = None
    buffered_reflection_input_tokens: int | None = None
    reflected_observation_line_count: int | None = None
    last_buffered_at_tokens: int = 0
    last_buffered_at_time: datetime | None = None
    is_observing: bool = False
    is_reflecting: bool = False
    is_buffering_observation: bool = False
    is_buffering_reflection: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    def next_generation(self, observations: str, token_count: int, now: datetime) -> OMRecord:
        """The record that replaces this one after a reflection (§1.1: what is copied and what is reset)."""
        return OMRecord(
            id=f"{self.id.rsplit('-gen', 1)[0]}-gen{self.generation_count + 1}",
            scope=self.scope,
            resource_id=self.resource_id,
            thread_id=self.thread_id,
            created_at=now,
            updated_at=now,
            origin_type="reflection",
            generation_count=self.generation_count + 1,
            active_observations=observations,
            last_observed_at=self.last_observed_at,
            observed_timezone=self.observed_timezone,
            total_tokens_observed=self.total_tokens_observed,
            observation_token_count=token_count,
            config=dict(self.config),
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for name in _DATETIME_FIELDS:
            data[name] = to_iso(getattr(self, name))
        data["buffered_observation_chunks"] = [c.to_dict() for c in self.buffered_observation_chunks]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OMRecord:
        values = dict(data)
        for name in _DATETIME_FIELDS:
            values[name] = from_iso(values.get(name))
        values["buffered_observation_chunks"] = [
            BufferedChunk.from_dict(c) for c in values.get("buffered_observation_chunks", [])
        ]
        return cls(**values)


@dataclass
class ThreadState:
    """Per-thread OM metadata: the Observer's continuity hints and the thread's own cursor (§1.3)."""

    thread_id: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    last_observed_at: datetime | None = None
    last_observed_message_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["last_observed_at"] = to_iso(self.last_observed_at)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThreadState:
        values = dict(data)
        values["last_observed_at"] = from_iso(values.get("last_observed_at"))
        return cls(**values)
