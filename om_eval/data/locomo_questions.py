"""LoCoMo as benchmark questions: each conversation one shared haystack, each question asked after its last turn.

Kept apart from :mod:`om_eval.data.locomo` (the file) and :mod:`om_eval.data.locomo_audit` (its known errors)
because it joins the two: ``dataset.corrections=locomo_audit`` puts the audit's corrected answer beside the
published one (``Question.corrected_answer``) and its evidence fixes where the oracle and the evidence trace read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from om_eval.data.locomo import (
    CATEGORY_NAMES,
    QUESTION_DELAY,
    LocomoConversation,
    LocomoQuestion,
    evidence_turns,
    haystack_id,
    read_locomo,
)
from om_eval.data.locomo_audit import match_audit, read_audit
from om_eval.data.reading import sha256_file
from om_eval.data.records import (
    Dataset,
    HaystackSession,
    Question,
    QuestionEntry,
    Turn,
    format_lme_date,
)
from om_eval.om.config import option_error

__all__ = ["CORRECTIONS", "locomo_dataset", "locomo_questions"]

#: The values of ``dataset.corrections``: none (as published) or the community audit.
CORRECTIONS = ("locomo_audit",)
#: What a judge is told about an unanswerable (category 5) question; ``trap`` is its ``adversarial_answer``.
UNANSWERABLE_NOTE = ("The conversation never says this: the question pins on one person something said about "
                     "another, or something that did not happen. An answer such as \"{trap}\" falls for it.")


@cache
def _dialog_key(dia_id: str) -> tuple[int, int] | None:
    # Cached: every question of a conversation asks it of every turn (a few thousand distinct ids in all).
    found = evidence_turns([dia_id])
    return next(iter(found)) if len(found) == 1 else None


@dataclass(frozen=True)
class _PlainSessions:
    """A conversation's sessions with no turn marked as evidence, and each turn's dialog key. Built once per
    conversation and shared (immutable) by its questions: a question's evidence touches a session or two of its
    19-35."""

    sessions: tuple[HaystackSession, ...]
    keys: tuple[tuple[tuple[int, int] | None, ...], ...]

    @classmethod
    def of(cls, conversation: LocomoConversation) -> _PlainSessions:
        owner = haystack_id(conversation.index)
        return cls(
            tuple(HaystackSession(owner, index, f"session_{session.number}", session.started_at,
                                  session.date_text, tuple(Turn(t.role, t.text, False) for t in session.turns), False)
                  for index, session in enumerate(conversation.sessions)),
            tuple(tuple(_dialog_key(t.dia_id) for t in session.turns) for session in conversation.sessions),
        )


def _benchmark_question(conversation: LocomoConversation, plain_sessions: _PlainSessions, question: LocomoQuestion,
                        corrected: LocomoQuestion | None) -> Question:
    """One LoCoMo question as a benchmark question over its conversation's shared haystack."""
    owner = haystack_id(conversation.index)
    evidence = evidence_turns((corrected or question).evidence)
    sessions = []
    for plain, turn_keys in zip(plain_sessions.sessions, plain_sessions.keys):
        if evidence.isdisjoint(turn_keys):
            sessions.append(plain)
            continue
        turns = tuple(Turn(t.role, t.content, key in evidence) for t, key in zip(plain.turns, turn_keys))
        sessions.append(replace(plain, turns=turns, is_evidence=any(t.has_answer for t in turns)))
    asked = conversation.ends_at + QUESTION_DELAY
    changed = corrected is not None and corrected.answer != question.answer
    return Question(
        question_id=question.id, question_type=CATEGORY_NAMES[question.category], question=question.question,
        answer=question.answer, question_date=asked, question_date_text=format_lme_date(asked),
        sessions=tuple(sessions), answer_session_ids=tuple(s.session_id for s in sessions if s.is_evidence),
        raw={"category": question.category, "evidence": list(question.evidence)},
        haystack_id=owner, abstention=question.adversarial,
        corrected_answer=corrected.answer if changed and corrected is not None else None,
        judge_answer=UNANSWERABLE_NOTE.format(trap=question.answer) if question.adversarial else None,
    )


def locomo_questions(conversations: Sequence[LocomoConversation],
                     corrections: Mapping[str, LocomoQuestion] | None = None) -> list[Question]:
    """Every question of ``conversations`` as a benchmark question, in file order. ``corrections`` (question id to
    the corrected question, :func:`om_eval.data.locomo_audit.corrected`) set ``corrected_answer`` where the gold
    changes and the evidence the oracle reads."""
    corrections = corrections or {}
    return [_benchmark_question(c, plain, q, corrections.get(q.id))
            for c in conversations for plain in [_PlainSessions.of(c)] for q in c.questions]


class _QuestionStream:
    """Builds a LoCoMo dataset's questions when visited (each holds its conversation's sessions, so 1,986 held at
    once would repeat every conversation ~200 times)."""

    def __init__(self, conversations: Sequence[LocomoConversation],
                 corrections: Mapping[str, LocomoQuestion]) -> None:
        self.by_id = {q.id: (c, q) for c in conversations for q in c.questions}
        self.corrections = corrections
        self._plain: dict[int, _PlainSessions] = {}  # by conversation index, built on first visit

    def __call__(self, entries: Sequence[QuestionEntry]) -> Iterator[Question]:
        for entry in entries:
            conversation, question = self.by_id[entry.question_id]
            if (plain := self._plain.get(conversation.index)) is None:
                plain = self._plain[conversation.index] = _PlainSessions.of(conversation)
            yield _benchmark_question(conversation, plain, question, self.corrections.get(question.id))


def locomo_dataset(
    path: str | os.PathLike[str] | None = None, *, verify: bool = True, speaker_roles: str = "a_user",
    corrections: str | None = None, audit_path: str | os.PathLike[str] | None = None,
) -> Dataset:
    """The LoCoMo file as a :class:`Dataset` of benchmark ``locomo`` (questions built when visited).

    Args:
        path, verify, speaker_roles: as :func:`load_locomo` (no path and no ``$LOCOMO_PATH``: the pinned file is
            downloaded once into the data cache).
        corrections: ``None`` (the gold answers as published) or ``locomo_audit`` (the audit's corrected answers
            kept beside them, so reports show raw and corrected scores; its evidence fixes used by the oracle).
        audit_path: the audit file (default ``$LOCOMO_AUDIT_PATH``, else its pinned download); with
            corrections, an audit that is not this file's is refused (:func:`om_eval.data.locomo_audit.match_audit`).
    """
    if corrections is not None and corrections not in CORRECTIONS:
        raise option_error("dataset.corrections", f"={corrections!r} is invalid: use null (as published) or "
                           "locomo_audit (the audit's corrected answers beside the published ones)")
    found, conversations = read_locomo(path, verify=verify, speaker_roles=speaker_roles)
    fixes: dict[str, LocomoQuestion] = {}
    extras: dict[str, Any] = {"speaker_roles": speaker_roles, "corrections": corrections}
    if corrections == "locomo_audit":
        audit_file, audit = read_audit(audit_path, verify=verify)
        fixes = match_audit(audit, conversations, source=audit_file.name, against=found.name)
        extras["audit_sha256"] = sha256_file(audit_file)
    entries = [QuestionEntry(q.id, CATEGORY_NAMES[q.category], position, haystack_id(c.index), q.adversarial)
               for position, (c, q) in enumerate((c, q) for c in conversations for q in c.questions)]
    return Dataset("locomo", str(found), sha256_file(found), subset=None, entries=entries,
                   stream=_QuestionStream(conversations, fixes), benchmark="locomo", extras=extras)
