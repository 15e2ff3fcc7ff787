"""Test-wide settings: everything runs offline."""

from __future__ import annotations

import os
import shlex
from typing import Any

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
    "tests/llm/test_llama_server.py",
    "tests/llm/test_local_embedding_model.py",
    "tests/experiment/test_mastra_exact_run.py",
    "tests/experiment/test_retrieval_run.py",
    "tests/om/test_mastra_exact_differential.py",
    "tests/om/exact/test_no_mastra_text.py",
    "tests/om/exact/test_differential.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        if path.startswith(INTEGRATION_MODULES):
            item.add_marker(pytest.mark.integration)
    if hasattr(config, "workerinput"):  # under pytest-xdist: the two long groups first, one to each worker
        order = {PROCESSES: 0, COMPUTING: 1}
        items.sort(key=lambda item: order.get(scope_of(item.path.relative_to(root).as_posix()), 2))


#: The two groups of integration modules under ``python -m pytest -n 2``: each runs one test at a time on its own
#: worker, so no two tests that start, time and kill processes overlap, while the Node oracles run beside them.
PROCESSES, COMPUTING = "integration-processes", "integration-computing"


def scope_of(path: str) -> str:
    """Where a test module goes under ``-n``: a fast module whole to one worker (as ``--dist loadfile``), an
    integration module into one of the two serial groups (the Node and pack differentials under ``tests/om`` only
    compute)."""
    if path.startswith(INTEGRATION_MODULES):
        return COMPUTING if path.startswith("tests/om/") else PROCESSES
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Plain ``-n`` (the README's ``python -m pytest -n 2``) schedules by :func:`scope_of`, in collection order (each
    worker starts on one of the two long groups); an explicit ``--dist`` (on the command line, in ``PYTEST_ADDOPTS``
    or the ini file's ``addopts``) keeps pytest-xdist's own."""
    given = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
             *config.getini("addopts")]
    if config.getvalue("dist") != "load" or any(word.startswith("--dist") for word in given):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False
    return ByGroup(config, log)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the golden files under tests/golden/; the run fails if any of them changed")


def pytest_configure(config: pytest.Config) -> None:
    import tests.golden as golden

    if os.environ.get("OM_EVAL_UPDATE_GOLDEN"):
        raise pytest.UsageError("OM_EVAL_UPDATE_GOLDEN is gone: pass --update-golden instead (the run then fails "
                                "if a golden file changed, so review the diff and run again)")
    golden.UPDATE = bool(config.getoption("--update-golden"))
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
