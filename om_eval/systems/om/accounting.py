"""When observation is due during a replay: three readings of how Mastra counts pending tokens.

Why three: the threshold is the same 30k everywhere, but what is counted against it differs between om-eval's
first reading, the development code that prepared Mastra's published LongMemEval data, and the released 1.x
packages; on synthetic S the three give very different numbers of observations and of raw messages left for the
actor (``om_eval/configs/README.md`` has the measured figures). Each is checked after every replay unit (a
user/assistant pair by default).

* ``exact`` (om-eval's reading): every unobserved message counts once at its full length, all threads in resource
  scope, plus 24 per conversation; observe when the total reaches the threshold (``>=``); resource scope observes
  the largest threads until they make up the threshold.
* ``mastra_dev`` (om-reference §1.16, the code behind the published runs): after each call the current thread's
  unobserved messages are counted (so a session's earlier pairs are counted again on every pair) and added to
  the record's running total; observation fires when the running total plus that count is strictly above the
  threshold (``>``) and then covers every thread with unobserved messages; otherwise the count is added to the
  running total. The total restarts at 0 after an observation.
* ``mastra_step`` (1.1 to 1.31, §1.8 steps 3 and 6): the turn's history (the current thread's unobserved
  messages; under 1.31 in resource scope every thread's, see :meth:`~ObservationalMemory.turn_history`) plus the
  *text* of the other-conversations block the actor would be shown (each other thread's unobserved messages,
  formatted, parts cut at 500 characters, newest threads first, one page of 100); observe at ``>=`` with 1.x's
  thread selection.

With async buffering the engine's own per-step pipeline decides (``exact`` only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from om_eval.om.memory import ObservationalMemory
from om_eval.om.thresholds import observation_due
from om_eval.om.tokens import count_messages

PendingAccounting = Literal["exact", "mastra_dev", "mastra_step"]
PENDING_ACCOUNTINGS = ("exact", "mastra_dev", "mastra_step")


@dataclass(frozen=True)
class Decision:
    """Whether to observe now, and whether to take every thread (resource scope)."""

    due: bool
    select_all: bool = False


class PendingCounter:
    """Decides, after each replay unit, whether observation is due under one reading (state: the dev total)."""

    def __init__(self, reading: PendingAccounting) -> None:
        if reading not in PENDING_ACCOUNTINGS:
            raise ValueError(f"replay.pending_accounting={reading!r} is invalid: allowed values are "
                             f"{', '.join(PENDING_ACCOUNTINGS)}")
        self.reading = reading
        self.dev_total = 0
        """``mastra_dev``: the record's running total of counted session tokens."""

    def after_unit(self, memory: ObservationalMemory, thread_id: str) -> Decision:
        """Count what ``memory`` holds after a unit was added to ``thread_id``, by this reading."""
        threshold = memory.observation_threshold(thread_id)
        if self.reading == "exact":
            pending = memory.pending_tokens(thread_id)
            return Decision(pending > 0 and observation_due(pending, threshold))
        if self.reading == "mastra_dev":
            session = count_messages(memory.unobserved_messages(thread_id), memory.counter)
            if self.dev_total + session > threshold:
                self.dev_total = 0
                return Decision(True, select_all=True)
            self.dev_total += session
            return Decision(False)
        history = count_messages(memory.turn_history(thread_id), memory.counter)
        other = memory.other_conversations_text(thread_id)
        pending = history + (memory.counter.count_text(other) if other else 0)
        return Decision(pending > 0 and observation_due(pending, threshold))
