"""``om-eval data synth|check`` through the parser that the main CLI mounts."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from om_eval.cli.data import add_parser as add_data_parser
from om_eval.cli.data import run as run_data_command


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="om-eval")
    add_data_parser(parser.add_subparsers(dest="command"))
    return run_data_command(parser.parse_args(argv))


def test_synth_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lme.json"
    assert _run(["data", "synth", "--size", "mini", "--questions-per-type", "2", "--seed", "4", "--out",
                 str(out)]) == 0
    assert "Wrote 13 questions (12 answerable, 1 abstention; size mini, seed 4)" in capsys.readouterr().out
    assert _run(["data", "check", str(out)]) == 0
    text = capsys.readouterr().out
    assert "questions: 13 (abstention 1, int answers 2)" in text
    assert "not an official file: hash recorded, not checked" in text
    assert "tokens/question (o200k_base, turn contents, sample of 3)" in text
    assert _run(["data", "check", str(out), "--json", "--sample", "0"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["per_type"]["temporal-reasoning"] == {"n": 2, "abstention": 0}
    assert summary["questions_with_repeated_session_ids"] == 13 and summary["tokens_per_question"] is None


def test_check_reports_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "e47becba"}]))
    assert _run(["data", "check", str(bad)]) == 1
    assert "bad.json: question 'e47becba' field question_type: is missing" in capsys.readouterr().err


def test_importing_the_data_cli_stays_light() -> None:
    code = ("import sys, om_eval.cli.data\n"
            "heavy = [m for m in ('pandas', 'datasets', 'rich', 'tiktoken', 'litellm', 'huggingface_hub') "
            "if m in sys.modules]\nprint(heavy); sys.exit(bool(heavy))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
