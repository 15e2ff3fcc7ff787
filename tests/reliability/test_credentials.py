"""A missing API key stops a run before it starts, in one line, leaving no run behind (issue 20 case 6).

Before: every question failed one by one as "HTTP 500 ... Missing credentials" and an empty run stayed in
``report`` and ``view``.
"""

from __future__ import annotations

import time
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


def test_the_published_preset_asks_for_the_gemini_key_its_calls_need(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``google/gemini-2.5-flash`` is called as ``gemini/...``: the check asks about that id, before the data is
    read (the preset's S file would otherwise be fetched first), naming every role that needs the key."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    started = time.monotonic()
    result = invoke(tmp_path, "experiment=mastra_gpt4o", "dataset.path=/nonexistent/longmemeval_s.json",
                    "judge=house")
    assert result.code != 0 and time.monotonic() - started < 3
    (line,) = [line for line in result.output.splitlines() if line.startswith("om-eval run:")]
    assert "GEMINI_API_KEY (or GOOGLE_API_KEY)" in line and "nothing was run" in line
    assert "models.observer=google/gemini-2.5-flash" in line and "models.reflector=google/gemini-2.5-flash" in line
    assert "models.actor" not in line and "nonexistent" not in line  # the data was never looked at
    monkeypatch.delenv("OPENAI_API_KEY")
    line = next(line for line in invoke(tmp_path, "experiment=mastra_gpt4o", "judge=house").output.splitlines()
            if line.startswith("om-eval run:"))
    assert "set OPENAI_API_KEY for models.actor=openai/gpt-4o, models.judge=" in line
    assert "set GEMINI_API_KEY (or GOOGLE_API_KEY) for models.observer" in line


def test_missing_credentials_follows_litellm_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert missing_credentials("openai/gpt-4o") == ["OPENAI_API_KEY"]
    assert missing_credentials("openai/gpt-4o", {"api_key": "sk-test"}) == []
    assert missing_credentials("openai/gpt-4o", {"api_key": "none", "api_base": "http://127.0.0.1:8000/v1"}) == []
    assert missing_credentials("openai/gpt-4o", {"litellm": {"api_key": "sk-test"}}) == []  # the older form
    # An address alone does not say the server takes no key: the call would fail for want of one.
    assert missing_credentials("openai/gpt-4o", {"api_base": "http://127.0.0.1:8000/v1"}) == ["OPENAI_API_KEY"]
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert set(missing_credentials("google/gemini-2.5-flash")) == {"GEMINI_API_KEY", "GOOGLE_API_KEY"}
    assert missing_credentials("scripted/om-eval") == []
    assert missing_credentials("local/qwen2.5-coder-1.5b") == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert missing_credentials("openai/gpt-4o") == []
