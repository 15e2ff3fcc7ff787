"""Test-wide settings: everything runs offline."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


import pytest

#: Modules whose tests start processes, sweeps, kills or external tools: the ``integration`` lane.
#: ``pytest -m "not integration"`` is the fast lane (about a minute); the README's test command runs both.
INTEGRATION_MODULES = (
    "tests/reliability/",
    "tests/experiment/test_run.py",
    "tests/experiment/test_run_errors.py",
    "tests/experiment/test_ray_launcher.py",
    "tests/experiment/test_baselines.py",
    "tests/experiment/test_locomo_run.py",
    "tests/store/test_processes.py",
    "tests/om/test_mastra_differential.py",
    "tests/om/test_mastra_pair_replay.py",
    "tests/om/test_mastra_engine_differential.py",
    "tests/om/js/test_tokenx_differential.py",
    "tests/om/test_mastra_1_31_differential.py",
    "tests/om/test_groups_differential.py",
    "tests/om/recall/test_differential.py",
    "tests/test_examples.py",
    "tests/cli/test_runs.py",
    "tests/cli/test_run_names.py",
    "tests/experiment/test_pending_accounting_sweep.py",
    "tests/experiment/test_memory_systems.py",
    "tests/memory/test_plugin.py",
    "tests/report/test_systems_sweep.py",
)


#: Integration modules that only compute (Node oracles, the pinned packs, the local model): under ``-n 2 --dist
#: loadgroup`` they run one after another on one worker while the modules that start, time and kill processes run
#: one after another on the other, so no two timing-sensitive tests ever overlap.
COMPUTING_MODULES = (
    "tests/om/",
    "tests/llm/test_local.py",
    "tests/llm/test_local_embedding_model.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        if path.startswith(INTEGRATION_MODULES):
            item.add_marker(pytest.mark.integration)
        item.add_marker(pytest.mark.xdist_group(_group(item, path)))
    if hasattr(config, "workerinput"):  # under pytest-xdist: the two long groups first, one to each worker
        order = {"integration-processes": 0, "integration-computing": 1}
        items.sort(key=lambda item: order.get(_group(item, item.path.relative_to(root).as_posix()), 2))


def _group(item: pytest.Item, path: str) -> str:
    """A fast module goes whole to a worker (as with ``--dist loadfile``); the integration tests form two groups,
    each run serially on its worker."""
    if item.get_closest_marker("integration") is None:
        return path
    return "integration-computing" if path.startswith(COMPUTING_MODULES) else "integration-processes"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the golden files under tests/golden/; the run fails if any of them changed")


def pytest_configure(config: pytest.Config) -> None:
    import tests.golden as golden

    if os.environ.get("OM_EVAL_UPDATE_GOLDEN"):
        raise pytest.UsageError("OM_EVAL_UPDATE_GOLDEN is gone: pass --update-golden instead (the run then fails "
                                "if a golden file changed, so review the diff and run again)")
    golden.UPDATE = bool(config.getoption("--update-golden"))
    if getattr(config.option, "dist", "no") == "load":  # plain -n (the README's python -m pytest -n 2)
        # Tests go to workers by _group, in collection order: each worker starts on one of the two long integration
        # groups and the fast modules fill in (by default groups would be sorted by size).
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False
    if golden.UPDATE and getattr(config.option, "numprocesses", None):
        # Each xdist worker would note its own rewrites, and the run could pass with changed golden files.
        raise pytest.UsageError("--update-golden cannot run under -n (pytest-xdist): run it without -n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests.golden import CHANGED

    if CHANGED and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.golden import CHANGED

    if CHANGED:
        terminalreporter.write_line(
            f"--update-golden: {len(CHANGED)} golden file(s) changed, so this run fails: {', '.join(CHANGED)}; "
            "review the diff, then run again without the option", red=True, bold=True)
