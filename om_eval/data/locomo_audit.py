"""LoCoMo's known label errors: the community audit of its gold answers, and the questions it corrects.

The audit (github.com/dial481/locomo-audit, ``errors.json`` at commit 9493fb4, CC BY-NC 4.0, never shipped) lists
156 questions by LoCoMo's own ids (:func:`om_eval.data.locomo.question_id`) with an error type, the gold answer, a
corrected answer and corrected evidence. Some entries only fix the evidence (``WRONG_CITATION``): their gold answer
stands. The rest say the gold answer itself is wrong, which caps any system's score: :func:`known_wrong_share` is
that share, so a report can show raw and corrected scores side by side with the ceiling.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from om_eval.data.locomo import (
    LocomoConversation,
    LocomoQuestion,
    LocomoValidationError,
    dialog_turns,
    is_number,
    json_kind,
    unresolved_evidence,
)
from om_eval.data.reading import PinnedFileNotFoundError, read_pinned_json

__all__ = ["AUDIT_FILE", "AUDIT_SHA256", "ENV_AUDIT_PATH", "AuditEntry", "corrected", "known_wrong_share",
           "load_audit", "match_audit", "read_audit"]

AUDIT_FILE = "locomo-audit-errors.json"
#: sha256 of ``errors.json`` in github.com/dial481/locomo-audit at commit 9493fb4.
AUDIT_SHA256 = "f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e"
ENV_AUDIT_PATH = "LOCOMO_AUDIT_PATH"
ORIGIN = "github.com/dial481/locomo-audit, errors.json at commit 9493fb4"
#: Where the pinned audit is downloaded from when no path is given (checked against :data:`AUDIT_SHA256`).
AUDIT_URL = "https://raw.githubusercontent.com/dial481/locomo-audit/9493fb4/errors.json"


@dataclass(frozen=True)
class AuditEntry:
    question_id: str
    error_type: str
    golden_answer: str
    correct_answer: str
    correct_evidence: tuple[str, ...]
    reasoning: str
    question: str | None = None
    """The question as the audit quotes it: it must be the file's question of that id."""
    position: int = 0
    """The entry's index in the audit file (messages name it)."""

    @property
    def answer_wrong(self) -> bool:
        """The gold answer itself is wrong. A ``WRONG_CITATION`` entry fixes only the evidence (its corrected answer
        often just notes that the answer is right); otherwise the answers are compared, case and spacing ignored."""
        if self.error_type == "WRONG_CITATION":
            return False
        return " ".join(self.golden_answer.lower().split()) != " ".join(self.correct_answer.lower().split())


def _entry(raw: object, index: int, source: str) -> AuditEntry:
    place = f"audit entry {index}"

    def refuse(problem: str, field: str | None = None, qid: str | None = None) -> LocomoValidationError:
        return LocomoValidationError(source, f"{problem}: fix the entry, or give the audit this file was made for",
                                     place=place, question_id=qid, field=field, index=index)

    if not isinstance(raw, Mapping):
        raise refuse(f"must be an object (question_id, error_type, golden_answer, correct_answer, "
                     f"correct_evidence), got {json_kind(raw)}")
    qid = raw.get("question_id")
    if not isinstance(qid, str) or not qid:
        raise refuse("is missing" if "question_id" not in raw else f"must be a question id like 'locomo_0_qa3', got "
                     f"{json_kind(qid)}", "question_id")
    texts: dict[str, str] = {}
    for name in ("error_type", "golden_answer", "correct_answer"):
        value = raw.get(name)
        if not isinstance(value, str) and (name == "error_type" or not is_number(value)):
            kind = "a string" if name == "error_type" else "a string or a number"
            raise refuse("is missing" if name not in raw else f"must be {kind}, got {json_kind(value)}", name, qid)
        texts[name] = str(value)
    evidence = raw.get("correct_evidence")
    if evidence is not None and not isinstance(evidence, list):
        raise refuse(f"must be a list of dialog ids like ['D1:3'], got {json_kind(evidence)}", "correct_evidence", qid)
    for j, item in enumerate(evidence or ()):
        if not isinstance(item, str):
            raise refuse(f"must be a dialog id like 'D1:3', got {json_kind(item)}", f"correct_evidence[{j}]", qid)
    question = raw.get("question")
    if question is not None and not isinstance(question, str):
        raise refuse(f"must be the question's text, got {json_kind(question)}", "question", qid)
    return AuditEntry(question_id=qid, error_type=texts["error_type"], golden_answer=texts["golden_answer"],
                      correct_answer=texts["correct_answer"], correct_evidence=tuple(evidence or ()),
                      reasoning=str(raw.get("reasoning") or ""), question=question, position=index)


def read_audit(path: str | os.PathLike[str] | None = None, *, verify: bool = True
               ) -> tuple[Path, dict[str, AuditEntry]]:
    """:func:`load_audit` with the file it read."""
    try:
        found, records = read_pinned_json(path, env=ENV_AUDIT_PATH, file_name=AUDIT_FILE, sha256=AUDIT_SHA256,
                                          what="LoCoMo audit", origin=ORIGIN, verify=verify, url=AUDIT_URL)
    except PinnedFileNotFoundError as error:  # the audit is needed only for corrections: say how to go without
        raise PinnedFileNotFoundError(f"{error}; or run without the audit's corrections: dataset.corrections=null"
                                      ) from None
    if not isinstance(records, list):
        raise LocomoValidationError(found.name, f"must hold a JSON list of audit entries, got "
                                    f"{json_kind(records)}: give the audit of LoCoMo's gold answers ({AUDIT_FILE})")
    entries: dict[str, AuditEntry] = {}
    for index, raw in enumerate(records):
        entry = _entry(raw, index, found.name)
        if (first := entries.get(entry.question_id)) is not None:
            raise LocomoValidationError(
                found.name, f"is repeated (first in audit entry {first.position}): keep one entry per question",
                place=f"audit entry {index}", question_id=entry.question_id, field="question_id", index=index)
        entries[entry.question_id] = entry
    return found, entries


def load_audit(path: str | os.PathLike[str] | None = None, *, verify: bool = True) -> dict[str, AuditEntry]:
    """The audit's entries by question id, from ``path`` or ``$LOCOMO_AUDIT_PATH`` (a file, or a folder holding
    ``locomo-audit-errors.json``), else its pinned download (:data:`AUDIT_URL`); the official file is checked
    against its pinned sha256 first. Every entry is checked; a question named twice is refused."""
    return read_audit(path, verify=verify)[1]


def match_audit(audit: Mapping[str, AuditEntry], conversations: Sequence[LocomoConversation], *, source: str,
                against: str) -> dict[str, LocomoQuestion]:
    """The questions of ``conversations`` that ``audit`` corrects, corrected (:func:`corrected`), by id.

    Refuses an audit that is not this file's, which would otherwise turn corrections off or onto the wrong
    questions without a word: one whose entries name no question of the file, an entry quoting another question
    than the file's of its id, or corrected evidence that names no turn of its conversation. Entries naming
    questions the file does not have are left out (a file can hold some of LoCoMo's conversations).

    Args:
        source, against: the audit's and the LoCoMo file's names, for messages.
    """
    asked = {q.id: (c, q) for c in conversations for q in c.questions}
    matched = [entry for qid, entry in audit.items() if qid in asked]
    if not matched:
        held = "holds no entry" if not audit else (
            f"names none of the questions of {against} (it names e.g. {next(iter(audit))!r}; the file's run "
            f"{next(iter(asked))!r} to {next(reversed(asked))!r})")
        raise LocomoValidationError(source, f"{held}, so no correction would apply: give the audit of this file "
                                    "(dataset.audit_path or $LOCOMO_AUDIT_PATH), or drop dataset.corrections")
    for entry in matched:
        conversation, question = asked[entry.question_id]
        if entry.question is not None and " ".join(entry.question.split()) != " ".join(question.question.split()):
            raise _refuse(source, entry, "question", f"{entry.question!r} is not {against}'s question of that id "
                          f"({question.question!r}): the audit was made for another file; give its own audit, or "
                          "drop dataset.corrections")
        if problem := unresolved_evidence(entry.correct_evidence, dialog_turns(conversation)):
            raise _refuse(source, entry, "correct_evidence", f"{problem} in {against}: correct the ids, or give the "
                          "audit this file was made for")
    fixed = corrected([question for _, question in asked.values() if question.id in audit], audit)
    return {question.id: question for question in fixed}


def _refuse(source: str, entry: AuditEntry, field: str, problem: str) -> LocomoValidationError:
    return LocomoValidationError(source, problem, place=f"audit entry {entry.position}", question_id=entry.question_id,
                                 field=field, index=entry.position)


def corrected(questions: Iterable[LocomoQuestion], audit: Mapping[str, AuditEntry]) -> list[LocomoQuestion]:
    """``questions`` with the audit's corrected evidence where it has an entry, and its corrected answer where the
    gold answer is wrong (:attr:`AuditEntry.answer_wrong`); the others unchanged."""
    out = []
    for question in questions:
        entry = audit.get(question.id)
        if entry is None:
            out.append(question)
            continue
        answer = entry.correct_answer if entry.answer_wrong else question.answer
        out.append(replace(question, answer=answer, evidence=entry.correct_evidence or question.evidence))
    return out


def known_wrong_share(questions: Iterable[LocomoQuestion], audit: Mapping[str, AuditEntry]) -> float:
    """The share of ``questions`` whose gold answer the audit says is wrong: 1 minus it is the best raw score."""
    asked = list(questions)
    wrong = sum(1 for q in asked if (entry := audit.get(q.id)) is not None and entry.answer_wrong)
    return wrong / len(asked) if asked else 0.0
