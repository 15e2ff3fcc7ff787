"""Memory systems side by side, offline: ``om-eval run -m experiment=smoke memory=om,simple_om,rag_mastra,rag_lme,
full_context,oracle`` lands six runs, each answered by its system and measured the same way; a LoCoMo-shaped file
runs through the seam with one memory per conversation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from om_eval.bench.turn_costs import TurnTable
from om_eval.store import Catalog
from tests.locomo_shaped import write_locomo_shaped

SYSTEMS = ("om", "simple_om", "rag_mastra", "rag_lme", "full_context", "oracle")
#: Run ids pinned before memory= existed (tests/experiment/test_identity_pins.py pins smoke's too).
SMOKE_ID = "0da38ec8a1095857"


def om_eval_run(results: Path, *overrides: str) -> None:
    command = [sys.executable, "-m", "om_eval.cli", "run", *overrides, f"run.results_dir={results}",
               f"run.cache_dir={results / 'cache'}", "run.progress=false"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    results = tmp_path_factory.mktemp("systems")
    om_eval_run(results, "-m", "experiment=smoke", f"memory={','.join(SYSTEMS)}")
    with Catalog(results) as catalog:
        runs = {run["memory_system"]: run for run in catalog.runs()}
    for run in runs.values():
        with duckdb.connect(str(results / "store" / f"{run['run_id']}.duckdb"), read_only=True) as con:
            run["items"] = [dict(zip([d[0] for d in con.description], row)) for row in
                            con.execute("SELECT * FROM items").fetchall()]
            run["stages"] = dict(con.execute("SELECT stage, count(*) FROM llm_calls GROUP BY stage").fetchall())
        run["results"] = results
    return runs


def test_six_runs_land_one_per_system(sweep: dict[str, dict]) -> None:
    assert set(sweep) == set(SYSTEMS)
    assert {name: run["label"] for name, run in sweep.items()} == {name: f"memory={name}" for name in SYSTEMS}
    assert sweep["om"]["run_id"] == SMOKE_ID
    assert all(len(run["items"]) == 7 and {i["status"] for i in run["items"]} == {"done"} for run in sweep.values())


def test_every_system_reports_the_memory_it_showed(sweep: dict[str, dict]) -> None:
    for name, run in sweep.items():
        shown = [item["context_tokens"] for item in run["items"]]
        assert all(isinstance(t, int) for t in shown), name
        assert sum(shown) > 0, name  # each system showed the actor some memory on the mini set
    # The oracle reader sees only the evidence sessions: never more than the full-context reader.
    full = {i["question_id"]: i["context_tokens"] for i in sweep["full_context"]["items"]}
    assert all(i["context_tokens"] <= full[i["question_id"]] for i in sweep["oracle"]["items"])


def test_ingest_calls_are_told_from_answer_calls_by_stage(sweep: dict[str, dict]) -> None:
    assert set(sweep["simple_om"]["stages"]) == {"observer", "actor", "judge"}
    assert sweep["simple_om"]["stages"]["observer"] == sum(i["observer_calls"] for i in sweep["simple_om"]["items"])
    # The index is built once per haystack (ingest); each question's query embedding is an answer cost.
    assert set(sweep["rag_mastra"]["stages"]) == {"retrieval", "query", "actor", "judge"}
    assert sweep["rag_mastra"]["stages"]["query"] == 7
    assert set(sweep["rag_lme"]["stages"]) == {"actor", "judge"}  # BM25 calls no model
    assert set(sweep["oracle"]["stages"]) == {"actor", "judge"}


def test_retrieval_systems_keep_their_ranking_and_recall(sweep: dict[str, dict]) -> None:
    for name in ("rag_mastra", "rag_lme"):
        budget = json.loads(sweep[name]["memory_budget"])
        assert budget["top_k"] == 10
        records = [json.loads(i["retrieval"]) for i in sweep[name]["items"]]
        scored = [r for r, i in zip(records, sweep[name]["items"]) if not i["is_abstention"]]
        assert scored and all("recall_any@10" in r["metrics"] for r in scored if r["correct"]), name
    assert all(i["retrieval"] is None for i in sweep["simple_om"]["items"])


def test_oms_columns_are_empty_for_a_system_that_does_not_report_them(sweep: dict[str, dict]) -> None:
    om_only = ("observations", "reflections", "observation_tokens", "pending_tokens", "compression_ratio")
    for name in ("rag_mastra", "rag_lme", "simple_om"):
        assert all(i[column] is None for i in sweep[name]["items"] for column in om_only), name
    # Observer calls are counted for a system that calls the observer model, and left empty for one that cannot.
    assert all(i["observer_calls"] is None for name in ("rag_mastra", "rag_lme") for i in sweep[name]["items"])
    assert sum(i["observer_calls"] for i in sweep["simple_om"]["items"]) > 0
    assert all(i["observations"] is not None and i["observation_tokens"] is not None for i in sweep["om"]["items"])


def om_eval_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om_eval.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300, check=False)


@pytest.mark.parametrize("system", ["simple_om", "rag_mastra"])
def test_rejudge_show_and_export_treat_a_seam_run_as_any_run(sweep: dict[str, dict], system: str) -> None:
    run = sweep[system]
    where = ("--results", str(run["results"]))
    rejudged = om_eval_command("rejudge", *where, run["run_id"], "judge=panel", "judge.panel=[house,lenient]")
    assert rejudged.returncode == 0, rejudged.stdout[-2000:] + rejudged.stderr[-2000:]
    assert "7 answers graded by lenient" in rejudged.stdout
    shown = om_eval_command("show", *where, run["run_id"], run["items"][0]["question_id"])
    assert shown.returncode == 0 and "memory shown to the actor" in shown.stdout, shown.stdout[-2000:]
    # The system's own figures, and none of OM's (no observation counts, no Observer line, no generations).
    flat = " ".join(shown.stdout.split())  # rich wraps at the terminal's width
    own = {"simple_om": "simple_om: observations", "rag_mastra": "rag_mastra: hits"}[system]
    assert own in flat and " · history " in flat
    assert not any(line in flat for line in ("observation and", "observer:", "Observations by generation"))
    exported = om_eval_command("export", *where, run["run_id"])
    assert exported.returncode == 0 and (run["results"] / "exports" / f"{run['run_id']}.zip").is_file()


def test_a_locomo_conversation_is_ingested_once_for_all_its_questions(tmp_path: Path) -> None:
    path = write_locomo_shaped(tmp_path, conversations=1, sessions=3)
    om_eval_run(tmp_path, "experiment=smoke", "dataset=locomo", f"dataset.path={path}", "memory=rag_mastra")
    [store] = (tmp_path / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        items = con.execute("SELECT reused_memory, retrieval FROM items WHERE status = 'done'").fetchall()
        index_calls = con.execute("SELECT count(*) FROM llm_calls WHERE stage = 'retrieval'").fetchone()[0]
        query_calls = con.execute("SELECT count(*) FROM llm_calls WHERE stage = 'query'").fetchone()[0]
    assert len(items) > 3 and sum(not reused for reused, _ in items) == 1
    assert (index_calls, query_calls) == (1, len(items))  # one index of the conversation, one query per question
    # LoCoMo's evidence (D<session>:<turn>) names the messages a retrieval should find: each question's own,
    # though the index was built once, from the first question.
    correct = [tuple(json.loads(record)["correct"]) for _, record in items]
    assert all(correct) and len(set(correct)) > 1


def test_every_system_records_what_its_agent_would_send_at_each_turn(sweep: dict[str, dict]) -> None:
    for name in ("om", "simple_om", "rag_mastra", "rag_lme", "full_context"):
        tables = [TurnTable.from_json(item["turns"]) for item in sweep[name]["items"] if item["turns"]]
        assert len(tables) == 7 and all(len(table) for table in tables), name
    run = sweep["simple_om"]
    simple = [TurnTable.from_json(item["turns"]) for item in run["items"]]
    with duckdb.connect(str(run["results"] / "store" / f"{run['run_id']}.duckdb"), read_only=True) as con:
        (paid,) = con.execute("SELECT sum(prompt_tokens) FROM llm_calls WHERE stage = 'observer'").fetchone()
    # Every Observer call of the layer is charged to a turn.
    assert sum(sum(t.observer_prompt) for t in simple) == paid > 0
