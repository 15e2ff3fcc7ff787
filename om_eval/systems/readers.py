"""``memory=full_context`` and ``memory=oracle``: LongMemEval's own readers as systems under test.

They build no memory: ``ingest`` lays the history out as the paper's reader prompt shows it (sessions oldest first,
each under a numbered, dated header; :mod:`om_eval.bench.baseline`), cut to the reader's budget once, and
``context`` puts the question under it. The full-context reader is shown every session; the oracle reader only the
sessions that hold the answer, which the harness picks from the gold before ``ingest`` (``history_scope =
"evidence"``): the reader is never told which they are, it is only shown fewer. The oracle is an upper bound, not a
memory.

Both predate the seam: their runs keep the ids, stored prompts and memory key (``baseline:<reader>``) they had
(:meth:`pinned_identity`). While ``ingest`` lays the history out, the full-context reader records each user turn as
an agent shown its whole history (cut to the same budget) would send it; the oracle records none (it is shown the
answer's sessions, known only once the question is asked).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from om_eval.bench.answer import actor_prompts
from om_eval.bench.baseline import (
    BaselineConfig,
    baseline_prompt_hash,
    baseline_prompts,
    render_session,
    render_template,
    truncate_blocks,
    turn_texts,
)
from om_eval.memory import (
    TURN_SPACING,
    HistoryView,
    MemoryContext,
    MemoryServices,
    MemorySystemBase,
    PinnedIdentity,
    PromptPart,
    QuestionView,
    SessionView,
)
from om_eval.memory.options import reject_unknown
from om_eval.om.tokens import TokenCounter, make_counter

_OPTIONS = ("context_tokens", "max_tokens", "format", "keep", "tokenizer")


@dataclass(frozen=True)
class ReaderMemory:
    """The history as the reader is shown it, laid out and cut once (a LoCoMo conversation's questions share it)."""

    history: str
    """The sessions' text as shown (after the cut)."""
    history_tokens: int
    """Tokens of the laid-out history before the cut, with the reader's tokenizer."""
    shown_tokens: int
    shown_ids: tuple[str, ...]
    """The turns shown whole."""
    sessions: int


class _Reader(MemorySystemBase):
    """A reader of the raw sessions (LongMemEval's baselines); subclasses name the sessions it is shown."""

    default_options: ClassVar[Mapping[str, Any]] = {option: getattr(BaselineConfig(), option) for option in _OPTIONS}
    options_group = "baseline"  # where a reader's options were stored before the seam
    reads_history = True
    uses_observer_model = False

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        reject_unknown(self.name, self.options, _OPTIONS)
        self.config = BaselineConfig(reader=self.name, **self.options)
        self.max_output_tokens = self.config.max_tokens
        self._counter: TokenCounter | None = None

    @property
    def counter(self) -> TokenCounter:
        """The reader's own tokenizer, which its budget is counted in (built on first use)."""
        if self._counter is None:
            self._counter = make_counter(self.config.tokenizer)
        return self._counter

    def budget(self) -> Mapping[str, Any]:
        return {"context_tokens": self.config.history_budget}

    def identity(self) -> Mapping[str, Any]:
        return {"prompt": baseline_prompt_hash()}

    def pinned_identity(self) -> PinnedIdentity:
        prompts = {"baseline": baseline_prompt_hash()}
        return PinnedIdentity(prompts, {**prompts, "reader": self.name}, self.config.memory_key)

    async def ingest(self, history: HistoryView, services: MemoryServices) -> ReaderMemory:
        sessions = history.sessions_by_date()
        blocks = [render_session(number, session, self.config.format) for number, session in enumerate(sessions, 1)]
        full = "".join(blocks)
        shown = truncate_blocks(blocks, self.config.history_budget, self.counter, self.config.keep)
        if services.recording_turns:
            self._record_turns(sessions, services)
        shown_ids = (tuple(turn.id for session in sessions for turn in session.turns) if shown == full
                     else self._kept_ids(sessions, shown))
        return ReaderMemory(shown, self.counter.count_text(full), self.counter.count_text(shown), shown_ids,
                            len(sessions))

    def _kept_ids(self, sessions: list[SessionView], shown: str) -> tuple[str, ...]:
        """The turns whose laid-out text the cut history still holds."""
        ids: list[str] = []
        for session in sessions:
            texts = turn_texts(session, self.config.format)
            ids.extend(turn.id for turn, text in zip(session.turns, texts) if text in shown)
        return tuple(ids)

    def _record_turns(self, sessions: list[SessionView], services: MemoryServices) -> None:
        """Nothing by default: only an agent that lived through the history has turns."""

    async def context(self, memory: ReaderMemory, question: QuestionView, services: MemoryServices) -> MemoryContext:
        content = render_template(baseline_prompts()["prompt"], sessions=memory.history,
                                  question_date=question.question_date_text, question=question.question)
        return MemoryContext(
            messages=({"role": "user", "content": content},), injected=memory.history, shown_ids=memory.shown_ids,
            detail={"sessions": memory.sessions, "history_tokens": memory.history_tokens,
                    "shown_tokens": memory.shown_tokens, "truncated": memory.shown_tokens < memory.history_tokens},
        )


class FullContextReader(_Reader):
    """The reader shown the whole haystack, oldest session first, cut to its budget."""

    name = "full_context"
    records_turns = True
    about = ("LongMemEval's own reader, answering from the raw sessions with no memory built: the whole haystack, cut "
             "to the reader's context window")

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return "baseline: full context"

    def _record_turns(self, sessions: list[SessionView], services: MemoryServices) -> None:
        """Each user turn as an agent shown its whole history so far would send it: the actor's instructions, the
        messages that fit the budget (the oldest ones with ``keep=start``, the newest with ``end``), the user's
        message; the reply is the history's own."""
        instructions = PromptPart("instructions", actor_prompts()["instructions"], head=True)
        messages = [(turn, session.date + TURN_SPACING * position) for session in sessions
                    for position, turn in enumerate(session.turns) if turn.content.strip()]
        parts = [PromptPart(turn.id, turn.content) for turn, _ in messages]
        sums = [0]
        for part in parts:
            sums.append(sums[-1] + services.count_tokens(part.text))
        budget, keep = self.config.history_budget, self.config.keep
        for i, (turn, at) in enumerate(messages):
            if turn.role == "assistant":
                continue
            if sums[i] <= budget:
                first, end = 0, i
            elif keep == "start":
                first, end = 0, min(i, bisect_right(sums, budget) - 1)
            else:
                first, end = bisect_left(sums, sums[i] - budget, 0, i), i
            follows = messages[i + 1][0].role == "assistant" if i + 1 < len(messages) else False
            services.record_turn([instructions, *parts[first:end], parts[i]], at=at,
                                 reply=parts[i + 1] if follows else None)


class OracleReader(_Reader):
    """The reader shown only the sessions that hold the answer (picked by the harness from the gold)."""

    name = "oracle"
    no_turns_reason = ("the oracle reader is shown only the evidence sessions, so no conversation is replayed turn "
                       "by turn")
    history_scope = "evidence"
    about = ("LongMemEval's own reader, answering from the evidence sessions only (an upper bound, not a memory "
             "system)")

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return "baseline: oracle"
