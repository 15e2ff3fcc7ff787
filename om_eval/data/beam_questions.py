"""BEAM as benchmark questions: each chat one shared haystack, each question asked after its last session.

Kept apart from :mod:`om_eval.data.beam` (the files) because it builds the harness's records: a question holds its
chat's sessions (shared, immutable, built once per chat) with the evidence messages marked, its rubric, and the
ideal answer a judge is shown. A tier is checked whole before anything runs, one chat in memory at a time, and a
question's chat is read again when the question is visited (the last chat read is kept), so a 500K tier of 35 chats
(83 MB) never sits in memory at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from om_eval.data.beam import (
    ABILITIES,
    BeamChat,
    BeamQuestion,
    BeamValidationError,
    chat_numbers,
    check_evidence,
    haystack_id,
    read_chat,
    read_questions,
    tier_folder,
    tier_sha256,
)
from om_eval.data.records import Dataset, HaystackSession, Question, QuestionEntry, Turn, format_lme_date

__all__ = ["beam_dataset", "beam_question", "chat_sessions"]


def chat_sessions(chat: BeamChat) -> tuple[HaystackSession, ...]:
    """A chat's batches as haystack sessions, no message marked as evidence."""
    return tuple(
        HaystackSession(chat.haystack_id, index, f"batch_{session.number}", session.date,
                        format_lme_date(session.date), tuple(Turn(m.role, m.content, False) for m in session.messages),
                        False)
        for index, session in enumerate(chat.sessions))


def beam_question(chat: BeamChat, plain: tuple[HaystackSession, ...], question: BeamQuestion) -> Question:
    """One probing question over its chat's shared sessions (``plain``: :func:`chat_sessions` of the chat)."""
    evidence = set(question.evidence_ids)
    sessions = []
    for session, source in zip(plain, chat.sessions, strict=True):
        if evidence.isdisjoint(m.id for m in source.messages):
            sessions.append(session)
            continue
        turns = tuple(Turn(t.role, t.content, m.id in evidence) for t, m in zip(session.turns, source.messages,
                                                                                strict=True))
        sessions.append(replace(session, turns=turns, is_evidence=True))
    asked = chat.asked_at
    return Question(
        question_id=chat.question_id(question), question_type=question.ability, question=question.question,
        answer=question.ideal if question.ideal is not None else "; ".join(question.rubric),
        question_date=asked, question_date_text=format_lme_date(asked), sessions=tuple(sessions),
        answer_session_ids=tuple(s.session_id for s in sessions if s.is_evidence),
        raw={"tier": chat.tier, "chat": chat.number, "ability": question.ability, "index": question.index,
             "difficulty": question.difficulty, "source_chat_ids": list(question.evidence_ids)},
        haystack_id=chat.haystack_id, abstention=question.ability == "abstention", rubric=question.rubric,
    )


class _QuestionStream:
    """Builds a tier's questions when visited, reading each chat again (the last one read is kept)."""

    def __init__(self, folder: Path, verify: bool) -> None:
        @lru_cache(maxsize=1)
        def chat(number: int) -> tuple[BeamChat, tuple[HaystackSession, ...], dict[str, BeamQuestion]]:
            read = read_chat(folder, number, verify=verify)
            questions = {read.question_id(q): q for q in read_questions(folder, number, verify=verify)}
            return read, chat_sessions(read), questions

        self.chat = chat

    def __call__(self, entries: Sequence[QuestionEntry]) -> Iterator[Question]:
        for entry in entries:
            number = int(entry.memory_owner.rsplit("_", 1)[1])
            read, plain, questions = self.chat(number)
            yield beam_question(read, plain, questions[entry.question_id])


def beam_dataset(path: str | os.PathLike[str] | None = None, *, tier: str = "100K", verify: bool = True) -> Dataset:
    """Tier ``tier`` of the BEAM copy at ``path`` (else ``$BEAM_DIR``, else the pinned download) as a
    :class:`Dataset` of benchmark ``beam``, every chat checked first (questions built when visited).

    Raises:
        BeamValidationError: the first problem of any file, naming it and the field.
        PinnedFileNotFoundError: no copy of the tier.
    """
    folder = tier_folder(path, tier)
    numbers = chat_numbers(folder)
    entries: list[QuestionEntry] = []
    for number in numbers:
        chat = read_chat(folder, number, verify=verify)  # checked now: a bad file stops the run before any call
        asked = read_questions(folder, number, verify=verify)
        check_evidence(chat, asked, folder)
        for question in asked:
            entries.append(QuestionEntry(chat.question_id(question), question.ability, len(entries),
                                         haystack_id(tier, number), question.ability == "abstention"))
        del chat
    if not entries:
        raise BeamValidationError(str(folder), "holds no chat with questions")
    return Dataset(f"beam-{tier}", str(folder), tier_sha256(folder, numbers), subset=None, entries=entries,
                   stream=_QuestionStream(folder, verify), benchmark="beam",
                   extras={"tier": tier, "chats": len(numbers), "abilities": list(ABILITIES)})
