"""om-eval export: the archive holds what re-scoring needs, and re-scores to the run's own numbers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from om_eval.bench.metrics import longmemeval_metrics, read_eval_results_jsonl
from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.report.export import archive_bytes, export_run, rescore_archive
from tests.runs import compose_run


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    results = tmp_path_factory.mktemp("export")
    run_id = run_from_config(compose_run(results))["run_id"]
    assert main(["rejudge", run_id[:8], "judge.parse=mastra", "--probes", "--results", str(results)]) == 0
    assert main(["export", run_id[:8], "--results", str(results)]) == 0
    return results, run_id, results / "exports" / f"{run_id}.zip"


def test_the_archive_holds_every_part_with_its_hash(exported: tuple[Path, str, Path]) -> None:
    _, _, path = exported
    members = archive_bytes(path)
    assert {"README.md", "run.json", "state.json", "config.json", "hashes.json", "answers.jsonl", "verdicts.jsonl",
            "probes.jsonl", "calls.jsonl", "metrics.json", "hypotheses.jsonl",
            "hypotheses.jsonl.eval-results-om-eval"} == set(members)
    hashes = json.loads(members["hashes.json"])
    assert set(hashes["files"]) == set(members) - {"hashes.json"}
    for name, digest in hashes["files"].items():
        assert hashlib.sha256(members[name]).hexdigest() == digest, name
    assert hashes["run_id"] == json.loads(members["run.json"])["run_id"]
    assert json.loads(members["state.json"])["state"] == "finished"
    assert b"Partial" not in members["README.md"]
    assert hashes["dataset_sha256"] and hashes["judge_templates_sha256"] and hashes["prompts"]["om"]
    assert json.loads(members["config.json"])["experiment"] == "smoke"


def test_the_archive_re_scores_to_the_runs_own_metrics(exported: tuple[Path, str, Path]) -> None:
    results, run_id, path = exported
    written = json.loads((results / "runs" / run_id / "metrics.json").read_text())
    assert rescore_archive(path) == written
    assert json.loads(archive_bytes(path)["metrics.json"])["metrics"] == written


def test_the_official_layout_in_the_archive_re_scores_the_same_way(exported: tuple[Path, str, Path],
                                                                   tmp_path: Path) -> None:
    results, run_id, path = exported
    members = archive_bytes(path)
    answers = [json.loads(line) for line in members["answers.jsonl"].decode().splitlines()]
    types = {a["question_id"]: a["question_type"] for a in answers}
    eval_file = tmp_path / "eval-results"
    eval_file.write_bytes(members["hypotheses.jsonl.eval-results-om-eval"])
    official = longmemeval_metrics(read_eval_results_jsonl(eval_file, types))
    written = json.loads((results / "runs" / run_id / "metrics.json").read_text())
    assert official["overall"] == written["overall"] and official["task_averaged"] == written["task_averaged"]


def test_answers_carry_context_tokens_and_the_cost_and_latency_of_build_and_answer(
        exported: tuple[Path, str, Path]) -> None:
    members = archive_bytes(exported[2])
    answers = [json.loads(line) for line in members["answers.jsonl"].decode().splitlines()]
    calls = [json.loads(line) for line in members["calls.jsonl"].decode().splitlines()]
    assert len(answers) == 7 and all(a["actor_prompt_tokens"] > 0 for a in answers)
    for answer in answers:
        own = [c for c in calls if c["question_id"] == answer["question_id"]]
        build = sum(c["latency_s"] for c in own if c["stage"] in ("observer", "reflector"))
        assert answer["build_latency_s"] == pytest.approx(build)
        assert answer["answer_latency_s"] == pytest.approx(sum(c["latency_s"] for c in own if c["stage"] == "actor"))
        assert answer["build_cost_usd"] == 0.0  # the scripted model is free, and its price is known
    verdicts = [json.loads(line) for line in members["verdicts.jsonl"].decode().splitlines()]
    assert {json.loads(v["judge_identity"])["parse"] for v in verdicts} == {"official", "mastra"}
    assert len(members["probes.jsonl"].decode().splitlines()) >= 2 * 7


def test_the_same_store_gives_the_same_archive(exported: tuple[Path, str, Path], tmp_path: Path) -> None:
    results, run_id, path = exported
    again = export_run(results, run_id, tmp_path / "again.zip")
    assert again.read_bytes() == path.read_bytes()


def test_an_unknown_run_is_named(exported: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "nope", "--results", str(exported[0])]) == 2
    assert "no run matches 'nope'" in capsys.readouterr().err
