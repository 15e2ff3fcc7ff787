"""``om-eval data check`` knows both benchmarks: it tells a LoCoMo file from a LongMemEval one and checks each as its
loader does."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pytest

from om_eval.cli.data import add_parser, detect_benchmark, run
from om_eval.data import mini_fixture_path
from tests.locomo_shaped import write_audit, write_locomo_shaped

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
REAL = SHARED / "locomo10.json"


def _check(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="om-eval")
    add_parser(parser.add_subparsers(dest="command"))
    return run(parser.parse_args(["data", "check", *argv]))


def test_the_benchmark_is_told_by_the_first_record(tmp_path: Path) -> None:
    assert detect_benchmark(str(write_locomo_shaped(tmp_path, 1))) == "locomo"
    assert detect_benchmark(str(mini_fixture_path())) == "longmemeval"
    assert detect_benchmark("oracle") == "longmemeval"  # a split
    assert detect_benchmark(str(tmp_path / "locomo10.json")) == "locomo"  # by name, even before it exists
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert detect_benchmark(str(empty)) is None
    broken = tmp_path / "broken.json"
    broken.write_text('[{"conversation": ')
    assert detect_benchmark(str(broken)) == "longmemeval"  # its loader says what is wrong


def test_a_locomo_file_is_summarised_by_conversation_and_category(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write_locomo_shaped(tmp_path, conversations=2, sessions=3)
    assert _check(str(path), "--json", "--sample", "1") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["benchmark"] == "locomo" and summary["conversations"] == 2 and summary["questions"] == 14
    assert summary["per_category"] == {"1 multi-hop": 2, "2 temporal": 2, "3 open-domain": 2, "4 single-hop": 6,
                                       "5 adversarial": 2}
    assert summary["sessions_per_conversation"] == {"min": 3, "mean": 3.0, "max": 3}
    assert summary["evidence"]["malformed"] == ["locomo_0_qa4 'D1:1; D2:1'", "locomo_0_qa5 'D:2:1'",
                                                "locomo_1_qa4 'D1:1; D2:1'", "locomo_1_qa5 'D:2:1'"]
    assert summary["evidence"]["dangling"] == [] and summary["tokens_per_conversation"]["sample"] == 1


def test_the_benchmark_option_overrides_the_guess(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_locomo_shaped(tmp_path, 1)
    assert _check(str(path), "--benchmark", "longmemeval") == 1
    assert "field question_id: is missing" in capsys.readouterr().err
    assert _check(str(mini_fixture_path()), "--benchmark", "locomo") == 1
    assert "conversation 0: is a LongMemEval question record" in capsys.readouterr().err


def test_an_empty_file_names_both_benchmarks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert _check(str(empty)) == 1
    assert "neither LongMemEval questions nor LoCoMo conversations" in capsys.readouterr().err
    assert _check(str(empty), "--benchmark", "locomo") == 1
    assert "empty.json: holds no conversation (an empty list)" in capsys.readouterr().err


def test_an_audit_is_checked_against_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_locomo_shaped(tmp_path, 1)
    entry = {"question_id": "locomo_0_qa0", "error_type": "WRONG_ANSWER", "golden_answer": "a grey cat called Pixel",
             "correct_answer": "a grey kitten", "correct_evidence": ["D1:1"]}
    assert _check(str(path), "--sample", "0", "--audit", str(write_audit(tmp_path, [entry]))) == 0
    assert "1 entries, 1 name questions of this file, 1 correct the gold answer" in capsys.readouterr().out
    assert _check(str(path), "--audit", str(write_audit(tmp_path, [{**entry, "question_id": "locomo_3_qa0"}]))) == 1
    assert "audit_shaped.json: names none of the questions of locomo_shaped.json" in capsys.readouterr().err


@pytest.mark.skipif(not REAL.is_file(), reason=f"the real LoCoMo file is not at {REAL} (never shipped: CC BY-NC)")
def test_the_real_file_passes_with_its_loose_evidence_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert _check(str(REAL), "--json", "--sample", "0") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["conversations"] == 10 and summary["questions"] == 1986
    assert Counter({k: len(v) for k, v in summary["evidence"].items()}) == {"none": 4, "malformed": 6, "dangling": 2}
    assert summary["evidence"]["dangling"] == ["locomo_3_qa58 'D10:19'", "locomo_6_qa38 'D4:36'"]
