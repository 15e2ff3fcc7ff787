"""The om-eval command line: fast help, the demo main job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from om_eval.cli import main


def test_help_does_not_import_heavy_packages() -> None:
    code = "import sys, om_eval.cli; sys.exit(any(m in sys.modules for m in ('litellm', 'pandas', 'rich', 'tiktoken')))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_demo_runs_and_saves_a_snapshot(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "memory.json"
    assert main(["demo", "--sessions", "8", "--save-snapshot", str(path), "--show-context"]) == 0
    out = capsys.readouterr().out
    assert "observation" in out and "<observations>" in out
    snapshot = json.loads(path.read_text())
    assert snapshot["format"] == "om-eval/memory@1" and snapshot["token_counter"] == "tiktoken/o200k_base"


def test_demo_reports_invalid_options(capsys) -> None:  # noqa: ANN001
    assert main(["demo", "--message-tokens", "0"]) == 2
    assert "observation.message_tokens=0 is invalid" in capsys.readouterr().out
