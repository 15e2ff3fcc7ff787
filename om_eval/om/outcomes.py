"""What the engine reports: events as they happen, and the outcome of an observation or a reflection."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from om_eval.om.reflector import ReflectionResult


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
