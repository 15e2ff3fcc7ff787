"""Failed questions are states, kept and retried: resume after errors, judge errors, a crash mid-question."""

from __future__ import annotations

from pathlib import Path

import pytest

from om_eval.bench import seam as seam_module
from om_eval.experiment.app import run_from_config
from om_eval.llm.providers import register_scripted
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel
from tests.runs import compose_run


def composed(results: Path, *overrides: str):
    return compose_run(results, *overrides, "run.concurrency=1")


def statuses(results: Path) -> dict[str, tuple[str, str | None]]:
    with Catalog(results) as catalog:
        return {i["question_id"]: (i["status"], i["judge_status"]) for i in catalog.items()}


def test_resuming_a_run_with_failed_questions_retries_them(tmp_path: Path) -> None:
    # The actor fails on the first question; the resumed run must neither crash on the question's earlier
    # call rows (their numbering restarted at 0 before) nor skip the question.
    name = "resume-actor"
    register_scripted(name, ScriptedModel(faults={"actor": ["bad_request"]}))
    run_from_config(composed(tmp_path, f"models.actor.model=scripted/{name}"))
    first = statuses(tmp_path)
    assert sorted(s for s, _ in first.values()).count("error") == 1
    with Catalog(tmp_path) as catalog:
        calls_before = catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"]
    register_scripted(name, ScriptedModel())
    run_from_config(composed(tmp_path, f"models.actor.model=scripted/{name}"))
    assert all(s == "done" for s, _ in statuses(tmp_path).values())
    with Catalog(tmp_path) as catalog:
        failed = next(q for q, (s, _) in first.items() if s == "error")
        seqs = [r["seq"] for r in catalog.query("SELECT seq FROM llm_calls WHERE question_id = ? ORDER BY seq",
                                                [failed])]
        calls_after = catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"]
    assert seqs == list(range(len(seqs))) and calls_after > calls_before  # both attempts kept, numbered in turn


def test_a_judge_without_verdict_is_an_error_retried_on_resume(tmp_path: Path) -> None:
    name = "judge-outage"
    register_scripted(name, ScriptedModel(faults={"judge": ["bad_request"]}))
    run_from_config(composed(tmp_path, f"models.judge.model=scripted/{name}"))
    first = statuses(tmp_path)
    assert sorted(first.values()).count(("error", "error")) == 1  # not "done" with a missing label
    register_scripted(name, ScriptedModel())
    run_from_config(composed(tmp_path, f"models.judge.model=scripted/{name}"))
    assert set(statuses(tmp_path).values()) == {("done", "ok")}


class Crash(KeyboardInterrupt):
    """Stands in for a kill: the run stops there (an interrupt, not a fault of the question, which a system's own
    BaseException would be)."""


def test_a_crash_after_the_memory_is_built_loses_no_om_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = seam_module.system_answer_and_judge
    crashed: list[str] = []

    async def crash_once(question, system, build, **kwargs):
        if not crashed:
            crashed.append(question.question_id)
            raise Crash
        return await real(question, system, build, **kwargs)

    monkeypatch.setattr(seam_module, "system_answer_and_judge", crash_once)
    with pytest.raises(SystemExit) as stopped:
        run_from_config(composed(tmp_path))
    assert stopped.value.code == 130 and crashed
    run_from_config(composed(tmp_path))
    with Catalog(tmp_path) as catalog:
        events = catalog.query("SELECT count(*) AS n FROM om_events WHERE question_id = ?", crashed)[0]["n"]
        item = catalog.query("SELECT reused_memory FROM items WHERE question_id = ?", crashed)[0]
    assert events > 0 and item["reused_memory"] is False  # the memory was not committed without its events


def test_a_judge_that_cannot_be_built_leaves_no_store_file(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="does not exist"):
        run_from_config(composed(tmp_path, "judge=official", f"judge.source={tmp_path / 'missing'}"))
    assert not list(tmp_path.glob("store/*.duckdb"))


def test_a_failed_reflection_is_an_error_that_reaches_the_summary_and_the_exit_code(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from om_eval.experiment import app

    name = "junk-reflector"
    register_scripted(name, ScriptedModel(faults={"reflector": ["prose"] * 40}))
    console = Console(file=io.StringIO(), width=300)
    app._FAILED_JOBS.clear()
    summary = run_from_config(composed(tmp_path, f"models.reflector.model=scripted/{name}",
                                       "om.observation.message_tokens=150", "om.reflection.observation_tokens=200"),
                              console=console)
    out = console.file.getvalue()
    assert "ReflectionFailed: reflection failed" in out and summary["run_id"] in app._FAILED_JOBS
    with Catalog(tmp_path) as catalog:
        failed = catalog.query("SELECT count(*) AS n FROM items WHERE status = 'error' AND judge_status = 'not_run'")
        kept = catalog.query("SELECT count(*) AS n FROM memory_snapshots")[0]["n"]
    assert failed[0]["n"] >= 1 and kept == 7 - failed[0]["n"]  # no degraded memory is kept for reuse
    app._FAILED_JOBS.clear()


def test_a_buffered_replay_records_buffering_and_activation(tmp_path: Path) -> None:
    run_from_config(composed(tmp_path, "om.replay.buffering=true", "om.replay.scope=thread",
                             "om.observation.message_tokens=120"))
    with Catalog(tmp_path) as catalog:
        kinds = {r["kind"] for r in catalog.query("SELECT DISTINCT kind FROM om_events")}
        statuses = {r["status"] for r in catalog.items()}
    assert "observation_buffered" in kinds and statuses == {"done"}
