"""LoCoMo as benchmark questions: shared haystacks, evidence flags, question dates, corrections, downloads."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from om_eval.data import locomo
from om_eval.data.locomo import evidence_turns
from om_eval.data.locomo_questions import locomo_dataset
from om_eval.data.reading import DatasetValidationError
from om_eval.om.config import ConfigError
from tests.locomo_shaped import write_audit, write_locomo_shaped


def test_every_question_of_a_conversation_shares_its_haystack(tmp_path: Path) -> None:
    dataset = locomo_dataset(write_locomo_shaped(tmp_path, conversations=2))
    questions = list(dataset.iter_questions())
    assert dataset.benchmark == "locomo" and len(questions) == len(dataset) == 14
    assert {q.memory_owner for q in questions} == {"locomo_0", "locomo_1"}
    assert {e.memory_owner for e in dataset.entries} == {"locomo_0", "locomo_1"}
    first, last = questions[0], questions[6]
    assert first.question_id == "locomo_0_qa0" and first.question_type == "single-hop"
    assert first.sessions == tuple(s for s in first.sessions) and first.sessions[0].question_id == "locomo_0"
    # the same turns, dated as LoCoMo dates them, whatever the question
    assert [[t.content for t in s.turns] for s in first.sessions] == [[t.content for t in s.turns]
                                                                      for s in last.sessions]
    assert first.sessions[0].turns[2].content.endswith("[image: a photo of a sunny street]")
    ends = max(s.date for s in first.sessions)
    assert first.question_date > ends and first.question_date_text.startswith("2023/05/")


def test_evidence_marks_its_turns_and_sessions_even_when_malformed() -> None:
    assert evidence_turns(["D1:3", "D:11:26", "D8:6; D9:17", "D", "D30:05"]) == {
        (1, 3), (11, 26), (8, 6), (9, 17), (30, 5)}


def test_evidence_flags_and_the_unanswerable_category(tmp_path: Path) -> None:
    questions = {q.question_id: q for q in locomo_dataset(write_locomo_shaped(tmp_path, 1)).iter_questions()}
    multi = questions["locomo_0_qa4"]  # evidence "D1:1; D2:1"
    assert [s.is_evidence for s in multi.sessions] == [True, True, False]
    assert multi.answer_session_ids == ("session_1", "session_2")
    assert [t.has_answer for t in multi.sessions[0].turns] == [True, False, False, False]
    trap = questions["locomo_0_qa6"]
    assert trap.is_abstention and trap.question_type == "adversarial"
    assert trap.answer == "a grey cat called Pixel" and "never says" in trap.judge_answer
    assert not questions["locomo_0_qa0"].is_abstention and questions["locomo_0_qa0"].judge_answer is None


def test_corrections_keep_the_published_gold_and_add_the_corrected_one(tmp_path: Path) -> None:
    audit = write_audit(tmp_path, [
        {"question_id": "locomo_0_qa0", "error_type": "WRONG_ANSWER", "golden_answer": "a grey cat called Pixel",
         "correct_answer": "a grey kitten", "correct_evidence": ["D2:1"], "reasoning": "r"},
        {"question_id": "locomo_0_qa1", "error_type": "WRONG_CITATION", "golden_answer": "pottery",
         "correct_answer": "pottery (answer right)", "correct_evidence": ["D2:3"], "reasoning": "r"},
    ])
    path = write_locomo_shaped(tmp_path, 1)
    dataset = locomo_dataset(path, corrections="locomo_audit", audit_path=audit)
    questions = {q.question_id: q for q in dataset.iter_questions()}
    fixed = questions["locomo_0_qa0"]
    assert (fixed.answer, fixed.corrected_answer) == ("a grey cat called Pixel", "a grey kitten")
    assert fixed.answer_session_ids == ("session_2",)  # the audit's evidence
    cited = questions["locomo_0_qa1"]
    assert cited.corrected_answer is None and cited.answer_session_ids == ("session_2",)
    assert sum(q.corrected_answer is not None for q in questions.values()) == 1
    assert dataset.extras["corrections"] == "locomo_audit"
    plain = {q.question_id: q for q in locomo_dataset(path).iter_questions()}
    assert plain["locomo_0_qa0"].corrected_answer is None and plain["locomo_0_qa0"].answer_session_ids == (
        "session_1",)
    with pytest.raises(ConfigError, match="dataset.corrections='audit' is invalid"):
        locomo_dataset(path, corrections="audit")


def test_without_a_path_the_pinned_file_is_downloaded_once_and_checked(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    source = write_locomo_shaped(tmp_path, 1)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    monkeypatch.delenv("LOCOMO_PATH", raising=False)
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(locomo, "LOCOMO_URL", source.as_uri())
    monkeypatch.setattr(locomo, "LOCOMO_SHA256", digest)
    conversations = locomo.load_locomo()
    assert len(conversations) == 1
    cached = tmp_path / "cache" / "data" / digest[:16] / "locomo10.json"
    assert cached.read_bytes() == source.read_bytes()
    monkeypatch.setattr(locomo, "LOCOMO_SHA256", "0" * 64)
    with pytest.raises(DatasetValidationError, match="not the pinned"):
        locomo.load_locomo()  # a download that is not the pinned file is refused, and not kept
    assert not (tmp_path / "cache" / "data" / ("0" * 16)).exists()
    monkeypatch.setattr(locomo, "LOCOMO_SHA256", digest)
    source.unlink()  # the cached copy serves from now on
    assert len(locomo.load_locomo()) == 1
    monkeypatch.setattr(locomo, "LOCOMO_URL", (tmp_path / "gone.json").as_uri())
    monkeypatch.setattr(locomo, "LOCOMO_SHA256", "1" * 64)  # not cached
    with pytest.raises(FileNotFoundError, match="could not download .*give its path instead"):
        locomo.load_locomo()


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not (SHARED / "locomo10.json").exists() or not (SHARED / "locomo-audit-errors.json").exists(),
                    reason="the LoCoMo file and its audit are not shipped; they are read from ../shared/data when "
                           "present")
def test_the_real_file_gives_ten_shared_memories_and_99_corrected_golds() -> None:
    dataset = locomo_dataset(SHARED / "locomo10.json", corrections="locomo_audit",
                             audit_path=SHARED / "locomo-audit-errors.json")
    assert len(dataset) == 1986 and len({e.memory_owner for e in dataset.entries}) == 10
    assert sum(e.is_abstention for e in dataset.entries) == 446
    questions = list(dataset.iter_questions())
    assert sum(q.corrected_answer is not None for q in questions) == 99
    assert all(q.question_date > max(s.date for s in q.sessions) for q in questions[::97])
    # every answerable question points at least one turn of its conversation, malformed ids included
    answerable = [q for q in questions if not q.is_abstention]
    unmarked = [q.question_id for q in answerable if not any(t.has_answer for s in q.sessions for t in s.turns)]
    assert len(unmarked) <= 5, unmarked


def _marks_only_its_own_evidence(path: Path) -> None:
    conversations = {c.index: c for c in locomo.read_locomo(path)[1]}
    raw_questions = {q.id: q for c in conversations.values() for q in c.questions}
    for q in locomo_dataset(path).iter_questions():
        wanted = evidence_turns(raw_questions[q.question_id].evidence)
        raw = conversations[int(q.memory_owner.split("_")[1])]
        expected = {(si, ti) for si, session in enumerate(raw.sessions) for ti, turn in enumerate(session.turns)
                    if len(found := evidence_turns([turn.dia_id])) == 1 and next(iter(found)) in wanted}
        assert {(s.index, i) for s in q.sessions for i, t in enumerate(s.turns) if t.has_answer} == expected
        assert [s.is_evidence for s in q.sessions] == [any(si == i for i, _ in expected)
                                                       for si in range(len(q.sessions))]


def test_shared_sessions_leave_each_question_its_own_evidence(tmp_path: Path) -> None:
    # Sessions a question's evidence does not touch are one object shared by every question of the conversation.
    _marks_only_its_own_evidence(write_locomo_shaped(tmp_path, conversations=2))


@pytest.mark.skipif(not (SHARED / "locomo10.json").exists(), reason="the LoCoMo file is not shipped; it is read "
                    "from ../shared/data when present")
def test_every_real_question_marks_only_its_own_evidence() -> None:
    _marks_only_its_own_evidence(SHARED / "locomo10.json")
