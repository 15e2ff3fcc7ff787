"""Shared fixtures for the OM tests: the tally of cases compared with Mastra, printed at the end of the run."""

from __future__ import annotations

import pytest

_MASTRA_COUNTS = pytest.StashKey[dict[str, int]]()


@pytest.fixture(scope="session")
def mastra_case_counts(request: pytest.FixtureRequest) -> dict[str, tuple[float, float]]:
    """Per reference function, (cases compared with @mastra/memory 1.10.0, cases identical); filled by
    ``test_mastra_differential.py``, which also leaves ``"_timings"``: (install seconds, oracle seconds)."""
    return request.config.stash.setdefault(_MASTRA_COUNTS, {})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    counts = dict(config.stash.get(_MASTRA_COUNTS, {}))
    timings = counts.pop("_timings", None)
    if not counts:
        return
    terminalreporter.write_sep("-", "compared with @mastra/memory 1.10.0")
    for name, (cases, identical) in counts.items():
        terminalreporter.write_line(f"{name}: {cases} cases, {identical} identical")
    total = sum(cases for cases, _ in counts.values())
    same = sum(identical for _, identical in counts.values())
    terminalreporter.write_line(f"total: {total} cases, {same} identical")
    if timings is not None:
        terminalreporter.write_line(f"npm install or cache check: {timings[0]} s, Node oracle run: {timings[1]} s")
