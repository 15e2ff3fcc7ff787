"""Fixtures of the reliability suite, and its tally: ``reliability: N cases tried, M held`` after the run.

A case *holds* when it passes. A case marked ``xfail(strict=True)`` is a known bug, described in its reason; it
is tried but does not hold, and the tally says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.experiment import job as job_module
from om_eval.llm.client import ClientSettings, LLMClient
from tests.reliability.harness import Outcome, assert_consistent, invoke, outcome

HERE = Path(__file__).resolve().parent
_ours: set[str] = set()
_results: dict[str, str] = {}


class QuickRetryClient(LLMClient):
    """The run's client with millisecond backoff: these cases test which errors are retried and how they are
    counted, not how long the client waits (``tests/llm`` covers the backoff itself)."""

    def __init__(self, **kwargs: object) -> None:
        kwargs.setdefault("settings", ClientSettings(backoff_base_s=0.001, backoff_max_s=0.01))
        super().__init__(**kwargs)  # type: ignore[arg-type]  # LLMClient's own keyword arguments


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_module, "LLMClient", QuickRetryClient)


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Outcome]:
    """``reference(*overrides)``: the outcome of a clean run of ``experiment=smoke <overrides>`` (made once)."""
    made: dict[tuple[str, ...], Outcome] = {}

    def get(*overrides: str) -> Outcome:
        if overrides not in made:
            folder = tmp_path_factory.mktemp("reference")
            done = invoke(folder, *overrides)
            assert done.code == 0, done.output[-3000:]
            assert_consistent(folder)
            found = outcome(folder)
            assert {status for status, _, _ in found.values()} == {"done"}
            made[overrides] = found
        return made[overrides]

    return get


# -- the tally ---------------------------------------------------------------------------------------------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _ours.update(item.nodeid for item in items if HERE in Path(str(item.path)).resolve().parents)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid not in _ours:
        return
    if hasattr(report, "wasxfail"):
        _results[report.nodeid] = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        _results[report.nodeid] = "failed"
    elif report.skipped:
        _results[report.nodeid] = "skipped"
    elif report.when == "call" and _results.get(report.nodeid) is None:
        _results[report.nodeid] = "passed"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _results:
        return
    held = sum(state == "passed" for state in _results.values())
    known = sum(state == "xfailed" for state in _results.values())
    line = f"reliability: {len(_results)} cases tried, {held} held"
    if known:
        line += f" ({known} known bugs, marked xfail with their cause)"
    terminalreporter.write_line(line)
