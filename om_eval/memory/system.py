"""The memory seam: what every memory system under test implements, and what the harness lends it.

A memory system does two things. It **ingests** a question's history (a LongMemEval haystack, a LoCoMo
conversation) into a memory, and it gives the actor its **context** for a question from that memory. The harness
does the rest the same way for every system: the actor's call, the judge, the store, the report. So OM, the simple
observational-memory layer, RAG, the long-context readers and a plugin are compared on one footing.

Costs are not reported by the system: every model call it makes goes through :class:`MemoryServices` (the run's
client: cached, retried, in the question's ledger under a stage), so ingest cost and answer cost are told apart by
stage, and nothing can be left out. The context column is counted by the harness with the run's tokenizer, not
estimated by the system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from om_eval.bench.replay import ReplayConfig
from om_eval.bench.turn_costs import PromptPart
from om_eval.data.records import Question

#: Stages whose calls build a memory (ingest cost); every other stage answers or grades (answer cost). Embedding a
#: question to search with is stage ``query``: an answer cost, paid on every question.
INGEST_STAGES = ("observer", "reflector", "retrieval")
QUERY_STAGE = "query"
#: Time between a session's turns in a recorded turn table, as the OM replay times them, so every system's turns
#: line up (a provider's cache forgets an idle prefix after minutes: the spacing is part of what is measured).
TURN_SPACING = timedelta(seconds=ReplayConfig().turn_spacing_seconds)


@dataclass(frozen=True)
class MemoryContext:
    """What a memory system gives the actor for one question.

    Either ``memory`` (a text block the harness lays out with its own actor prompt: instructions, the block, the
    current date and the question) or ``messages`` (the actor's whole prompt, question included, when the system's
    published layout must be kept, as the LongMemEval reader's is).
    """

    memory: str | None = None
    """The memory shown to the actor, as one text block (``None`` or empty: nothing to show)."""
    messages: tuple[Mapping[str, str], ...] | None = None
    """The actor's whole prompt; overrides the harness's layout when given."""
    injected: str | None = None
    """With ``messages``: the part of them that is memory (what the context column counts); default the whole
    prompt."""
    ranked_ids: tuple[str, ...] | None = None
    """Retrieval: the ids of the documents retrieved, best first (for recall@k)."""
    correct_ids: tuple[str, ...] | None = None
    """Retrieval: the ids of the documents that hold the evidence."""
    corpus_ids: tuple[str, ...] | None = None
    """Retrieval: every document id searched."""
    evidence: tuple[Any, ...] = ()
    """Where each evidence turn went (:class:`~om_eval.bench.trace.EvidenceTrace`), when the system can say."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Anything else worth keeping with the answer (JSON-ready)."""


class MemoryServices(Protocol):
    """What the harness lends a memory system: the run's models and tokenizer, with cost accounting built in."""

    options: Mapping[str, Any]
    """The system's options (the ``memory.*`` config group, its ``system`` key removed)."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the run's tokenizer."""
        ...

    async def complete(self, messages: Sequence[Mapping[str, str]], *, stage: str = "observer") -> str:
        """A completion from the run's ``models.observer`` model (cached, retried, in the ledger under ``stage``)."""
        ...

    async def embed(self, texts: Sequence[str], *, model: str | None = None, stage: str = "retrieval"
                    ) -> list[list[float]]:
        """One vector per text from ``model`` (default the run's ``models.embedding``), cached, in the ledger under
        ``stage``: ``retrieval`` to build an index (ingest), ``query`` for what a question searches with."""
        ...

    @property
    def recording_turns(self) -> bool:
        """Whether :meth:`record_turn` keeps what it is given (``run.turn_costs``): a system may skip the work of
        describing its turns when it does not."""
        ...

    def record_turn(self, parts: Sequence[PromptPart], *, at: datetime, reply: PromptPart | None = None) -> None:
        """While ``ingest`` replays a history: at a user turn, what an agent on this memory would send its model
        then, part by part (:class:`~om_eval.bench.turn_costs.PromptPart`, ending with the user's message), and the
        reply it got (the history's own). The harness counts and prices it (``items.turns``); a system that records
        nothing is shown by the size of its answer-time context, when it retrieves, or not at all."""
        ...


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under test.

    ``ingest`` turns a question's history into a memory (any object: it is handed back to ``context``, and shared
    by the questions of one LoCoMo conversation, so ``context`` must not change it); ``context`` gives the actor
    its context for one question: a text block, or a :class:`MemoryContext`. Both may call models only through
    ``services``.
    """

    name: str

    def identity(self) -> Mapping[str, Any]:
        """What shapes this system's memory and context besides the data and its options (a prompt's hash, a
        version): part of the run id, so a change here is a new run."""
        ...

    def budget(self) -> Mapping[str, Any]:
        """The context budget the actor gets (``top_k``, ``context_tokens``...): stored with the run, and compared
        by ``om-eval report`` across runs."""
        ...

    async def ingest(self, question: Question, services: MemoryServices) -> Any:
        """The memory built from ``question.sessions`` (its history; never its answer)."""
        ...

    async def context(self, memory: Any, question: Question, services: MemoryServices) -> MemoryContext | str:
        """The actor's context for ``question`` from ``memory``."""
        ...
