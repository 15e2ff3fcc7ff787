"""A missing API key stops a run before it starts, in one line, leaving no run behind (issue 20 case 6).

Before: every question failed one by one as "HTTP 500 ... Missing credentials" and an empty run stayed in
``report`` and ``view``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from om_eval.llm.credentials import missing_credentials
from tests.reliability.harness import invoke


def test_a_missing_key_is_one_line_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = invoke(tmp_path, "model@models.actor=gpt-4o")
    assert result.code != 0
    assert "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("om-eval run:")]
    assert "models.actor" in line and "OPENAI_API_KEY" in line and "nothing was run" in line
    assert not list(tmp_path.glob("store/*.duckdb"))


def test_missing_credentials_follows_litellm_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert missing_credentials("openai/gpt-4o") == ["OPENAI_API_KEY"]
    assert missing_credentials("openai/gpt-4o", {"api_key": "sk-test"}) == []
    assert missing_credentials("openai/gpt-4o", {"api_base": "http://127.0.0.1:8000/v1"}) == []
    assert missing_credentials("scripted/om-eval") == []
    assert missing_credentials("local/qwen2.5-coder-1.5b") == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert missing_credentials("openai/gpt-4o") == []
