"""LoCoMo's known label errors: the community audit of its gold answers, and the questions it corrects.

The audit (github.com/dial481/locomo-audit, ``errors.json`` at commit 9493fb4, CC BY-NC 4.0, never shipped) lists
156 questions by LoCoMo's own ids (:func:`om_eval.data.locomo.question_id`) with an error type, the gold answer, a
corrected answer and corrected evidence. Some entries only fix the evidence (``WRONG_CITATION``): their gold answer
stands. The rest say the gold answer itself is wrong, which caps any system's score: :func:`known_wrong_share` is
that share, so a report can show raw and corrected scores side by side with the ceiling.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import cast

from om_eval.data.locomo import LocomoQuestion
from om_eval.data.reading import DatasetValidationError, read_pinned_json

__all__ = ["AUDIT_FILE", "AUDIT_SHA256", "ENV_AUDIT_PATH", "AuditEntry", "corrected", "known_wrong_share",
           "load_audit"]

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

    @property
    def answer_wrong(self) -> bool:
        """The gold answer itself is wrong. A ``WRONG_CITATION`` entry fixes only the evidence (its corrected answer
        often just notes that the answer is right); otherwise the answers are compared, case and spacing ignored."""
        if self.error_type == "WRONG_CITATION":
            return False
        return " ".join(self.golden_answer.lower().split()) != " ".join(self.correct_answer.lower().split())


def _entry(raw: Mapping[str, object], index: int, source: str) -> AuditEntry:
    try:
        return AuditEntry(
            question_id=str(raw["question_id"]), error_type=str(raw["error_type"]),
            golden_answer=str(raw["golden_answer"]), correct_answer=str(raw["correct_answer"]),
            # Not iterable: the TypeError is reported below as a malformed entry.
            correct_evidence=tuple(str(e) for e in cast(Iterable[object], raw.get("correct_evidence") or ())),
            reasoning=str(raw.get("reasoning") or ""),
        )
    except (KeyError, TypeError) as error:
        raise DatasetValidationError(source, f"audit entry {index} lacks {error}", index=index) from None


def load_audit(path: str | os.PathLike[str] | None = None, *, verify: bool = True) -> dict[str, AuditEntry]:
    """The audit's entries by question id, from ``path`` or ``$LOCOMO_AUDIT_PATH`` (a file, or a folder holding
    ``locomo-audit-errors.json``), else its pinned download (:data:`AUDIT_URL`); the official file is checked
    against its pinned sha256 first."""
    found, records = read_pinned_json(path, env=ENV_AUDIT_PATH, file_name=AUDIT_FILE, sha256=AUDIT_SHA256,
                                      what="LoCoMo audit", origin=ORIGIN, verify=verify, url=AUDIT_URL)
    if not isinstance(records, list):
        raise DatasetValidationError(str(found), "expected a JSON list of audit entries")
    entries = [_entry(raw, i, found.name) for i, raw in enumerate(records)]
    return {entry.question_id: entry for entry in entries}


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
