"""om-eval show and om-eval rejudge on a smoke run: the whole story of one question, and a second judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om_eval.bench.pipeline import pack_messages, unpack_messages
from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.experiment.rejudge import RejudgeError, judge_config
from om_eval.llm.providers import register_scripted
from om_eval.report.agreement import run_agreement
from om_eval.report.detail import find_question, find_run, question_detail, run_details
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel
from tests.runs import compose_run

KU_QUESTION = "5ed4ff79"  # the mini set's knowledge-update question: 30:40, later 30:28


class StrictJudge(ScriptedModel):
    """A second judge that grades every answer wrong."""

    def _answer(self, messages, stage, fault):
        return "no" if stage == "judge" else super()._answer(messages, stage, fault)


def composed(results: Path, *overrides: str):
    return compose_run(results, *overrides)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    results = tmp_path_factory.mktemp("drill")
    summary = run_from_config(composed(results))
    return results, summary["run_id"]


def test_the_actor_prompt_round_trips_compressed() -> None:
    messages = [{"role": "system", "content": "<observations>\n* 🔴 (09:00) a & b\n" * 200}]
    blob = pack_messages(messages)
    assert unpack_messages(blob) == messages and len(blob) < len(messages[0]["content"]) / 10
    assert unpack_messages(None) is None


def test_detail_holds_the_whole_story_of_a_question(smoke: tuple[Path, str]) -> None:
    results, run_id = smoke
    with Catalog(results) as catalog:
        detail = question_detail(catalog, run_id, KU_QUESTION)
    item = detail["item"]
    assert item["question"].startswith("What is my current personal best") and item["gold_answer"] == "30:28"
    assert item["question_date"] and item["hypothesis"] and item["judge_reply"]
    statuses = {(t["session_index"], t["status"]) for t in detail["evidence"]}
    assert statuses == {(0, "in_memory"), (2, "in_memory")}
    assert any(t["answer_in_lines"] for t in detail["evidence"])  # the newer evidence line carries 30:28
    generations = detail["memory"][0]["generations"]
    assert "30:28" in generations[-1]["observations"]
    messages = detail["actor_messages"]
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    assert "personal best" in messages[-1]["content"] and any("30:28" in m["content"] for m in messages)
    assert [j["current"] for j in detail["judgments"]] == [True]
    assert detail["events"] and all(e["kind"].startswith("observation") for e in detail["events"])


def test_a_whole_run_in_one_batch_matches_question_by_question(smoke: tuple[Path, str]) -> None:
    results, run_id = smoke
    with Catalog(results) as catalog:
        batched = run_details(catalog, run_id)
        one_by_one = {qid: question_detail(catalog, run_id, qid) for qid in batched}
    assert len(batched) == 7 and batched == one_by_one
    assert sum(len(d["events"]) for d in batched.values()) > 0  # the comparison covers events and memories
    assert any(d["memory"] for d in batched.values())


def test_show_prints_question_evidence_memory_prompt_and_verdict(
        smoke: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    results, run_id = smoke
    assert main(["show", run_id[:6], KU_QUESTION[:4], "--results", str(results)]) == 0
    out = capsys.readouterr().out
    for part in ("Gold answer: 30:28", "Where the evidence went", "captured", "Observations by generation",
                 "What the actor saw", "Verdict", "Judge reply"):
        assert part in out, part
    assert main(["show", "smoke", KU_QUESTION, "--results", str(results), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["item"]["gold_answer"] == "30:28"


def test_show_names_what_it_could_not_find(smoke: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    results, run_id = smoke
    assert main(["show", "nope", KU_QUESTION, "--results", str(results)]) == 2
    assert "no run matches 'nope'" in capsys.readouterr().err
    assert main(["show", run_id, "zz", "--results", str(results)]) == 2
    assert "has no question 'zz'" in capsys.readouterr().err


def test_find_run_and_question_refuse_ambiguity() -> None:
    runs = [{"run_id": "abc1", "label": "x"}, {"run_id": "abc2", "label": "y"}]
    with pytest.raises(LookupError, match="2 runs match"):
        find_run(runs, "abc")
    assert find_run(runs, "y")["run_id"] == "abc2"
    with pytest.raises(LookupError, match="2 questions start with"):
        find_question(["q1a", "q1b"], "q1")


def test_find_run_takes_an_experiment_that_names_one_run_after_ids_and_labels() -> None:
    runs = [{"run_id": "abc1", "label": "smoke", "experiment": "smoke"},
            {"run_id": "abc2", "label": "prompt=legacy", "experiment": "smoke"},
            {"run_id": "def3", "label": "prompt=current", "experiment": "quickstart"},
            {"run_id": "def4", "label": "quickstart", "experiment": "other"}]
    assert find_run(runs, "smoke")["run_id"] == "abc1"  # a label first, though two runs are experiment=smoke
    assert find_run(runs, "quickstart")["run_id"] == "def4"  # likewise
    assert find_run(runs, "other")["run_id"] == "def4"  # an experiment with one run
    assert find_run(runs, "abc2")["label"] == "prompt=legacy"
    relabelled = [{**r, "label": f"x{i}"} for i, r in enumerate(runs)]
    with pytest.raises(LookupError, match=r"2 runs match 'smoke' as experiment: abc1 \(x0\), abc2 \(x1\); name "
                                          "one by its id prefix"):
        find_run(relabelled, "smoke")


def test_rejudge_overrides_may_change_only_the_judge() -> None:
    stored = {"judge": {"mode": "house", "parse": "official"}, "models": {"judge": {"model": "scripted/om-eval"}}}
    assert judge_config(stored, ["judge.parse=mastra"])["judge"]["parse"] == "mastra"
    with pytest.raises(RejudgeError, match="only changes the judge"):
        judge_config(stored, ["prompt=legacy"])
    with pytest.raises(RejudgeError, match="name the judge"):
        judge_config(stored, [])
    with pytest.raises(RejudgeError, match="judge=nowhere: .*judge/nowhere"):  # exit 2, not Hydra's traceback
        judge_config(stored, ["judge=nowhere"])


def test_rejudge_grades_stored_answers_and_the_report_shows_agreement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path
    run_id = run_from_config(composed(results))["run_id"]
    with Catalog(results) as catalog:
        calls_before = catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"]
    contrary = register_scripted("rejudge-strict", StrictJudge())
    code = main(["rejudge", run_id[:8], f"models.judge.model={contrary}", "--results", str(results)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "7 answers graded" in out and "kappa" in out
    with Catalog(results) as catalog:
        judgments = catalog.query("SELECT judge_model, count(*) AS n FROM judgments GROUP BY judge_model "
                                  "ORDER BY judge_model")
        new_calls = catalog.query("SELECT stage, count(*) AS n FROM llm_calls GROUP BY stage")
        pairs = run_agreement(catalog, run_id)
    assert judgments == [{"judge_model": "scripted/om-eval", "n": 7}, {"judge_model": contrary, "n": 7}]
    assert sum(c["n"] for c in new_calls) == calls_before + 7  # the judge calls only: nothing replayed
    assert len(pairs) == 1 and pairs[0].n == 7 and pairs[0].first == "house:scripted/om-eval"
    # The strict judge says "no" to all 7; the house judge said "yes" to 3 of them (task-averaged 0.4286 micro).
    assert pairs[0].accuracy_second == 0.0 and pairs[0].agreement == pytest.approx(4 / 7)
    assert pairs[0].kappa == pytest.approx(0.0)  # a judge that never says yes agrees only by chance
    assert main(["report", "--results", str(results), "--markdown", str(results / "r.md")]) == 0
    out = capsys.readouterr().out
    assert "Judge agreement" in out and "kappa 0.000" in out and "n=7" in out
    assert "## Judge agreement" in (results / "r.md").read_text()
