"""Bad LoCoMo input stops before a run starts, as bad LongMemEval input does (fault drill "No silent wrong result,
third pass", item 5).

Before: an empty file or a conversation with ``"qa": []`` made an empty run and exited 0; evidence naming no turn
(``D99:99``) was accepted, and ``baseline=oracle`` then showed the reader no history (6/6 "I don't know"); an audit
whose ids match no question turned corrections off without a word; ``qa`` an object or a turn a string raised an
AttributeError traceback; ``category: true`` was read as category 1; ``om-eval data check locomo10.json`` reported
LongMemEval fields missing.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.locomo_shaped import conversation, write_audit, write_locomo_shaped
from tests.reliability.harness import invoke

REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"


def _one(change: Callable[[dict[str, Any]], object]) -> list[dict[str, Any]]:
    record = conversation(0)
    change(record)
    return [record]


def _dangling(record: dict[str, Any]) -> None:
    for question in record["qa"]:
        question["evidence"] = ["D99:99"]


#: (case, the file's records, extra overrides, what the one error line names, what it says to do)
CASES = [
    ("empty file", [], (), "bad.json: holds no conversation (an empty list)",
     "point dataset.path at a LoCoMo file with at least one, e.g. locomo10.json, or check that the file was written "
     "completely"),
    ("no questions", _one(lambda r: r.update(qa=[])), (), "bad.json: conversation 0 (conv-0) field qa: is empty",
     "give it its questions or drop the conversation"),
    ("evidence naming no turn", _one(_dangling), ("baseline=oracle",),
     "bad.json: conversation 0 (conv-0) question 'locomo_0_qa0' field qa[0].evidence: none of ['D99:99'] names a "
     "turn of this conversation", "correct the ids, or drop the question"),
    ("qa an object", _one(lambda r: r.update(qa={"0": r["qa"][0]})), (),
     "bad.json: conversation 0 (conv-0) field qa: must be a list of question objects, got an object",
     "write the conversation's questions as a list, [{question, answer, evidence, category}, ...]"),
    ("a turn a string", _one(lambda r: r["conversation"]["session_2"].__setitem__(1, "hello")), (),
     "bad.json: conversation 0 (conv-0) field conversation.session_2[1]: must be a turn object with speaker, dia_id "
     'and text, got the string "hello"', "fix the turn or drop it"),
    ("category true", _one(lambda r: r["qa"][3].update(category=True)), (),
     "bad.json: conversation 0 (conv-0) question 'locomo_0_qa3' field qa[3].category: must be an integer 1-5, got "
     "true", "fix it or drop the question"),
]


@pytest.mark.parametrize(("records", "overrides", "named", "todo"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_bad_locomo_file_fails_cleanly(tmp_path: Path, records: list[Any], overrides: tuple[str, ...], named: str,
                                       todo: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    result = invoke(tmp_path, "dataset=locomo", f"dataset.path={path}", *overrides)
    _assert_refused(tmp_path, result.code, result.output, named, todo)


def test_an_audit_matching_no_question_fails_cleanly(tmp_path: Path) -> None:
    path = write_locomo_shaped(tmp_path, conversations=1)
    audit = write_audit(tmp_path, [{"question_id": "locomo_7_qa900", "error_type": "WRONG_ANSWER",
                                    "golden_answer": "x", "correct_answer": "y", "correct_evidence": ["D1:1"]}])
    result = invoke(tmp_path, "dataset=locomo", f"dataset.path={path}", "dataset.corrections=locomo_audit",
                    f"dataset.audit_path={audit}")
    _assert_refused(tmp_path, result.code, result.output,
                    "audit_shaped.json: names none of the questions of locomo_shaped.json (it names e.g. "
                    "'locomo_7_qa900'", "give the audit of this file (dataset.audit_path or $LOCOMO_AUDIT_PATH), or "
                    "drop dataset.corrections")


def test_a_malformed_audit_entry_fails_cleanly(tmp_path: Path) -> None:
    path = write_locomo_shaped(tmp_path, conversations=1)
    audit = write_audit(tmp_path, [{"question_id": "locomo_0_qa0", "error_type": "WRONG_ANSWER",
                                    "golden_answer": "x", "correct_answer": "y", "correct_evidence": "D1:1"}])
    result = invoke(tmp_path, "dataset=locomo", f"dataset.path={path}", "dataset.corrections=locomo_audit",
                    f"dataset.audit_path={audit}")
    _assert_refused(tmp_path, result.code, result.output,
                    "audit_shaped.json: audit entry 0 question 'locomo_0_qa0' field correct_evidence: must be a list",
                    "fix the entry, or give the audit this file was made for")


def _assert_refused(results: Path, code: int, output: str, named: str, todo: str) -> None:
    assert code != 0, output
    assert "Traceback" not in output, output
    error_lines = [line for line in output.splitlines() if line.startswith("om-eval run:")]
    assert len(error_lines) == 1, output
    assert named in error_lines[0] and error_lines[0].endswith(todo), error_lines[0]
    assert not list(results.glob("store/*.duckdb")), "a refused run must leave no run file"


# -- om-eval data check ------------------------------------------------------------------------------------------


def _check(*argv: str) -> tuple[int, str]:
    from om_eval.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(["data", "check", *argv])
    return code, buffer.getvalue()


def test_data_check_reads_a_locomo_file_as_locomo(tmp_path: Path) -> None:
    code, output = _check(str(write_locomo_shaped(tmp_path, conversations=2)), "--sample", "0")
    assert code == 0, output
    assert "LoCoMo conversations: 2, questions: 14" in output and "question_id" not in output
    assert "  4 single-hop                     6" in output


def test_data_check_refuses_a_bad_locomo_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_one(lambda r: r["qa"][3].update(category=True))), encoding="utf-8")
    code, output = _check(str(path))
    assert code == 1
    (line,) = output.splitlines()
    assert line.startswith("data check failed: bad.json: conversation 0 (conv-0) question 'locomo_0_qa3' field "
                           "qa[3].category: must be an integer 1-5, got true")


@pytest.mark.skipif(not REAL.is_file(), reason=f"the real LoCoMo file is not at {REAL} (never shipped: CC BY-NC)")
def test_data_check_reads_the_real_locomo_file() -> None:
    code, output = _check(str(REAL), "--sample", "0")
    assert code == 0, output
    assert "(the pinned locomo10.json)" in output
    assert "LoCoMo conversations: 10, questions: 1986" in output and "question_id" not in output
    assert "evidence ids naming no turn, ignored (another id of the question does): 2" in output


def test_an_audit_that_cannot_be_found_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Corrections asked for, no audit given and no network: one line saying how to give it, no traceback."""
    import urllib.request

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("no network")

    monkeypatch.delenv("LOCOMO_AUDIT_PATH", raising=False)
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    path = write_locomo_shaped(tmp_path, conversations=1)
    result = invoke(tmp_path, "dataset=locomo", f"dataset.path={path}", "dataset.corrections=locomo_audit")
    _assert_refused(tmp_path, result.code, result.output, "LoCoMo audit not given ($LOCOMO_AUDIT_PATH",
                    "give its path instead; or run without the audit's corrections: dataset.corrections=null")
