"""Search over observation groups for the recall tool's ``mode="search"`` (``om.retrieval_search=bm25``).

1.31 offers the mode only with a vector store and an embedder: every observation group is embedded and the query's
nearest groups come back with their thread, range and text. This is om-eval's offline stand-in, labelled as such
wherever it is used: BM25 over the groups' text (``bm25s``, English stop words, no stemming), one hit per group,
best first, groups sharing no word with the query left out. The tool formats the hits exactly as 1.31 formats its
vector hits (:func:`om_eval.om.recall.recall`), so only the ranking and the scores differ from Mastra's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

SEARCH_NOT_CONFIGURED = (
    "Search is not configured. Enable it with `retrieval: { vector: true }` and configure a vector store and "
    "embedder on your Memory instance."
)
"""1.31's reply when the mode is asked for without a search index (its own words: a model may see them)."""


def _utc(moment: datetime | None) -> datetime | None:
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
    """What the tool asks for hits (1.31's ``Memory.searchMessages``)."""

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
            if score <= 0 or (thread_id is not None and group.thread_id != thread_id):
                continue
            when = _utc(group.observed_at)
            if when is not None and ((observed_after is not None and when <= _utc(observed_after))
                                     or (observed_before is not None and when >= _utc(observed_before))):
                continue
            hits.append(SearchHit(group.thread_id, float(score), group.group_id, group.range, group.text,
                                  group.observed_at))
        return hits[:top_k]
