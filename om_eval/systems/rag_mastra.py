"""``memory=rag_mastra``: semantic recall as Mastra's LongMemEval harness ran it for its RAG row (rag-baselines §1).

Every message of the haystack, user and assistant, is embedded on its own (a message over 16,384 characters is
split on whitespace into chunks that keep the message's id). The question's text, as it is, is the query; the
``top_k`` nearest chunks by cosine similarity name their messages, and each brings the ``message_range`` messages
before and after it in its session. The actor gets them as one system message in time order, a header whenever
the UTC day changes, each message with its time of day; a second system line gives the current date. A message's
time is its session's date plus 5 minutes per position in the session, as the harness stored them.

``top_k`` is 10 in the harness's committed config and 20 in the published label: ``memory=rag_mastra`` and
``memory=rag_mastra_top20`` run both, and the report says which.
"""

from __future__ import annotations

import json
import tomllib
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from om_eval.common.files import short_hash
from om_eval.memory import (
    QUERY_STAGE,
    TURN_SPACING,
    HistoryView,
    MemoryContext,
    MemoryServices,
    MemorySystemBase,
    PromptPart,
    QuestionView,
)
from om_eval.memory.options import reject_unknown, top_k_text, whole_number
from om_eval.om.prompts import fill

#: Longest message embedded whole; a longer one is embedded in chunks of at most this many characters.
CHUNK_CHARS = 16_384
#: Minutes between consecutive messages of a session, as the harness timed them.
MESSAGE_SPACING = timedelta(minutes=5)
#: Texts per embedding request.
EMBED_BATCH = 128
_OPTIONS = ("top_k", "message_range")


@lru_cache(maxsize=1)
def recall_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.systems.prompts").joinpath("mastra_recall.toml").read_text("utf-8"))


def recall_prompt_hash() -> str:
    return short_hash(resources.files("om_eval.systems.prompts").joinpath("mastra_recall.toml").read_bytes())


def split_message(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """``text`` in chunks of at most ``limit`` characters, cut at whitespace where there is some."""
    if len(text) <= limit:
        return [text]
    chunks, current = [], ""
    for word in text.split():
        while len(word) > limit:  # a single over-long word: cut it
            if current:
                chunks.append(current)
                current = ""
            chunks.append(word[:limit])
            word = word[limit:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > limit:
            chunks.append(current)
            current = word
        else:
            current = candidate
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True)
class StoredMessage:
    """One haystack message as the recall store keeps it."""

    id: str
    """The view's turn id (what the ranking names)."""
    session: int
    """Index of its session in the haystack order."""
    position: int
    """Its index in the session."""
    role: str
    content: str
    at: datetime


@dataclass(frozen=True)
class RecallIndex:
    """A question's messages and the unit vectors of their chunks."""

    messages: tuple[StoredMessage, ...]
    chunk_owner: tuple[int, ...]
    """For each chunk, the index of its message."""
    vectors: Any
    """Unit rows, one per chunk (numpy array)."""


def _unit_rows(vectors: Sequence[Sequence[float]]) -> Any:
    matrix = np.asarray(vectors, dtype=float)
    if matrix.size == 0:
        return matrix.reshape(0, 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def stored_messages(history: HistoryView) -> list[StoredMessage]:
    """The history's messages in session order, timed as the harness timed them."""
    messages = []
    for number, session in enumerate(history.sessions_by_date()):
        for position, turn in enumerate(session.turns):
            messages.append(StoredMessage(turn.id, number, position, turn.role, turn.content,
                                          session.date + MESSAGE_SPACING * position))
    return messages


class MastraRecallSystem(MemorySystemBase):
    """Per-message embeddings, cosine top-k, neighbours widened, laid out by day."""

    name = "rag_mastra"
    records_turns = True
    uses_observer_model = False
    uses_embedding_model = True
    about = ("Mastra's semantic recall (the top k messages by embedding similarity to the question, each with its "
             "neighbouring messages)")

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return f"RAG (Mastra recall{top_k_text(budget, options)})"

    def __init__(self, options: Mapping[str, Any]) -> None:
        reject_unknown(self.name, options, _OPTIONS)
        self.top_k = whole_number("top_k", options.get("top_k", 10), 1)
        self.message_range = whole_number("message_range", options.get("message_range", 2), 0)

    def identity(self) -> Mapping[str, Any]:
        return {"layout": recall_prompt_hash(), "chunk_chars": CHUNK_CHARS}

    def budget(self) -> Mapping[str, Any]:
        return {"top_k": self.top_k, "message_range": self.message_range}

    async def ingest(self, history: HistoryView, services: MemoryServices) -> RecallIndex:
        messages = stored_messages(history)
        chunks, owners = [], []
        for index, message in enumerate(messages):
            for chunk in split_message(message.content):
                if chunk.strip():
                    chunks.append(chunk)
                    owners.append(index)
        vectors: list[list[float]] = []
        for start in range(0, len(chunks), EMBED_BATCH):
            vectors += await services.embed(chunks[start:start + EMBED_BATCH])
        recall = RecallIndex(tuple(messages), tuple(owners), _unit_rows(vectors))
        if services.recording_turns:
            self.record_turns(recall, services)
        return recall

    def record_turns(self, index: RecallIndex, services: MemoryServices) -> None:
        """At each user turn, what an agent recalling for it would send: the instructions, the messages recalled for
        the user's message from the sessions before (the session's own are in the prompt already), today's date,
        the session's messages so far and the user's message. The query is the message's own embedding, already
        in the index (the mean of its chunks'), so no model is called."""
        prompts = recall_prompts()
        opening, closing = prompts["block"].split("{messages}")
        head = [PromptPart("instructions", prompts["instructions"], head=True)]
        chunks_of: dict[int, list[int]] = {}
        for chunk, owner in enumerate(index.chunk_owner):
            chunks_of.setdefault(owner, []).append(chunk)
        said: list[PromptPart] = []
        made: dict[str, tuple[Any, PromptPart, PromptPart]] = {}
        start = 0  # the first chunk of the current session
        for number, message in enumerate(index.messages):
            if message.position == 0:
                said = []
                start = bisect_left(index.chunk_owner, number)
            part = PromptPart(("message", message.id), message.content)
            if message.role == "user":
                shown = self.widened(index, self._hits(index, chunks_of.get(number, []), start))
                recalled = [PromptPart("opening", opening, head=True), *self._lines(shown, made),
                            PromptPart("closing", closing, head=True)] if shown else []
                moment = message.at - MESSAGE_SPACING * message.position  # the session's date
                today = PromptPart(("today", moment.date()), fill(prompts["today"], date=f"{moment:%Y/%m/%d (%a)}"),
                                   head=True)
                following = index.messages[number + 1] if number + 1 < len(index.messages) else None
                reply = PromptPart(("message", following.id), following.content) \
                    if following is not None and following.session == message.session \
                    and following.role == "assistant" else None
                services.record_turn([*head, *recalled, today, *said, part], reply=reply,
                                     at=moment + TURN_SPACING * message.position)
            said.append(part)

    def _hits(self, index: RecallIndex, own_chunks: Sequence[int], searchable: int) -> list[int]:
        """The messages of the ``top_k`` chunks of the first ``searchable`` nearest to the mean of ``own_chunks``."""
        if not own_chunks or not searchable:
            return []
        query = _unit_rows([index.vectors[own_chunks].mean(axis=0)])[0]
        scores = index.vectors[:searchable] @ query
        order = np.lexsort((np.arange(searchable), -scores))[: self.top_k]
        return list(dict.fromkeys(index.chunk_owner[int(chunk)] for chunk in order))

    def _lines(self, shown: Sequence[StoredMessage], made: dict[str, tuple[Any, PromptPart, PromptPart]]
               ) -> list[PromptPart]:
        """The recalled messages as parts of the block: each day's header, each message's line (each message's
        made once, in ``made``)."""
        parts: list[PromptPart] = []
        day = None
        for message in shown:
            if (done := made.get(message.id)) is None:
                moment, header, line = self.message_line(message)
                done = made[message.id] = (moment.date(), PromptPart(("day", header), header, head=True),
                                           PromptPart(("line", message.id), line, head=True))
            if done[0] != day:
                day = done[0]
                parts.append(done[1])
            parts.append(done[2])
        return parts

    def ranked_messages(self, index: RecallIndex, query_vector: Sequence[float]) -> tuple[list[int], list[int]]:
        """Every message by its nearest chunk, best first (each once), and the hits: the messages of the ``top_k``
        nearest chunks. The whole ranking is kept for recall@k beyond ``top_k``; only the hits are shown."""
        if not index.chunk_owner:
            return [], []
        query = _unit_rows([query_vector])[0]
        scores = index.vectors @ query
        order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
        ranked: list[int] = []
        seen: set[int] = set()
        hits = len({index.chunk_owner[chunk] for chunk in order[: self.top_k]})
        for chunk in order:
            owner = index.chunk_owner[chunk]
            if owner not in seen:
                seen.add(owner)
                ranked.append(owner)
        return ranked, ranked[:hits]

    def widened(self, index: RecallIndex, hits: Sequence[int]) -> list[StoredMessage]:
        """The hits and their neighbours in the same session, each once, in time order."""
        chosen: set[int] = set()
        for hit in hits:
            session = index.messages[hit].session
            for other in range(hit - self.message_range, hit + self.message_range + 1):
                if 0 <= other < len(index.messages) and index.messages[other].session == session:
                    chosen.add(other)
        return sorted((index.messages[i] for i in chosen), key=lambda m: (m.at, m.session, m.position))

    async def context(self, index: RecallIndex, question: QuestionView, services: MemoryServices) -> MemoryContext:
        [query] = await services.embed([question.question], stage=QUERY_STAGE)
        ranking, hits = self.ranked_messages(index, query)
        shown = self.widened(index, hits)
        prompts = recall_prompts()
        block = fill(prompts["block"], messages=self.render(shown)) if shown else ""
        today = fill(prompts["today"], date=question.question_date_text)
        messages = [{"role": "system", "content": prompts["instructions"]},
                    *([{"role": "system", "content": block}] if block else []),
                    {"role": "system", "content": today},
                    {"role": "user", "content": question.question}]
        return MemoryContext(
            messages=tuple(messages), injected=block,
            ranked_ids=tuple(index.messages[i].id for i in ranking),
            corpus_ids=tuple(m.id for m in index.messages),
            detail={"hits": len(hits), "shown_messages": len(shown)},
        )

    @staticmethod
    def render(messages: Sequence[StoredMessage]) -> str:
        """Messages in time order, a header line whenever the UTC day changes, each with its time of day."""
        return "\n".join(line for _, line in MastraRecallSystem.rendered_lines(messages)).strip("\n")

    @staticmethod
    def rendered_lines(messages: Sequence[StoredMessage]) -> list[tuple[StoredMessage | None, str]]:
        """The block's lines: ``(None, a day's header)`` or ``(message, its line)``."""
        lines: list[tuple[StoredMessage | None, str]] = []
        day = None
        for message in messages:
            moment, header, line = MastraRecallSystem.message_line(message)
            if moment.date() != day:
                day = moment.date()
                lines.append((None, header))
            lines.append((message, line))
        return lines

    @staticmethod
    def message_line(message: StoredMessage) -> tuple[datetime, str, str]:
        """A message's UTC time, the header of its day and its own line."""
        prompts = recall_prompts()
        moment = message.at.astimezone(UTC) if message.at.tzinfo else message.at
        header = fill(prompts["day"], day=f"{moment.year}, {moment.strftime('%B')} {moment.day}")
        stamp = f"{moment.hour % 12 or 12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"
        text = json.dumps({"role": message.role, "content": message.content}, ensure_ascii=False)
        return moment, header, fill(prompts["line"], time=stamp, message=text)
