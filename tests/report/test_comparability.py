"""The comparability verdict on constructed runs: one that meets every condition, then one failure at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from om_eval.bench.benchmark import benchmark_named
from om_eval.bench.judging.judge import PINNED_SHA256
from om_eval.bench.pipeline import hypothesis_hash
from om_eval.data.loader import LME_FILES
from om_eval.report.comparability import (
    FULL_SIZE,
    PROTOCOL,
    comparability,
    comparability_markdown,
    run_comparability,
    verdict_lines,
)
from om_eval.store import Catalog, RunStore, store_path
from tests.store.workers import run_info

LME = benchmark_named("longmemeval")
OFFICIAL_MODEL = {"model": "openai/gpt-4o-2024-08-06", "temperature": 0.0, "max_output_tokens": 10}


def official_run(**changes: Any) -> dict[str, Any]:
    identity = {"mode": "official", "template_sha256": PINNED_SHA256, "model": OFFICIAL_MODEL["model"],
                "parse": "official", **changes.pop("identity", {})}
    config = {"models": {"judge": {**OFFICIAL_MODEL, **changes.pop("judge_model", {})}},
              "dataset": {"subset": {"seed": 0, **changes.pop("subset", {})}}, **changes.pop("config", {})}
    return {"run_id": "0123456789abcdef", "label": "official", "config_json": json.dumps(config),
            "judge_identity": json.dumps(identity), "dataset_sha256": LME_FILES["s"].sha256, "dataset_name": "s",
            "prompt_hashes": json.dumps({"om": "9ca17234f1181cd6"}), **changes}


def judged(n: int = FULL_SIZE) -> list[dict[str, Any]]:
    return [{"question_id": f"q{i}", "status": "done", "judge_status": "ok"} for i in range(n)]


def failed_names(run: dict[str, Any], items: list[dict[str, Any]], **counts: int) -> list[str]:
    return [c.name for c in comparability(run, items, LME, **counts).failed]


def test_a_run_that_meets_every_condition_is_comparable() -> None:
    verdict = comparability(official_run(), judged(), LME)
    assert verdict.comparable and len(verdict.conditions) == 8
    assert "comparable with published LongMemEval numbers" in verdict_lines(verdict)[0]


@pytest.mark.parametrize(("run", "items", "counts", "expected"), [
    (official_run(subset={"first": 50}), judged(50), {}, ["whole file"]),
    (official_run(), judged(499), {}, ["whole file"]),                                 # one judge error
    (official_run(identity={"template_sha256": "f" * 64}), judged(), {}, ["official templates"]),
    (official_run(identity={"mode": "house"}), judged(), {}, ["official templates"]),
    (official_run(identity={"parse": "mastra"}), judged(), {}, ["official parse"]),
    (official_run(identity={"no_verdict": "wrong"}), judged(), {}, ["official parse"]),
    (official_run(judge_model={"model": "openai/gpt-4o"}), judged(), {}, ["official judge model"]),
    (official_run(dataset_sha256="0" * 64), judged(), {}, ["pinned data"]),
    (official_run(), judged(), {"reanswered": 3}, ["no re-runs kept for flips"]),
    (official_run(), judged(), {"regraded": 1}, ["no re-runs kept for flips"]),
])
def test_each_failed_condition_is_named(run: dict[str, Any], items: list[dict[str, Any]], counts: dict[str, int],
                                        expected: list[str]) -> None:
    assert failed_names(run, items, **counts) == expected


def test_the_reasons_say_what_was_found() -> None:
    run = official_run(subset={"first": 50}, identity={"parse": "mastra"})
    lines = "\n".join(verdict_lines(comparability(run, judged(50), LME, reanswered=2)))
    assert "not comparable; departs from 3 conditions:" in lines
    assert '50/500 questions judged; subset {"first": 50}' in lines
    assert "Mastra's parse" in lines and "2 questions were answered afresh more than once" in lines


def test_another_benchmark_is_never_comparable() -> None:
    verdict = comparability(official_run(), judged(), benchmark_named("locomo"))
    assert not verdict.comparable and "no official judge protocol" in verdict.conditions[0].detail
    # A LoCoMo report lists no other benchmark's protocol before its own verdict.
    text = comparability_markdown([verdict])
    assert "LongMemEval" not in text and PROTOCOL[0][1] not in text


def test_re_answers_and_verdicts_on_earlier_answers_are_counted_from_the_store(tmp_path: Path) -> None:
    results = tmp_path
    with RunStore(store_path(results, "r1")) as store:
        store.register_run(run_info("r1"))
        answer = {"status": "done", "question_type": "multi-session", "label": True, "judge_status": "ok"}
        actor = {"stage": "actor", "model": "m", "cached": False, "latency_s": 0.1, "retries": 0}
        judge = {"judge_identity": {"mode": "house", "model": "m"}, "judge_mode": "house", "judge_model": "m",
                 "label": True, "status": "ok", "reply": "yes"}
        # q1: answered, graded, answered again (a fresh call) and graded again: one re-run.
        store.record_question("r1", {**answer, "question_id": "q1", "hypothesis": "first"}, calls=[actor],
                              judgments=[{**judge, "hypothesis_hash": hypothesis_hash("first")}])
        store.record_question("r1", {**answer, "question_id": "q1", "hypothesis": "second"}, calls=[actor])
        store.record_judgments("r1", [("q1", {**judge, "judge_identity": {"mode": "lenient", "model": "m"},
                                              "hypothesis_hash": hypothesis_hash("first")})])
        # q2: one fresh call, a cached repeat of it and an actor error: not a re-run.
        store.record_question("r1", {**answer, "question_id": "q2", "hypothesis": "x"},
                              calls=[actor, {**actor, "cached": True}, {**actor, "error": "timeout"}])
    with Catalog(results) as catalog:
        run = catalog.runs()[0]
        verdict = run_comparability(catalog, run, LME)
    (rerun,) = [c for c in verdict.conditions if c.name == "no re-runs kept for flips"]
    assert not rerun.holds
    assert rerun.detail == ("1 question has a verdict on an earlier answer; 1 question was answered afresh "
                            "more than once")


def test_counts_agree_with_their_nouns() -> None:
    one = comparability(official_run(), judged(), LME, regraded=1, reanswered=1)
    two = comparability(official_run(), judged(), LME, regraded=2, reanswered=3)
    assert "1 question has a verdict" in one.failed[0].detail and "1 question was answered" in one.failed[0].detail
    assert "2 questions have a verdict" in two.failed[0].detail and "3 questions were answered" in two.failed[0].detail
    assert "departs from 1 condition:" in verdict_lines(one)[0]


@pytest.mark.parametrize(("judge_model", "expected"), [
    ({"max_output_tokens": None}, "temperature 0, no output cap"),
    ({"temperature": None, "max_output_tokens": 1}, "temperature not set, at most 1 output token"),
    ({}, "temperature 0, at most 10 output tokens"),
])
def test_the_judge_model_is_described_in_words(judge_model: dict[str, Any], expected: str) -> None:
    (condition,) = [c for c in comparability(official_run(judge_model=judge_model), judged(), LME).conditions
                    if c.name == "official judge model"]
    assert condition.detail == f"openai/gpt-4o-2024-08-06, {expected}"
    assert "None" not in condition.detail


EXACT_PROMPTS = {"om": "mastra@1.3.0/current#53ce89e3b8090236", "package": "@mastra/memory", "version": "1.3.0",
                 "variant": "current", "integrity": "sha512-RS4CTdBa+ekS4cELtB5mGvvv+6B6rWjJWUuJkdFcl"}


def test_a_run_set_beside_mastras_numbers_must_read_mastras_own_prompts() -> None:
    paraphrase = official_run(config={"experiment": "mastra_gpt4o"})
    assert failed_names(paraphrase, judged()) == ["Mastra's own prompts"]
    (line,) = verdict_lines(comparability(paraphrase, judged(), LME))[1:]
    assert "prompts are om-eval's paraphrase, not Mastra's text" in line
    exact = official_run(config={"experiment": "mastra_gpt4o_strict"}, prompt_hashes=json.dumps(EXACT_PROMPTS))
    verdict = comparability(exact, judged(), LME)
    assert verdict.comparable and "@mastra/memory 1.3.0 (current), integrity sha512-RS4CTdBa+e" in \
        verdict.conditions[-1].detail
    # A run not set beside Mastra's numbers, or a baseline reader of a mastra* preset, is not asked.
    assert "Mastra's own prompts" not in [c.name for c in comparability(official_run(), judged(), LME).conditions]
    reader = official_run(config={"experiment": "mastra_gpt4o"}, prompt_hashes=json.dumps({"baseline": "x"}))
    assert comparability(reader, judged(), LME).comparable


def test_the_checklist_is_printed_once_and_each_run_names_only_its_departures() -> None:
    mastra = official_run(config={"experiment": "mastra_gpt4o_strict"}, prompt_hashes=json.dumps(EXACT_PROMPTS))
    assert [name for name, _ in PROTOCOL] == [c.name for c in comparability(mastra, judged(), LME).conditions]
    assert [name for name, _ in PROTOCOL[:-1]] == [c.name for c in comparability(official_run(), judged(),
                                                                                 LME).conditions]
    # Runs 0 and 2 depart alike and are listed as one; run 1 judged one question fewer, so its finding differs.
    verdicts = [comparability(official_run(run_id=f"{i}" * 16, label=f"run{i}", identity={"mode": "house"}),
                              judged(7 - (i == 1)), LME) for i in range(3)]
    verdicts.append(comparability(official_run(run_id="f" * 16, label="best"), judged(), LME))
    text = comparability_markdown(verdicts)
    for name, asks in PROTOCOL:
        assert text.count(f"**{name}**: {asks}") == 1, name
        assert text.count(name) == 1 + 2 * (name in ("official templates", "whole file")), name
    assert "- **run0** (00000000), **run2** (22222222): not comparable; each departs from 2 conditions:" in text
    assert "- **run1** (11111111): not comparable; departs from 2 conditions:" in text
    assert "6/500 questions judged" in text and "7/500 questions judged" in text
    assert "- **best** (ffffffff): comparable with published LongMemEval numbers" in text
    assert "✓" not in text
