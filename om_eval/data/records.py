"""Benchmark records (LongMemEval's, and LoCoMo's in the same shape), normalised without losing the raw data
(longmemeval-reference §1.3, §6.1).

Sessions are keyed by (haystack id, index), never by session id alone: cleaned S repeats some filler ids within
one history (upstream issue #54). ``answer`` stays as given (text or a JSON int) next to its text form.

A LongMemEval question owns its haystack (its haystack id is its question id). A LoCoMo conversation is one
haystack shared by all of its questions (``haystack_id`` names it), so they are answered from one memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
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
    """The haystack's owner: the question id for LongMemEval, the conversation's haystack id for LoCoMo."""
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
    haystack_id: str | None = None
    """The memory this question is answered from, when several questions share one haystack (a LoCoMo
    conversation); ``None``: the question's own (LongMemEval)."""
    abstention: bool | None = None
    """Whether the question cannot be answered, when the benchmark marks it by a field (LoCoMo's category 5);
    ``None``: read from the id (LongMemEval's ``_abs``)."""
    corrected_answer: str | None = None
    """The gold answer a known-errors list puts in place of ``answer`` (``dataset.corrections``); ``None``: no
    correction applies."""
    judge_answer: str | None = None
    """What a judge is shown as the reference when it is not ``answer`` (LoCoMo's unanswerable questions: why
    they cannot be answered, since their ``answer`` is the trap a fooled model would give)."""
    rubric: tuple[str, ...] | None = None
    """The criteria a rubric judge scores the answer against, one call each (BEAM); ``None``: no rubric."""

    @property
    def answer_text(self) -> str:
        """The answer as text (``str.format`` semantics, as the official judge uses)."""
        return str(self.answer)

    @property
    def memory_owner(self) -> str:
        """The id the question's memory is built, stored and found under (its haystack's id)."""
        return self.haystack_id or self.question_id

    @property
    def is_abstention(self) -> bool:
        """LongMemEval marks abstention only by ``_abs`` in the question id (the type stays the base type); a
        benchmark that marks it by a field sets ``abstention``."""
        return "_abs" in self.question_id if self.abstention is None else self.abstention

    def sessions_by_date(self) -> list[HaystackSession]:
        """Sessions oldest first (stable for equal dates: original order)."""
        return sorted(self.sessions, key=lambda s: (s.date, s.index))


@dataclass(frozen=True)
class QuestionEntry:
    """What a dataset knows of a question without holding it: enough to choose subsets and skip done work."""

    question_id: str
    question_type: str
    position: int
    """Index of the record in its file (0-based)."""
    haystack_id: str | None = None
    """As :attr:`Question.haystack_id`: set when questions share a memory."""
    abstention: bool | None = None
    """As :attr:`Question.abstention`."""

    @property
    def is_abstention(self) -> bool:
        return "_abs" in self.question_id if self.abstention is None else self.abstention

    @property
    def memory_owner(self) -> str:
        return self.haystack_id or self.question_id


class Dataset:
    """A loaded benchmark file (or a subset of one): held in memory, or streamed from its file.

    A held dataset keeps its :class:`Question` objects. A streamed one (S and M files; see
    :func:`om_eval.data.loader.load_dataset`) keeps only ``entries`` and reads the file again, one record at a
    time, whenever :meth:`iter_questions` is called: use that to visit S or M in bounded memory. ``questions`` and
    :meth:`by_id` work on both but build every question of a streamed dataset at once.
    """

    __slots__ = ("_held", "_stream", "benchmark", "entries", "extras", "name", "path", "sha256", "subset")

    def __init__(
        self, name: str, path: str, sha256: str, questions: Iterable[Question] | None = None,
        subset: str | None = None, *, entries: Iterable[QuestionEntry] | None = None,
        stream: Callable[[Sequence[QuestionEntry]], Iterator[Question]] | None = None,
        benchmark: str = "longmemeval", extras: Mapping[str, Any] | None = None,
    ) -> None:
        if (questions is None) == (stream is None):
            raise ValueError("a Dataset holds questions or streams them: give exactly one of questions and stream")
        self.name = name
        """``oracle``, ``s``, ``m``, ``locomo`` or a file stem."""
        self.path = path
        self.sha256 = sha256
        self.subset = subset
        """How the questions were chosen from the file (``None`` = all of them)."""
        self.benchmark = benchmark
        """The benchmark the file belongs to (``longmemeval``, ``locomo``): how its questions are scored."""
        self.extras = dict(extras or {})
        """What the benchmark records about the file beyond its questions (LoCoMo: its corrections)."""
        self._stream = stream
        if questions is not None:
            self._held: tuple[Question, ...] | None = tuple(questions)
            self.entries: tuple[QuestionEntry, ...] = tuple(
                QuestionEntry(q.question_id, q.question_type, i, q.haystack_id, q.abstention)
                for i, q in enumerate(self._held)
            ) if entries is None else tuple(entries)
            if len(self.entries) != len(self._held):
                raise ValueError(f"{len(self.entries)} entries for {len(self._held)} questions")
        else:
            self._held = None
            self.entries = tuple(entries or ())

    @property
    def streamed(self) -> bool:
        """The questions are read from the file when visited, not held."""
        return self._held is None

    @property
    def questions(self) -> tuple[Question, ...]:
        """Every question, in file order (a streamed dataset builds them all: prefer :meth:`iter_questions`)."""
        return self._held if self._held is not None else tuple(self.iter_questions())

    def iter_questions(self, skip: Container[str] = ()) -> Iterator[Question]:
        """The questions in file order, one at a time, leaving out the ids in ``skip``."""
        if self._held is not None:
            return (q for q in self._held if q.question_id not in skip)
        assert self._stream is not None
        wanted = [e for e in self.entries if e.question_id not in skip]
        return self._stream(wanted) if wanted else iter(())

    def restrict(self, entries: Iterable[QuestionEntry], subset: str | None) -> Dataset:
        """The same file narrowed to ``entries`` (a subset of this dataset's, in its order)."""
        keep = {e.position for e in entries}
        chosen = [e for e in self.entries if e.position in keep]
        if self._held is None:
            return Dataset(self.name, self.path, self.sha256, subset=subset, entries=chosen, stream=self._stream,
                           benchmark=self.benchmark, extras=self.extras)
        held = [q for q, e in zip(self._held, self.entries, strict=True) if e.position in keep]
        return Dataset(self.name, self.path, self.sha256, held, subset, entries=chosen, benchmark=self.benchmark,
                       extras=self.extras)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        kind = "streamed" if self.streamed else "held"
        return (f"Dataset(benchmark={self.benchmark!r}, name={self.name!r}, path={self.path!r}, "
                f"{len(self)} questions {kind}, subset={self.subset!r})")

    def by_id(self) -> dict[str, Question]:
        return {q.question_id: q for q in self.iter_questions()}
