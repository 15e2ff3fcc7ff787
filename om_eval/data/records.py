"""LongMemEval records, normalised without losing the raw data (longmemeval-reference §1.3, §6.1).

Sessions are keyed by (question id, index), never by session id alone: cleaned S repeats some filler ids within
one history (upstream issue #54). ``answer`` stays as given (text or a JSON int) next to its text form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
#: ``strftime("%Y/%m/%d (%a) %H:%M")``, e.g. ``2023/05/30 (Tue) 23:40``.
DATE_PATTERN = re.compile(r"^\d{4}/\d{2}/\d{2} \([A-Z][a-z]{2}\) \d{2}:\d{2}$")
_WEEKDAY = re.compile(r"\s*\([A-Za-z]{3}\)\s*")


def parse_lme_date(text: str) -> datetime:
    """Parse a LongMemEval date (naive local time); raises ``ValueError`` naming the text."""
    try:
        return datetime.strptime(_WEEKDAY.sub(" ", text).strip(), "%Y/%m/%d %H:%M")
    except (TypeError, ValueError) as error:
        raise ValueError(f"date {text!r} is not in the LongMemEval format 'YYYY/MM/DD (Day) HH:MM'") from error


def format_lme_date(moment: datetime) -> str:
    """The inverse of :func:`parse_lme_date`."""
    return moment.strftime("%Y/%m/%d (%a) %H:%M")


@dataclass(frozen=True)
class Turn:
    """One message of a haystack session. ``has_answer`` is ``None`` when the raw turn has no such key."""

    role: str
    content: str
    has_answer: bool | None = None


@dataclass(frozen=True)
class HaystackSession:
    """One session of a question's haystack."""

    question_id: str
    index: int
    """Position in the raw haystack lists; with ``question_id`` it is the session's unique key."""
    session_id: str
    date: datetime
    date_text: str
    turns: tuple[Turn, ...]
    is_evidence: bool
    """The session id is among the question's ``answer_session_ids``."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.question_id, self.index)


@dataclass(frozen=True)
class Question:
    """One LongMemEval question with its haystack, normalised."""

    question_id: str
    question_type: str
    question: str
    answer: str | int
    """As in the file: text, or a JSON int for some counting questions."""
    question_date: datetime
    question_date_text: str
    sessions: tuple[HaystackSession, ...]
    answer_session_ids: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def answer_text(self) -> str:
        """The answer as text (``str.format`` semantics, as the official judge uses)."""
        return str(self.answer)

    @property
    def is_abstention(self) -> bool:
        """Abstention is marked only by ``_abs`` in the question id; the type stays the base type."""
        return "_abs" in self.question_id

    def sessions_by_date(self) -> list[HaystackSession]:
        """Sessions oldest first (stable for equal dates: original order)."""
        return sorted(self.sessions, key=lambda s: (s.date, s.index))


@dataclass(frozen=True)
class Dataset:
    """A loaded LongMemEval file (or a subset of one)."""

    name: str
    """``oracle``, ``s``, ``m`` or a file stem."""
    path: str
    sha256: str
    questions: tuple[Question, ...]
    subset: str | None = None
    """How the questions were chosen from the file (``None`` = all of them)."""

    def __len__(self) -> int:
        return len(self.questions)

    def by_id(self) -> dict[str, Question]:
        return {q.question_id: q for q in self.questions}
