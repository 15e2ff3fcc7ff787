"""Test-wide settings: everything runs offline."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


import pytest  # noqa: E402

#: Modules whose tests start processes, sweeps, kills or external tools: the slow lane. ``pytest -m "not slow"``
#: is the fast lane (about a minute); the README's test command runs both.
SLOW_MODULES = (
    "tests/reliability/",
    "tests/experiment/test_run.py",
    "tests/experiment/test_run_errors.py",
    "tests/experiment/test_ray_launcher.py",
    "tests/experiment/test_baselines.py",
    "tests/store/test_processes.py",
    "tests/om/test_mastra_differential.py",
    "tests/om/test_mastra_pair_replay.py",
    "tests/om/test_mastra_engine_differential.py",
    "tests/om/test_tokenx_differential.py",
    "tests/cli/test_runs.py",
    "tests/experiment/test_pending_accounting_sweep.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        if path.startswith(SLOW_MODULES):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.golden import REWRITTEN

    if REWRITTEN:
        terminalreporter.write_line(
            f"OM_EVAL_UPDATE_GOLDEN=1: {len(REWRITTEN)} golden file(s) rewritten, none compared; unset it to test",
            red=True, bold=True)
