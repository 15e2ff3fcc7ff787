"""Where each evidence turn went: the trace kept with every answer, and the line matching OM's trace reads it with.

Each ``has_answer`` turn ends in one of four places:

* ``in_memory``: it was observed and lines carrying its content are in the active observations;
* ``lost_at_reflection``: such lines existed in an earlier generation but a reflection dropped them;
* ``not_captured``: it was observed, but no observation line carries its content (an observer miss);
* ``in_raw_tail``: it was never observed, so the actor reads it raw among the other conversations.

Lines are matched to a turn by shared content words (a line matches when most of its content words occur in the
turn); this is a heuristic made for reading, not a metric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    "a an the i me my you your we our is are was were be been am do did does to of in on at for with and or but "
    "it its that this there as by from about have has had will would can could should user stated asked said "
    "assistant replied".split()
)
MIN_SHARED_WORDS = 3
MIN_LINE_COVERAGE = 0.6


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    # Cached: a memory's observation lines are matched again for every question asked of it (a LoCoMo
    # conversation's memory answers ~200 questions). 8,192 texts hold a 40k-token memory's lines several times
    # over; 65,536 held 90 MB more at 150 S-sized questions (a message's word set is about 9 KB).
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP)


#: A text's lines that have content words, and for each word the lines holding it (:func:`line_index`).
LineIndex = tuple[list[tuple[str, frozenset[str]]], dict[str, list[int]]]


def line_index(observations: str) -> LineIndex:
    """The text's lines that have content words, and for each word the lines holding it (about ten times the text's
    size: a caller holds few at once)."""
    lines: list[tuple[str, frozenset[str]]] = []
    holders: dict[str, list[int]] = {}
    for line in observations.splitlines():
        words = _words(line)
        if words:
            for word in words:
                holders.setdefault(word, []).append(len(lines))
            lines.append((line.strip(), words))
    return lines, holders


# Every question of a shared memory traces its evidence through the same active observations.
_cached_index = lru_cache(maxsize=8)(line_index)


def indexed_matches(index: LineIndex, content: str, limit: int = 3) -> list[str]:
    """:func:`matching_lines` in a text already indexed."""
    lines, holders = index
    shared_by_line: dict[int, int] = {}
    for word in _words(content):
        for position in holders.get(word, ()):
            shared_by_line[position] = shared_by_line.get(position, 0) + 1
    scored = []
    for position in sorted(i for i, shared in shared_by_line.items() if shared >= MIN_SHARED_WORDS):
        line, words = lines[position]
        shared = shared_by_line[position]
        if shared / len(words) >= MIN_LINE_COVERAGE:
            scored.append((shared / len(words), shared, line))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [line for _, _, line in scored[:limit]]


def matching_lines(observations: str, content: str, limit: int = 3) -> list[str]:
    """Observation lines whose content words mostly occur in ``content``, best first (ties in text order)."""
    return indexed_matches(_cached_index(observations), content, limit)


@dataclass(frozen=True)
class EvidenceTrace:
    """Where one evidence turn went."""

    session_id: str
    session_index: int
    turn_index: int
    role: str
    excerpt: str
    status: str
    lines: tuple[str, ...]
    """Matching lines of the active observations (``in_memory``) or of the generation that lost them."""
    answer_in_lines: bool
    """The gold answer's text occurs in those lines (False also means: only part of the turn was kept)."""
