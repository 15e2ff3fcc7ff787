"""The om-eval command line: fast help, the demo main job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from om_eval.cli import main

HEAVY = ("litellm", "llama_cpp", "pandas", "rich", "tiktoken")


def test_imports_and_help_stay_light() -> None:
    # `import om_eval` and `om-eval --help` must not pay for litellm (3-6 s) or other heavy packages.
    code = (
        "import sys, contextlib, io\n"
        "import om_eval, om_eval.cli, om_eval.llm, om_eval.llm.cache, om_eval.llm.local, om_eval.om\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    om_eval.cli.main(['--help'])\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(heavy); sys.exit(bool(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_demo_runs_and_saves_a_snapshot(tmp_path: Path, capsys) -> None:
    path = tmp_path / "memory.json"
    assert main(["demo", "--model", "scripted", "--sessions", "8", "--save-snapshot", str(path), "--show-context",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "observation" in out and "<observations>" in out
    snapshot = json.loads(path.read_text())
    assert snapshot["format"] == "om-eval/memory@1" and snapshot["token_counter"] == "tiktoken/o200k_base"


def test_demo_reports_invalid_options(capsys) -> None:
    assert main(["demo", "--model", "scripted", "--message-tokens", "0"]) == 2
    assert "observation.message_tokens=0 is invalid" in capsys.readouterr().out
