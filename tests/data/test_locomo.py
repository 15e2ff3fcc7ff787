"""LoCoMo's file read into conversations and questions: on a small record always, on the real file when it exists."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from om_eval.data.locomo import LOCOMO_SHA256, load_locomo, parse_session_time
from om_eval.data.reading import DatasetValidationError, sha256_file
from om_eval.om.config import ConfigError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
REAL = SHARED / "locomo10.json"
AUDIT = SHARED / "locomo-audit-errors.json"

RECORD = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_2_date_time": "9:05 am on 3 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back again."}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Look at this", "blip_caption": "a photo of a red kite",
             "img_url": ["https://example.invalid/x.jpg"]},
        ],
    },
    "qa": [
        {"question": "When did Ana say hi?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        {"question": "What did Ana's dog eat?", "adversarial_answer": "cake", "evidence": ["D1:2"], "category": 5},
    ],
}


def write(tmp_path: Path, records: object, name: str = "small.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_a_record_becomes_dated_sessions_mapped_roles_and_questions(tmp_path: Path) -> None:
    (conversation,) = load_locomo(write(tmp_path, [RECORD]))
    assert [s.number for s in conversation.sessions] == [1, 2]  # by number, not by key order
    first = conversation.sessions[0]
    assert first.started_at == datetime(2023, 5, 8, 13, 56)
    assert [(t.speaker, t.role) for t in first.turns] == [("Ana", "user"), ("Ben", "assistant")]
    assert first.turns[1].text == "Look at this [image: a photo of a red kite]"
    assert (first.turns[1].created_at - first.turns[0].created_at).total_seconds() == 5
    asked, adversarial = conversation.questions
    assert (asked.id, asked.answer, asked.category, asked.evidence) == ("locomo_0_qa0", "2023", 2, ("D1:1",))
    assert adversarial.adversarial and adversarial.answer == "cake"
    assert conversation.ends_at == datetime(2023, 6, 3, 9, 5)
    (swapped,) = load_locomo(write(tmp_path, [RECORD]), speaker_roles="b_user")
    assert swapped.sessions[0].turns[0].role == "assistant"


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["conversation"].update(session_1_date_time="yesterday"), "session_1_date_time: date and time"),
    (lambda r: r["qa"][0].update(category=7), "category 7 is not one of 1-5"),
    (lambda r: r["qa"][1].pop("adversarial_answer"), "needs 'question' and 'adversarial_answer'"),
    (lambda r: r["conversation"]["session_1"][0].update(speaker="Cleo"), "speaker 'Cleo' is neither"),
    (lambda r: r["conversation"].pop("speaker_b"), "lacks 'speaker_b'"),
])
def test_a_broken_record_is_named_with_its_place(tmp_path: Path, change, message: str) -> None:
    record = json.loads(json.dumps(RECORD))
    change(record)
    with pytest.raises(DatasetValidationError, match=message) as caught:
        load_locomo(write(tmp_path, [record]))
    assert "small.json" in str(caught.value) and "conversation 0" in str(caught.value)


def test_missing_file_option_and_time_errors_say_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCOMO_PATH", raising=False)
    with pytest.raises(FileNotFoundError, match="dataset.path or \\$LOCOMO_PATH"):
        load_locomo()
    with pytest.raises(ConfigError, match="dataset.speaker_roles='b'"):
        load_locomo(write(tmp_path, [RECORD]), speaker_roles="b")
    assert parse_session_time("12:05 am on 1 January, 2024") == datetime(2024, 1, 1, 0, 5)
    wrong = write(tmp_path, [RECORD], name="locomo10.json")
    with pytest.raises(DatasetValidationError, match="pinned"):
        load_locomo(wrong)
    assert load_locomo(wrong, verify=False)[0].sample_id == "conv-x"


@pytest.mark.skipif(not REAL.is_file(), reason=f"the real LoCoMo file is not at {REAL} (never shipped: CC BY-NC)")
def test_the_real_file_holds_ten_conversations_and_1986_questions() -> None:
    assert sha256_file(REAL) == LOCOMO_SHA256
    conversations = load_locomo(REAL)
    questions = [q for c in conversations for q in c.questions]
    assert len(conversations) == 10 and len(questions) == 1986
    assert Counter(q.category for q in questions) == {4: 841, 5: 446, 2: 321, 1: 282, 3: 96}
    assert all(q.adversarial == (q.category == 5) and q.answer for q in questions)
    assert min(len(c.sessions) for c in conversations) >= 19 and max(len(c.sessions) for c in conversations) <= 35
    dialog_ids = {t.dia_id for c in conversations for s in c.sessions for t in s.turns}
    cited = {e for q in questions for e in q.evidence}
    assert len(cited - dialog_ids) < 0.02 * len(cited)  # a few evidence ids in the file point nowhere
    if AUDIT.is_file():  # the audit names questions by the same ids
        audited = json.loads(AUDIT.read_text(encoding="utf-8"))
        by_id = {q.id: q for q in questions}
        assert all(e["question_id"] in by_id for e in audited)
        assert all(by_id[e["question_id"]].question == e["question"] for e in audited)


# --------------------------------------------------------------------------- the audit of the gold answers

AUDIT_ENTRIES = [
    {"question_id": "locomo_0_qa0", "question": "When did Ana say hi?", "golden_answer": "2023", "category": 2,
     "error_type": "WRONG_CITATION", "cited_evidence": ["D1:1"], "correct_evidence": ["D1:2"],
     "correct_answer": "2023", "reasoning": "said in the second turn"},
    {"question_id": "locomo_0_qa1", "question": "What did Ana's dog eat?", "golden_answer": "cake", "category": 5,
     "error_type": "HALLUCINATION", "cited_evidence": [], "correct_evidence": [], "correct_answer": "nothing said",
     "reasoning": "no dog"},
]


def test_the_audit_corrects_answers_and_evidence_and_gives_the_ceiling(tmp_path: Path) -> None:
    from om_eval.data.locomo_audit import corrected, known_wrong_share, load_audit

    audit = load_audit(write(tmp_path, AUDIT_ENTRIES, name="audit.json"))
    assert not audit["locomo_0_qa0"].answer_wrong and audit["locomo_0_qa1"].answer_wrong
    (conversation,) = load_locomo(write(tmp_path, [RECORD]))
    fixed = corrected(conversation.questions, audit)
    assert fixed[0].evidence == ("D1:2",)
    assert fixed[0].answer == "2023" and fixed[1].answer == "nothing said"
    assert known_wrong_share(conversation.questions, audit) == 0.5
    broken = write(tmp_path, [{"question_id": "x"}], name="broken.json")
    with pytest.raises(DatasetValidationError, match="audit entry 0 lacks"):
        load_audit(broken)


@pytest.mark.skipif(not (REAL.is_file() and AUDIT.is_file()),
                    reason=f"the LoCoMo file and its audit are not in {SHARED} (never shipped: CC BY-NC)")
def test_the_real_audit_marks_a_known_share_of_gold_answers_wrong() -> None:
    from om_eval.data.locomo_audit import AUDIT_SHA256, known_wrong_share, load_audit

    assert sha256_file(AUDIT) == AUDIT_SHA256
    audit = load_audit(AUDIT)
    questions = [q for c in load_locomo(REAL) for q in c.questions]
    wrong = [e for e in audit.values() if e.answer_wrong]
    assert len(audit) == 156 and Counter(e.error_type for e in audit.values())["WRONG_CITATION"] == 57
    assert len(wrong) == 99  # the 99 entries other than WRONG_CITATION all change the answer
    assert known_wrong_share(questions, audit) == pytest.approx(len(wrong) / 1986)
