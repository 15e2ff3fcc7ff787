"""A run says what it is doing before its first question, and where its results went when it ends."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from om_eval.experiment.app import run_from_config
from om_eval.experiment.job import RunJob
from om_eval.llm import local
from tests.runs import compose_run


def _console() -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, width=240), out


def test_a_run_ends_with_where_its_results_are_and_what_to_run_next(tmp_path: Path) -> None:
    console, out = _console()
    summary = run_from_config(compose_run(tmp_path), console=console)
    text = out.getvalue()
    run_id = summary["run_id"]
    assert f"results: {tmp_path / 'store' / (run_id + '.duckdb')}" in text
    assert f"official exports: {tmp_path / 'runs' / run_id} (hypotheses.jsonl" in text
    assert (tmp_path / "runs" / run_id / "metrics.json").is_file()  # it says where they are, and they are there
    assert "note: the judge is the scripted test model (scripted/om-eval)" in text
    # The run wrote to another folder than results/, so each command is told where.
    where = f"--results {tmp_path}"
    assert f"next: om-eval report {where} · om-eval show {where} smoke <question id> · om-eval view {where} " in text


class _FakeProvider:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def load(self, model: str, on_step: Any = None) -> float:
        on_step(f"{model}: checking its weights")
        on_step(f"{model}: ready in 0.0 s")
        self.loaded.append(model)
        return 0.0


def test_a_local_model_is_prepared_before_the_first_question_and_says_so(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Without this the quickstart printed nothing for minutes: the first call assembled and loaded the weights."""
    provider = _FakeProvider()
    monkeypatch.setattr(local, "get_local_provider", lambda: provider)
    # The smoke run's roles stay scripted (no weights needed); the job is told one of them is local.
    monkeypatch.setattr(RunJob, "local_models", lambda self: ["local/qwen2.5-coder-1.5b"])
    console, out = _console()
    run_from_config(compose_run(tmp_path), console=console)
    lines = out.getvalue().splitlines()
    assert provider.loaded == ["local/qwen2.5-coder-1.5b"]
    checking = next(i for i, line in enumerate(lines) if "local/qwen2.5-coder-1.5b: checking its weights" in line)
    summary = next(i for i, line in enumerate(lines) if line.startswith("run ") and "answered" in line)
    assert 0 < checking < summary  # after the header, before the questions' summary
    # A finished run needs no model: re-running it prepares nothing.
    provider.loaded.clear()
    run_from_config(compose_run(tmp_path), console=_console()[0])
    assert provider.loaded == []


def test_the_provider_says_each_step_of_a_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    class FakeLlama:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

    class FakeLlamaCpp:
        Llama = FakeLlama

    weights = tmp_path / "model.gguf"
    monkeypatch.setattr(local, "_import_llama_cpp", lambda name: FakeLlamaCpp)
    monkeypatch.setattr(local, "ensure_weights", lambda spec, cache_dir: weights)
    provider = local._provider_class()(prompt_cache_mb=0)
    steps: list[str] = []
    provider.load("local/qwen2.5-coder-1.5b", on_step=steps.append)
    assert [step.split(":", 1)[1].split()[0] for step in steps] == ["checking", "weights", "ready"]
    assert str(weights) in steps[1] and "llama.cpp" in steps[1]
    assert provider.load("local/qwen2.5-coder-1.5b", on_step=steps.append) == 0.0 and len(steps) == 3
