"""The mini synthetic set end to end with the scripted model: replay, answer, judge, metrics, exports."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from om_eval.bench.judging.judge import Judge
from om_eval.bench.metrics import (
    longmemeval_metrics,
    read_eval_results_jsonl,
    write_eval_results_jsonl,
    write_hypotheses_jsonl,
)
from om_eval.bench.pipeline import QuestionRun
from om_eval.bench.seam import SystemBuild, system_answer_and_judge
from om_eval.data import generate, load_dataset, mini_fixture_path
from om_eval.data.loader import dataset_from_records
from om_eval.data.records import Question
from om_eval.llm import LLMClient
from om_eval.llm.cache import ResponseCache
from om_eval.memory.identity import haystack_hash
from om_eval.memory.services import HarnessServices
from om_eval.memory.view import history_view
from om_eval.om import ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.systems.om.system import ObservationalMemorySystem
from om_eval.systems.om.trace import trace_evidence

SCRIPTED = ModelSettings(model="scripted/om-eval", temperature=0, max_output_tokens=None)

# What the scripted model does on the mini set, worked out by hand from the fixture:
# - its observer keeps each user sentence (and the first words of each assistant reply) as dated lines;
# - its actor answers with the memory line sharing the most words with the question (the latest on ties),
#   or "I don't know" when no line shares enough; it cannot count, add dates or personalise;
# - its judge says yes when the reference appears in the response, or, for abstention, when it declines.
EXPECTED_LABELS = {
    "8184464e": True,  # SSU: "I graduated with a degree in Marine Biology ..." is kept verbatim
    "eaa3ddbe": False,  # SSA: the restaurant is deep in an assistant list the observer shortens away
    "2ddc0ec2": False,  # SSP: a rubric answer needs personalisation the actor cannot do
    "b47cffd2": False,  # MS: the answer is the int 4, a count over sessions
    "5ed4ff79": True,  # KU: the newer personal best (30:28) is the later of two matching lines
    "9ce80b45": False,  # TR: "4 days" needs date arithmetic
    "gpt4_9b807f87_abs": True,  # abstention: nothing matches, the actor says it does not know
}


def config() -> OMConfig:
    return OMConfig(
        scope="resource",
        observation=ObservationConfig(message_tokens=100, model=SCRIPTED),
        reflection=ReflectionConfig(observation_tokens=5000, model=SCRIPTED),
    )


async def answer_all(questions: list[Question], om_config: OMConfig, client: LLMClient,
                     snapshots: dict[str, object] | None = None) -> list[QuestionRun]:
    """Each question through OM as a memory system, outside a run: its memory ingested (or restored from
    ``snapshots``, and kept there when built), then answered and graded by the seam."""
    system = ObservationalMemorySystem({"config": om_config})
    runs = []
    for question in questions:
        services = HarnessServices(client, None, system.counter, system=system.name, declares_observer=False)
        history = history_view(question)
        key = f"{system.pinned_identity().memory_key}-{haystack_hash(question)}"
        kept = (snapshots or {}).get(key)
        memory = await (system.restore(kept, services) if kept is not None else system.ingest(history, services))
        if snapshots is not None and kept is None:
            snapshots[key] = system.snapshot(memory)
        build = SystemBuild(memory, key, reused=kept is not None, digest=system.memory_digest(memory))
        runs.append(await system_answer_and_judge(
            question, system, build, services=HarnessServices(client, None, system.counter, answering=True),
            client=client, actor=SCRIPTED, judge=Judge.house(model=SCRIPTED), counter=system.counter,
            history=history))
    return runs


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("mini")
    dataset = load_dataset(path=mini_fixture_path())
    client = LLMClient(cache=ResponseCache(folder / "cache"))
    snapshots: dict[str, object] = {}
    runs = asyncio.run(answer_all(dataset.questions, config(), client, snapshots))
    return {"dataset": dataset, "runs": runs, "client": client, "snapshots": snapshots, "folder": folder}


def test_labels_match_the_hand_worked_expectations(mini_run: dict) -> None:
    runs = {r.question_id: r for r in mini_run["runs"]}
    assert {qid: r.label for qid, r in runs.items()} == EXPECTED_LABELS
    assert all(r.judge_status == "ok" for r in runs.values())
    dataset = mini_run["dataset"].by_id()
    assert dataset["b47cffd2"].answer == 4 and dataset["b47cffd2"].answer_text == "4"  # the int answer
    assert dataset["gpt4_9b807f87_abs"].is_abstention


def test_metrics_by_hand(mini_run: dict) -> None:
    metrics = longmemeval_metrics([r.row() for r in mini_run["runs"]])
    per_type = {t: (v["accuracy"], v["n"]) for t, v in metrics["per_type"].items()}
    assert per_type == {
        "single-session-user": (1.0, 1),
        "single-session-assistant": (0.0, 1),
        "single-session-preference": (0.0, 1),
        "multi-session": (0.5, 2),  # the abstention question counts in its base type
        "knowledge-update": (1.0, 1),
        "temporal-reasoning": (0.0, 1),
    }
    assert metrics["overall"] == pytest.approx(3 / 7)
    assert metrics["task_averaged"] == pytest.approx((1 + 0 + 0 + 0.5 + 1 + 0) / 6)
    assert metrics["abstention"] == {"accuracy": 1.0, "n": 1}


def test_every_question_reports_its_memory_work(mini_run: dict) -> None:
    for run in mini_run["runs"]:
        assert run.observer_calls >= 1 and run.observation_tokens > 0 and run.history_tokens > 0
        assert run.actor_prompt_tokens and run.compression_ratio == pytest.approx(
            run.history_tokens / run.observation_tokens
        )


def test_a_second_pass_reuses_memory_and_calls_no_model(mini_run: dict) -> None:
    client = LLMClient(cache=ResponseCache(mini_run["folder"] / "cache"))
    runs = asyncio.run(answer_all(mini_run["dataset"].questions, config(), client, mini_run["snapshots"]))
    assert all(r.reused_memory for r in runs)
    totals = client.ledger.totals()
    assert totals.calls == totals.cached == 2 * len(runs)  # actor and judge answered from the cache
    assert [r.label for r in runs] == [r.label for r in mini_run["runs"]]


def test_exports_are_readable_like_the_official_files(mini_run: dict, tmp_path: Path) -> None:
    rows = [r.row() for r in mini_run["runs"]]
    write_hypotheses_jsonl(tmp_path / "hyp.jsonl", rows)
    write_eval_results_jsonl(tmp_path / "hyp.jsonl.eval-results-gpt-4o", rows)
    first = json.loads((tmp_path / "hyp.jsonl").read_text().splitlines()[0])
    assert set(first) == {"question_id", "hypothesis"}
    judged = read_eval_results_jsonl(tmp_path / "hyp.jsonl.eval-results-gpt-4o")
    assert {r["question_id"]: r["label"] for r in judged} == EXPECTED_LABELS


def test_the_assistant_side_miss_is_traced_to_the_observer(mini_run: dict) -> None:
    question = mini_run["dataset"].by_id()["eaa3ddbe"]
    system = ObservationalMemorySystem({"config": config()})
    key = f"{system.pinned_identity().memory_key}-{haystack_hash(question)}"
    build = asyncio.run(system.restore(mini_run["snapshots"][key], HarnessServices(LLMClient(), None, system.counter)))
    (trace,) = [t for t in trace_evidence(question, build.memory) if t.role == "assistant"]
    # The reply was observed, but only its opening: the line is in memory, the answer is not.
    assert trace.status == "in_memory" and trace.lines and not trace.answer_in_lines


def test_s_sized_question_reports_memory_statistics() -> None:
    record = generate(size="s", questions_per_type=1, abstention=0, seed=3)[0]
    question = dataset_from_records([record], name="synthetic-s").questions[0]
    om_config = OMConfig(  # the 1.10 defaults: observe at 30k, reflect above 40k
        scope="resource",
        observation=ObservationConfig(model=SCRIPTED),
        reflection=ReflectionConfig(model=SCRIPTED),
    )
    client = LLMClient()
    run = asyncio.run(answer_all([question], om_config, client))[0]
    assert 100_000 < run.history_tokens < 135_000
    assert run.observer_calls >= 3 and run.observation_tokens > 0 and run.compression_ratio > 1
    assert run.actor_prompt_tokens and run.actor_prompt_tokens > run.observation_tokens / 4
    assert client.ledger.by_stage()["observer"].calls == run.observer_calls
