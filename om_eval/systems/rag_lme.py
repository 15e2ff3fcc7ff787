"""``memory=rag_lme``: the LongMemEval paper's flat retrieval and reading (rag-baselines §2).

Keys are user text only (:mod:`om_eval.bench.retrieval`): each user turn (``granularity=turn``, a hit shows that
turn and the one after it) or a session's user turns (``granularity=session``, a hit shows the whole session).
The retriever is ``bm25`` (scored as ``rank_bm25.BM25Okapi`` on tokens split on single spaces, ranked as
upstream's argsort) or ``embedding`` (cosine similarity through the run's embedding model). The ``top_k`` hits
are sorted by date and laid out as the long-context reader lays out sessions (:mod:`om_eval.bench.baseline`: a
numbered header with the date, the turns as JSON), cut to ``context_tokens - max_tokens - 1000`` tokens.

The reader's wording is ours (``om_eval/bench/prompts/baseline.toml``) by default; ``memory.reader=official`` reads
the paper's own reader prompt from the pinned LongMemEval commit at run time (:mod:`om_eval.bench.official_reader`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from om_eval.bench.baseline import (
    RESERVED_TOKENS,
    baseline_prompt_hash,
    baseline_prompts,
    render_template,
    truncate_blocks,
)
from om_eval.bench.official_reader import (
    RUN_GENERATION,
    OfficialReader,
    OfficialReaderError,
    load_official_reader,
)
from om_eval.bench.retrieval import (
    Granularity,
    GrowingBm25,
    HistoryDocument,
    bm25_okapi_scores,
    history_documents,
    rank,
)
from om_eval.memory import (
    QUERY_STAGE,
    TURN_SPACING,
    HistoryView,
    MemoryContext,
    MemoryServices,
    MemorySystemBase,
    PromptPart,
    QuestionView,
    SessionView,
)
from om_eval.memory.options import one_of, reject_unknown, top_k_text, whole_number
from om_eval.om.config import ConfigError
from om_eval.om.tokens import TokenCounter

RETRIEVERS = ("bm25", "embedding")
GRANULARITIES = ("turn", "session")
READERS = ("house", "official")
_OPTIONS = ("retriever", "granularity", "top_k", "context_tokens", "max_tokens", "reader", "reader_source")


@dataclass(frozen=True)
class RetrievalIndex:
    """A history's documents, their sessions, and (embedding retriever) their unit vectors."""

    documents: tuple[HistoryDocument, ...]
    sessions: Mapping[int, SessionView]
    vectors: Any = None
    holds: Mapping[str, tuple[str, ...]] | None = None
    """``granularity=turn``: the turns each document shows (a user turn and its reply), as the harness grades it."""


def _unit(matrix: Any) -> Any:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class LongMemEvalRetrievalSystem(MemorySystemBase):
    """Flat retrieval over user-text keys, read as the paper's reader reads it."""

    name = "rag_lme"
    records_turns = True
    uses_observer_model = False
    about = ("the LongMemEval paper's flat retrieval (the top k sessions or turns by BM25 or embedding score, read as "
             "the long-context reader reads sessions)")

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        retriever = {"bm25": "BM25", "embedding": "embeddings"}.get(str(options.get("retriever")),
                                                                     str(options.get("retriever") or "retrieval"))
        granularity = budget.get("granularity", options.get("granularity"))
        return f"RAG (LongMemEval {retriever}" + (f", {granularity}" if granularity else "") + \
            f"{top_k_text(budget, options)})"

    def __init__(self, options: Mapping[str, Any]) -> None:
        reject_unknown(self.name, options, _OPTIONS)
        self.retriever = one_of("retriever", options.get("retriever", "bm25"), RETRIEVERS)
        self.granularity = one_of("granularity", options.get("granularity", "session"), GRANULARITIES)
        self.uses_embedding_model = self.retriever == "embedding"
        self.reader = one_of("reader", options.get("reader", "house"), READERS)
        source = options.get("reader_source")
        self.reader_source = None if source is None else str(source)
        self._official: OfficialReader | None = None
        self.top_k = whole_number("top_k", options.get("top_k", 10), 1)
        self.context_tokens = whole_number("context_tokens", options.get("context_tokens", 128_000), 1)
        self.answer_tokens = whole_number("max_tokens", options.get("max_tokens", 500), 1)
        self.max_output_tokens = self.answer_tokens
        if self.history_budget < 1:
            raise ConfigError(f"memory.context_tokens={self.context_tokens} leaves no room for the history: it must "
                              f"exceed memory.max_tokens ({self.answer_tokens}) + {RESERVED_TOKENS}",
                              option="memory.context_tokens")

    @property
    def history_budget(self) -> int:
        return self.context_tokens - self.answer_tokens - RESERVED_TOKENS

    def identity(self) -> Mapping[str, Any]:
        return {"reader": baseline_prompt_hash() if self.reader == "house" else f"official:{RUN_GENERATION.sha256}"}

    def prepare(self) -> None:
        """Load the paper's reader prompt before any question (``memory.reader=official``)."""
        if self.reader == "official" and self._official is None:
            try:
                self._official = load_official_reader(self.reader_source)
            except OfficialReaderError as error:
                raise ConfigError(f"memory.reader=official: {error}", option="memory.reader_source") from None

    def budget(self) -> Mapping[str, Any]:
        return {"top_k": self.top_k, "context_tokens": self.history_budget, "granularity": self.granularity}

    async def ingest(self, history: HistoryView, services: MemoryServices) -> RetrievalIndex:
        documents = tuple(history_documents(history, cast(Granularity, self.granularity)))
        sessions = {s.index: s for s in history.sessions}
        vectors = None
        if self.retriever == "embedding":
            texts = [d.text or " " for d in documents]
            rows: list[list[float]] = []
            for start in range(0, len(texts), 128):
                rows += await services.embed(texts[start:start + 128])
            vectors = _unit(np.asarray(rows, dtype=float)) if rows else None
        holds = {d.id: d.held_turns for d in documents} if self.granularity == "turn" else None
        index = RetrievalIndex(documents, sessions, vectors, holds)
        if services.recording_turns:
            self.record_turns(index, history, services)
        return index

    def record_turns(self, index: RetrievalIndex, history: HistoryView, services: MemoryServices) -> None:
        """At each user turn, what an agent retrieving for it would send: the reader's opening, the ``top_k``
        documents of earlier sessions that best match the user's message (by date, numbered), the day's date, the
        session's messages so far and the user's message. BM25 is weighted over the documents of the sessions
        before (:class:`~om_eval.bench.retrieval.GrowingBm25`); the embedding retriever needs the message's own
        vector, which only ``granularity=turn`` has (its documents are the user turns), so with ``session`` no turns
        are recorded rather than embedding every message. Not cut to ``context_tokens``: ``top_k`` documents fit it
        on LongMemEval and LoCoMo."""
        if self.retriever == "embedding" and (self.granularity != "turn" or index.vectors is None):
            return
        self.prepare()
        # The reader's prompt with markers in its slots: the opening before the history, the date's line after it.
        laid_out = self._official.prompt("\0", "\1", "\2") if self._official is not None else render_template(
            baseline_prompts()["prompt"], sessions="\0", question_date="\1", question="\2")
        opening = PromptPart("opening", laid_out.split("\0")[0], head=True)
        dating = laid_out.split("\0")[1].split("\2")[0]
        sessions = history.sessions_by_date()
        documents_of: dict[int, list[int]] = {}
        for n, document in enumerate(index.documents):
            documents_of.setdefault(document.session_index, []).append(n)
        ordered = [n for s in sessions for n in documents_of.get(s.index, [])]
        bm25 = GrowingBm25([index.documents[n].text for n in ordered]) if self.retriever == "bm25" else None
        vectors = index.vectors[ordered] if bm25 is None else np.zeros((0, 0))
        # The embedding retriever's documents are user turns: a message's own vector is its document's.
        own = {(index.documents[n].session_index, index.documents[n].text): position
               for position, n in enumerate(ordered)} if bm25 is None else {}
        parts: dict[tuple[int, int], list[PromptPart]] = {}
        searchable = 0  # the documents of the sessions before: the first ones of ``ordered``
        for session in sessions:
            if bm25 is not None:
                bm25.grow(searchable)
            said: list[PromptPart] = []
            for position, turn in enumerate(session.turns):
                part = PromptPart(("message", session.index, position), turn.content)
                if turn.role == "user":
                    if bm25 is not None:
                        scores = bm25.scores(turn.content)
                    else:
                        mine = own.get((session.index, turn.content))
                        scores = vectors[:searchable] @ vectors[mine] if mine is not None else np.zeros(0)
                    hits = [ordered[i] for i in rank(scores)[: self.top_k]]
                    # By date (stable), as the answer's context is shown; a document is named by its position, since
                    # a cleaned haystack may repeat a session's id.
                    shown = sorted(hits, key=lambda n: index.sessions[index.documents[n].session_index].date)
                    blocks = [piece for number, n in enumerate(shown, 1)
                              for piece in self._block_parts(number, n, index, parts)]
                    at = session.date + TURN_SPACING * position
                    day = PromptPart(("date", at.date()), dating.replace("\1", f"{at:%Y/%m/%d (%a)}"), head=True)
                    following = session.turns[position + 1] if position + 1 < len(session.turns) else None
                    reply = PromptPart(("message", session.index, position + 1), following.content) \
                        if following is not None and following.role == "assistant" else None
                    services.record_turn([opening, *blocks, day, *said, part], at=at, reply=reply)
                said.append(part)
            searchable += len(documents_of.get(session.index, []))

    async def _scores(self, index: RetrievalIndex, question: QuestionView, services: MemoryServices
                      ) -> list[float]:
        if self.retriever == "bm25":
            return bm25_okapi_scores([d.text for d in index.documents], question.question)
        if index.vectors is None:
            return []
        [query] = await services.embed([question.question], stage=QUERY_STAGE)
        return [float(s) for s in index.vectors @ _unit(np.asarray(query, dtype=float))]

    async def context(self, index: RetrievalIndex, question: QuestionView, services: MemoryServices
                      ) -> MemoryContext:
        self.prepare()
        ranking = rank(await self._scores(index, question, services)) if index.documents else []
        hits = [index.documents[i] for i in ranking[: self.top_k]]
        # By date only, as upstream sorts (stable: hits of one date keep their rank order).
        shown = sorted(hits, key=lambda d: index.sessions[d.session_index].date)
        blocks = [self._block(number, document, index) for number, document in enumerate(shown, 1)]
        history = truncate_blocks(blocks, self.history_budget, cast(TokenCounter, _Counter(services)), "start")
        if self._official is not None:
            prompt = self._official.prompt(history, question.question_date_text, question.question)
        else:
            prompt = render_template(baseline_prompts()["prompt"], sessions=history,
                                     question_date=question.question_date_text, question=question.question)
        ids = [d.id for d in index.documents]
        return MemoryContext(
            messages=({"role": "user", "content": prompt},), injected=history,
            ranked_ids=tuple(ids[i] for i in ranking), corpus_ids=tuple(ids), documents=index.holds or {},
            detail={"hits": len(hits)},
        )

    def _block_parts(self, number: int, position: int, index: RetrievalIndex,
                     made: dict[tuple[int, int], list[PromptPart]]) -> list[PromptPart]:
        """The document at ``position`` shown ``number``-th, as turn parts: its numbered header and its turns apart
        (the turns are the same text whatever the number, so they are rendered and counted once), made once per
        document and number."""
        cached = made.get((position, number))
        if cached is None:
            document = index.documents[position]
            if self._official is not None:
                cached = [PromptPart(("document", position, number), self._block(number, document, index), True)]
            else:
                before, after = baseline_prompts()["session"].split("{content}")
                header = render_template(before, number=number, date=index.sessions[document.session_index].date_text)
                turns = json.dumps([{"role": t.role, "content": t.content} for t in document.value_turns])
                cached = [PromptPart(("header", position, number), header, True),
                          PromptPart(("document", position), turns + after, True)]
            made[(position, number)] = cached
        return cached

    def _block(self, number: int, document: HistoryDocument, index: RetrievalIndex) -> str:
        # json.dumps of the turn list, as upstream dumps it (has_answer removed).
        turns = json.dumps([{"role": t.role, "content": t.content} for t in document.value_turns])
        session = index.sessions[document.session_index]
        if self._official is not None:
            return self._official.chunk(number, session.date_text, turns)
        return render_template(baseline_prompts()["session"], number=number, date=session.date_text, content=turns)


class _Counter:
    """The run's tokenizer in the shape :func:`truncate_blocks` reads."""

    def __init__(self, services: MemoryServices) -> None:
        self.services = services

    def count_text(self, text: str) -> int:
        return self.services.count_tokens(text)
