"""LoCoMo's file read into conversations and questions: on a small record always, on the real file when it exists."""

from __future__ import annotations

import json
import re
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


BROKEN = [
    # (change to RECORD, the field named, what the message says)
    (lambda r: r["conversation"].update(session_1_date_time="yesterday"), "conversation.session_1_date_time",
     'the string "yesterday" is not a date and time'),
    (lambda r: r["conversation"].update(session_1_date_time="1:56 pm on 31 June, 2023"),
     "conversation.session_1_date_time", "is not a date and time"),
    (lambda r: r["qa"][0].update(category=7), "qa[0].category", "must be an integer 1-5, got the number 7"),
    (lambda r: r["qa"][0].update(category=True), "qa[0].category", "must be an integer 1-5, got true"),
    (lambda r: r["qa"][0].update(category=2.0), "qa[0].category", "must be an integer 1-5"),
    (lambda r: r["qa"][0].update(category=[2]), "qa[0].category", "must be an integer 1-5, got a list"),
    (lambda r: r["qa"][0].pop("category"), "qa[0].category", "is missing"),
    (lambda r: r["qa"][1].pop("adversarial_answer"), "qa[1].adversarial_answer", "is missing"),
    (lambda r: r["qa"][0].update(answer=None), "qa[0].answer", "must be a non-empty string or a number, got null"),
    (lambda r: r["qa"][0].update(answer=" "), "qa[0].answer", "must be a non-empty string or a number"),
    (lambda r: r["qa"][0].update(question=""), "qa[0].question", "must be a non-empty string"),
    (lambda r: r["qa"][0].update(evidence="D1:1"), "qa[0].evidence", "must be a list of dialog ids"),
    (lambda r: r["qa"][0].update(evidence=["D1:1", 3]), "qa[0].evidence[1]", "must be a dialog id like 'D1:3'"),
    (lambda r: r["qa"][0].update(evidence=["D99:99"]), "qa[0].evidence",
     "none of ['D99:99'] names a turn of this conversation (its turns run D1:1 to D2:1)"),
    (lambda r: r["qa"][0].update(evidence=["D"]), "qa[0].evidence", "none of ['D'] names a turn"),
    (lambda r: r["qa"].__setitem__(0, "When?"), "qa[0]", 'must be a question object (question, answer, evidence, '
     'category), got the string "When?"'),
    (lambda r: r.update(qa={"0": r["qa"][0]}), "qa", "must be a list of question objects, got an object"),
    (lambda r: r.update(qa=[]), "qa", "is empty: the conversation has no question"),
    (lambda r: r.pop("qa"), "qa", "is missing"),
    (lambda r: r["conversation"]["session_1"].__setitem__(1, "Hi"), "conversation.session_1[1]",
     'must be a turn object with speaker, dia_id and text, got the string "Hi"'),
    (lambda r: r["conversation"]["session_1"][0].pop("text"), "conversation.session_1[0].text", "is missing"),
    (lambda r: r["conversation"]["session_1"][0].update(dia_id=11), "conversation.session_1[0].dia_id",
     "must be a string, got the number 11"),
    (lambda r: r["conversation"]["session_1"][0].update(dia_id="first"), "conversation.session_1[0].dia_id",
     "'first' is not a dialog id like 'D1:3'"),
    (lambda r: r["conversation"]["session_1"][0].update(speaker="Cleo"), "conversation.session_1[0].speaker",
     "'Cleo' is neither of the conversation's two speakers ('Ana', 'Ben')"),
    (lambda r: r["conversation"].update(session_1={}), "conversation.session_1", "must be a list of turns"),
    (lambda r: r["conversation"].update(session_1=[], session_2=[]), "conversation", "hold no turn"),
    (lambda r: r["conversation"].pop("speaker_b"), "conversation.speaker_b", "is missing"),
    (lambda r: r["conversation"].update(speaker_b="Ana"), "conversation.speaker_b", "the two speakers need two"),
    (lambda r: r.update(conversation=[]), "conversation", "must be an object, got a list"),
]


@pytest.mark.parametrize(("change", "field", "message"), BROKEN)
def test_a_broken_record_is_named_with_its_conversation_question_and_field(tmp_path: Path, change, field: str,
                                                                           message: str) -> None:
    record = json.loads(json.dumps(RECORD))
    change(record)
    with pytest.raises(DatasetValidationError) as caught:
        load_locomo(write(tmp_path, [RECORD, record]))
    text = str(caught.value)
    assert text.startswith("small.json: conversation 1 (conv-x) "), text
    assert f"field {field}: " in text and message in text, text
    assert caught.value.field == field and caught.value.index == 1
    if field.startswith("qa["):  # a question's problem names the question
        assert f"question 'locomo_1_qa{field[3]}'" in text
    assert "\n" not in text


@pytest.mark.parametrize(("records", "message"), [
    ([], "small.json: holds no conversation (an empty list)"),
    ({"conversation": {}}, "small.json: must hold a JSON list of conversations, got an object"),
    (["conv"], "small.json: conversation 0: must be an object with 'conversation' and 'qa'"),
    ([{"question_id": "q1", "question": "?"}], "conversation 0: is a LongMemEval question record"),
])
def test_a_file_that_is_not_a_list_of_conversations_is_refused(tmp_path: Path, records: object, message: str) -> None:
    with pytest.raises(DatasetValidationError, match=re.escape(message)):
        load_locomo(write(tmp_path, records))


def test_evidence_passes_when_one_of_its_ids_names_a_turn(tmp_path: Path) -> None:
    from om_eval.data.locomo import loose_evidence

    record = json.loads(json.dumps(RECORD))
    record["qa"][0]["evidence"] = ["D1:1", "D9:9", "D"]  # one turn, one dangling id, one malformed entry
    record["qa"][1]["evidence"] = []  # none cited: passes too
    (conversation,) = load_locomo(write(tmp_path, [record]))
    assert conversation.questions[0].evidence == ("D1:1", "D9:9", "D")
    assert loose_evidence(conversation) == [("locomo_0_qa0", "dangling", "D9:9"), ("locomo_0_qa0", "malformed", "D"),
                                            ("locomo_0_qa1", "none", "")]


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


BROKEN_AUDITS = [
    # (change to AUDIT_ENTRIES, what the message says)
    (lambda a: a.__setitem__(1, "locomo_0_qa1"), 'audit entry 1: must be an object (question_id, error_type, '
     'golden_answer, correct_answer, correct_evidence), got the string "locomo_0_qa1"'),
    (lambda a: a[1].pop("question_id"), "audit entry 1 field question_id: is missing"),
    (lambda a: a[1].pop("error_type"), "audit entry 1 question 'locomo_0_qa1' field error_type: is missing"),
    (lambda a: a[1].update(correct_answer=None), "field correct_answer: must be a string or a number, got null"),
    (lambda a: a[1].update(correct_evidence="D1:1"), "field correct_evidence: must be a list of dialog ids"),
    (lambda a: a[1].update(correct_evidence=[None]), "field correct_evidence[0]: must be a dialog id"),
    (lambda a: a[1].update(question_id="locomo_0_qa0"), "audit entry 1 question 'locomo_0_qa0' field question_id: "
     "is repeated (first in audit entry 0)"),
]


@pytest.mark.parametrize(("change", "message"), BROKEN_AUDITS)
def test_a_broken_audit_entry_is_named(tmp_path: Path, change, message: str) -> None:
    from om_eval.data.locomo_audit import load_audit

    entries = json.loads(json.dumps(AUDIT_ENTRIES))
    change(entries)
    with pytest.raises(DatasetValidationError) as caught:
        load_audit(write(tmp_path, entries, name="audit.json"))
    assert str(caught.value).startswith("audit.json: audit entry ") and message in str(caught.value)
    assert str(caught.value).endswith(("fix the entry, or give the audit this file was made for",
                                       "keep one entry per question"))


@pytest.mark.parametrize(("change", "message"), [
    (lambda a: a.clear(), "audit.json: holds no entry, so no correction would apply: give the audit of this file "
     "(dataset.audit_path or $LOCOMO_AUDIT_PATH), or drop dataset.corrections"),
    (lambda a: [e.update(question_id=e["question_id"].replace("_0_", "_7_")) for e in a],
     "audit.json: names none of the questions of small.json (it names e.g. 'locomo_7_qa0'; the file's run "
     "'locomo_0_qa0' to 'locomo_0_qa1'), so no correction would apply"),
    (lambda a: a[1].update(question="What did Ana's cat eat?"), "audit.json: audit entry 1 question 'locomo_0_qa1' "
     "field question: \"What did Ana's cat eat?\" is not small.json's question of that id"),
    (lambda a: a[0].update(correct_evidence=["D7:7"]), "audit.json: audit entry 0 question 'locomo_0_qa0' field "
     "correct_evidence: none of ['D7:7'] names a turn of this conversation"),
])
def test_an_audit_that_is_not_the_files_is_refused(tmp_path: Path, change, message: str) -> None:
    from om_eval.data.locomo_audit import load_audit, match_audit

    entries = json.loads(json.dumps(AUDIT_ENTRIES))
    change(entries)
    conversations = load_locomo(write(tmp_path, [RECORD]))
    audit = load_audit(write(tmp_path, entries, name="audit.json"))
    with pytest.raises(DatasetValidationError) as caught:
        match_audit(audit, conversations, source="audit.json", against="small.json")
    assert message in str(caught.value)


def test_an_audit_may_name_questions_the_file_lacks(tmp_path: Path) -> None:
    from om_eval.data.locomo_audit import load_audit, match_audit

    entries = [*AUDIT_ENTRIES, {**AUDIT_ENTRIES[0], "question_id": "locomo_5_qa0", "question": "Another?"}]
    conversations = load_locomo(write(tmp_path, [RECORD]))
    fixes = match_audit(load_audit(write(tmp_path, entries, name="audit.json")), conversations, source="audit.json",
                        against="small.json")
    assert sorted(fixes) == ["locomo_0_qa0", "locomo_0_qa1"] and fixes["locomo_0_qa1"].answer == "nothing said"


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
