"""Search over observation groups for the recall tool's ``mode="search"`` (``om.retrieval_search=bm25``).

1.31 offers the mode only with a vector store and an embedder: every observation group is embedded and the query's
nearest groups come back with their thread, range and text. This is om-eval's offline stand-in, labelled as such
wherever it is used: BM25 over the groups' text (``bm25s``, English stop words, no stemming), one hit per group,
best first, groups sharing no word with the query left out. The tool formats the hits exactly as 1.31 formats its
vector hits (:func:`om_eval.om.recall.tool.recall`), so only the ranking and the scores differ from Mastra's.

``om.retrieval_search=embedding`` is the closer counterpart: each group's text and each query are embedded with a
litellm embedding model (:class:`EmbeddingGroupSearch`, cosine similarity).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, overload

SEARCH_NOT_CONFIGURED = (
    "Search is not configured. Enable it with `retrieval: { vector: true }` and configure a vector store and "
    "embedder on your Memory instance."
)
"""1.31's reply when the mode is asked for without a search index (its own words: a model may see them)."""


@overload
def as_utc(moment: datetime) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
def as_utc(moment: datetime | None) -> datetime | None:
    """Naive times are UTC (as every time om-eval stores)."""
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


@dataclass(frozen=True)
class SearchHit:
    """One group found for a query: where it came from, how well it matched, and its observations."""

    thread_id: str
    score: float
    group_id: str | None = None
    range: str | None = None
    text: str | None = None
    observed_at: datetime | None = None


class GroupSearcher(Protocol):
    """What the tool asks for hits (1.31's ``Memory.searchMessages``); the loop awaits ``prepare(query)`` first."""

    async def prepare(self, query: str) -> None: ...

    def search(self, query: str, *, top_k: int, thread_id: str | None = None,
               observed_after: datetime | None = None, observed_before: datetime | None = None) -> list[SearchHit]: ...


@dataclass(frozen=True)
class IndexedGroup:
    """A group as indexed: its conversation, id, range, text and when its last message was written."""

    thread_id: str
    group_id: str
    range: str
    text: str
    observed_at: datetime | None


class Bm25GroupSearch:
    """BM25 over ``groups`` (see the module docstring); the filters apply before the ranking is cut to ``top_k``."""

    def __init__(self, groups: Sequence[IndexedGroup]) -> None:
        self.groups = list(groups)
        self._index = None
        if self.groups:
            import bm25s

            self._index = bm25s.BM25()
            self._index.index(bm25s.tokenize([g.text for g in self.groups], stopwords="en", show_progress=False),
                              show_progress=False)

    def search(self, query: str, *, top_k: int, thread_id: str | None = None,
               observed_after: datetime | None = None, observed_before: datetime | None = None) -> list[SearchHit]:
        if self._index is None:
            return []
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        ranks, scores = self._index.retrieve(tokens, k=len(self.groups), show_progress=False)
        hits = []
        for position, score in zip(ranks[0], scores[0], strict=True):
            group = self.groups[int(position)]
            if score <= 0 or not _kept(group, thread_id, observed_after, observed_before):
                continue
            hits.append(SearchHit(group.thread_id, float(score), group.group_id, group.range, group.text,
                                  group.observed_at))
        return hits[:top_k]

    async def prepare(self, query: str) -> None:
        """Nothing to do before a lexical search (the embedding search needs its query's vector)."""


class Embedder(Protocol):
    """What turns texts into vectors (the litellm client's :meth:`~om_eval.llm.client.LLMClient.embed`)."""

    async def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]: ...


class EmbeddingGroupSearch:
    """Cosine similarity between the query's embedding and each group's (``om.retrieval_search=embedding``): the
    closest counterpart of 1.31's vector search, with any litellm embedding model. The tool is synchronous and
    embedding is not, so the loop awaits :meth:`prepare` for a query before the tool searches with it."""

    BATCH = 64

    def __init__(self, groups: Sequence[IndexedGroup], vectors: Sequence[Sequence[float]], embedder: Embedder,
                 model: str) -> None:
        import numpy

        self.groups = list(groups)
        self._matrix = _unit_rows(numpy.asarray(vectors, dtype=float).reshape(len(self.groups), -1))
        self._embedder = embedder
        self._model = model
        self._queries: dict[str, Any] = {}

    @classmethod
    async def build(cls, groups: Sequence[IndexedGroup], embedder: Embedder, model: str) -> EmbeddingGroupSearch:
        vectors: list[list[float]] = []
        for start in range(0, len(groups), cls.BATCH):
            vectors += await embedder.embed([g.text for g in groups[start:start + cls.BATCH]], model=model)
        return cls(groups, vectors, embedder, model)

    async def prepare(self, query: str) -> None:
        """Embed ``query`` (once) so that :meth:`search` can use it."""
        if query not in self._queries:
            import numpy

            vector = (await self._embedder.embed([query], model=self._model))[0]
            self._queries[query] = _unit_rows(numpy.asarray([vector], dtype=float))[0]

    def search(self, query: str, *, top_k: int, thread_id: str | None = None,
               observed_after: datetime | None = None, observed_before: datetime | None = None) -> list[SearchHit]:
        if query not in self._queries:
            raise RuntimeError(f"the query {query!r} was not embedded first (await prepare(query))")
        if not self.groups:
            return []
        scores = self._matrix @ self._queries[query]
        hits = []
        for position in sorted(range(len(self.groups)), key=lambda i: (-scores[i], i)):
            group = self.groups[position]
            if _kept(group, thread_id, observed_after, observed_before):
                hits.append(SearchHit(group.thread_id, float(scores[position]), group.group_id, group.range,
                                      group.text, group.observed_at))
        return hits[:top_k]


def _unit_rows(matrix: Any) -> Any:
    import numpy

    norms = numpy.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / numpy.where(norms == 0, 1.0, norms)


def _kept(group: IndexedGroup, thread_id: str | None, after: datetime | None, before: datetime | None) -> bool:
    if thread_id is not None and group.thread_id != thread_id:
        return False
    when = as_utc(group.observed_at)
    return when is None or not ((after is not None and when <= as_utc(after))
                                or (before is not None and when >= as_utc(before)))
