"""Memory systems side by side, on a store written with the writer's API: names, context tokens, the ingest /
answer / judge split of the spend, recall@k against a hand computation from the stored retrieval records, and the
budget warning exactly when budgets differ.

Seven runs answer the same five LongMemEval questions: OM, the full-context reader stored before the seam (no
``memory_system``, no budget, no context tokens), simple OM, Mastra's recall at top 10 and top 20, LongMemEval's
BM25 retrieval and a plugin. The retrieval runs find each question's evidence at the same rank (2, 15, 8, 30), so
top 10 misses what top 20 finds.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from om_eval.cli import main
from om_eval.memory.system import INGEST_STAGES
from om_eval.report.comparability import comparability_markdown
from om_eval.report.plots import categories_figure
from om_eval.report.plotting.bars import categories_notes
from om_eval.report.plotting.scatter import CONTEXT, MEMORY_CONTEXT, context_axis
from om_eval.report.systems import (
    budget_warnings,
    memory_name_of,
    stage_group,
    stage_usage,
    usage_by_run,
)
from om_eval.report.table_text import to_csv, to_markdown, to_rich
from om_eval.report.tables import summary_table
from om_eval.report.view import write_view
from om_eval.store import Catalog, RunInfo, RunStore, store_path
from tests.report.test_tables import render

SSU, MS, KU, TR = "single-session-user", "multi-session", "knowledge-update", "temporal-reasoning"
#: question id -> (type, judged right, rank of the first evidence document in every retrieval run's ranking)
QUESTIONS: dict[str, tuple[str, bool, int | None]] = {
    "ssu1": (SSU, True, 2), "ms1": (MS, False, 15), "ms2": (MS, False, 8), "ku1": (KU, True, 30),
    "tr1_abs": (TR, True, None),  # abstention: no evidence to find, no metrics
}
MASTRA = {"message_range": 2}
#: label -> (memory_system, memory_budget, memory group of the config, mean context tokens, name shown)
SYSTEMS: dict[str, tuple[str | None, dict[str, Any] | None, dict[str, Any] | None, int | None, str]] = {
    "om": ("om", {"observation_tokens": 40000, "message_tokens": 30000}, None, 700, "OM"),
    "full": (None, None, None, None, "baseline: full context"),
    "simple": ("simple_om", {"context_tokens": 2500, "context_tokens_min": 500, "max_observations": 50},
               {"system": "simple_om", "budget": [500, 2500]}, 120, "simple OM"),
    "rag10": ("rag_mastra", {"top_k": 10, **MASTRA}, {"system": "rag_mastra", "top_k": 10, **MASTRA}, 330,
              "RAG (Mastra recall, top 10)"),
    "rag20": ("rag_mastra", {"top_k": 20, **MASTRA}, {"system": "rag_mastra", "top_k": 20, **MASTRA}, 610,
              "RAG (Mastra recall, top 20)"),
    "lme": ("rag_lme", {"top_k": 10, "context_tokens": 126500, "granularity": "session"},
            {"system": "rag_lme", "retriever": "bm25", "granularity": "session", "top_k": 10}, 340,
            "RAG (LongMemEval BM25, session, top 10)"),
    "plugin": ("my_plugin", {"k": 3}, {"system": "my_plugin"}, 50, "my_plugin"),
}
RETRIEVAL = ("rag10", "rag20", "lme")
#: label -> the stages of each question's calls, with their cost (None: unknown price) and whether cached
CALLS: dict[str, list[tuple[str, float | None, bool]]] = {
    "om": [("observer", 0.001, False), ("observer", 0.001, False), ("reflector", 0.002, False),
           ("actor", 0.003, False), ("judge", 0.0005, False)],
    "full": [("actor", 0.004, False), ("judge", 0.0005, False)],
    "simple": [("observer", 0.0007, False), ("actor", 0.001, False), ("judge", 0.0005, False)],
    "rag10": [("retrieval", 0.00002, False), ("retrieval", 0.0, True), ("actor", 0.002, False),
              ("recall", 0.0001, False), ("judge", 0.0005, False)],
    "rag20": [("retrieval", 0.00002, False), ("retrieval", 0.0, True), ("actor", 0.0025, False),
              ("judge", 0.0005, False)],
    "lme": [("actor", 0.002, False), ("judge", 0.0005, False)],
    "plugin": [("observer", None, False), ("actor", 0.001, False), ("judge", 0.0005, False)],
}
HOUSE = {"judge_mode": "house", "judge_model": "openai/gpt-4o-mini", "official": False}


def run_id(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()[:16]


def retrieval_record(k: int, rank: int | None) -> str:
    """A record as the seam stores it: 40 ranked documents, the evidence at ``rank``, metrics at LongMemEval's ks."""
    ranked = [f"d{i}" for i in range(40)]
    correct = [] if rank is None else [ranked[rank - 1]]
    record: dict[str, Any] = {"k": k, "ranked": ranked, "correct": correct, "corpus": 40}
    if rank is not None:
        record["metrics"] = {f"recall_any@{n}": float(rank <= n) for n in (1, 3, 5, 10, 30, 50)}
    return json.dumps(record)


def write_store(results: Path) -> None:
    for number, (label, (system, budget, group, context, _)) in enumerate(SYSTEMS.items()):
        rid = run_id(label)
        config: dict[str, Any] = {"experiment": "systems", **({"memory": group} if group else {})}
        memory_key = "baseline:full_context" if label == "full" else f"{system}:{rid}"
        with RunStore(store_path(results, rid)) as store:
            store.register_run(RunInfo(rid, config, label=label, experiment="systems", memory_key=memory_key,
                                       dataset_name="synthetic", memory_system=system, memory_budget=budget,
                                       **HOUSE))
            for index, (qid, (qtype, right, rank)) in enumerate(QUESTIONS.items()):
                k = (budget or {}).get("top_k", 10)
                item = {"question_id": qid, "question_type": qtype, "is_abstention": qid.endswith("_abs"),
                        "status": "done", "hypothesis": "an answer", "label": right, "judge_status": "ok",
                        "memory_key": memory_key, "actor_prompt_tokens": 1000 + 10 * number + index,
                        "context_tokens": None if context is None else context + 10 * (index - 2),
                        "retrieval": retrieval_record(k, rank) if label in RETRIEVAL else None}
                calls = [{"stage": stage, "model": "openai/gpt-4o-mini", "prompt_tokens": 100 + seq,
                          "completion_tokens": 10, "cached": cached, "latency_s": 0.1, "retries": 0,
                          "cost_usd": cost, "cache_key": f"{rid}-{qid}-{seq}", "started_at": float(seq)}
                         for seq, (stage, cost, cached) in enumerate(CALLS[label])]
                store.record_question(rid, item, calls=calls)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("systems")
    write_store(folder)
    return folder


@pytest.fixture(scope="module")
def stored(results: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]],
                                   list[dict[str, Any]]]:
    """runs, items, the calls summed per run and stage, and every call."""
    with Catalog(results) as catalog:
        runs = catalog.runs()
        ids = [r["run_id"] for r in runs]
        return (runs, catalog.items(ids), stage_usage(catalog, ids),
                catalog.query("SELECT * EXCLUDE (store_file) FROM llm_calls ORDER BY run_id, question_id, seq"))


@pytest.fixture(scope="module")
def table(stored):
    runs, items, calls, _ = stored
    return summary_table(runs, items, calls=calls, n_boot=20)


def by_label(table) -> dict[str, Any]:
    return {row.label: row for row in table.rows}


def test_every_run_is_named_by_its_memory_system(table, stored) -> None:
    runs = stored[0]
    assert {r["label"]: memory_name_of(r) for r in runs} == {label: s[4] for label, s in SYSTEMS.items()}
    rows = by_label(table)
    assert {label: row.memory for label, row in rows.items()} == {label: s[4] for label, s in SYSTEMS.items()}
    assert rows["full"].system == "full_context" and rows["full"].reader == "full_context"  # derived from the key
    assert rows["om"].reader is None and rows["rag10"].reader is None
    assert table.shows_memory and table.compares_memory
    markdown = to_markdown(table)
    memory_row = next(line for line in markdown.splitlines() if line.startswith("| memory"))
    assert all(name in memory_row for *_, name in SYSTEMS.values())
    assert "Mastra's semantic recall" in markdown and "plugin memory system" in markdown
    assert "| memory |" in to_markdown(table, wide=True)
    records = {r["label"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert {label: r["memory_name"] for label, r in records.items()} == {label: s[4] for label, s in SYSTEMS.items()}
    assert records["full"]["memory"] == "baseline:full_context" and records["om"]["memory"] == "om"
    assert records["rag20"]["memory"] == "rag_mastra" and records["plugin"]["memory"] == "my_plugin"
    assert json.loads(records["rag20"]["memory_budget"]) == {"top_k": 20, **MASTRA}
    assert records["full"]["memory_budget"] == ""


def test_mean_context_tokens_are_those_of_the_items(table, stored) -> None:
    items = stored[1]
    rows = by_label(table)
    for label, (*_, context, _) in SYSTEMS.items():
        row = rows[label]
        own = [i["context_tokens"] for i in items if i["run_id"] == row.run_id]
        if context is None:
            assert row.mean_context_tokens is None and all(value is None for value in own)
        else:
            assert row.mean_context_tokens == pytest.approx(sum(own) / len(own)) == pytest.approx(context)
    text = render(to_rich(table), 400)
    context_row = next(line for line in text.splitlines() if "context tokens" in line and "│" in line)
    assert "610" in context_row and "–" in context_row  # rag20's mean; the reader stored before it was kept
    records = {r["label"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert records["rag20"]["mean_context_tokens"] == "610.00" and records["full"]["mean_context_tokens"] == ""


def test_ingest_answer_and_judge_cost_split_the_runs_spend(table, stored) -> None:
    calls = stored[3]
    rows = by_label(table)
    for label, row in rows.items():
        own = [c for c in calls if c["run_id"] == row.run_id]
        ingest = [c for c in own if c["stage"] in INGEST_STAGES]
        judge = [c for c in own if c["stage"] == "judge"]
        answer = [c for c in own if c["stage"] not in INGEST_STAGES and c["stage"] != "judge"]
        usage = {group: row.stage(group) for group in ("ingest", "answer", "judge")}
        for group, part in (("ingest", ingest), ("answer", answer), ("judge", judge)):
            assert usage[group].cost_usd == pytest.approx(sum(c["cost_usd"] or 0.0 for c in part)), (label, group)
            assert usage[group].calls == len(part)
            assert usage[group].prompt_tokens == sum(c["prompt_tokens"] for c in part)
        total = math.fsum(c["cost_usd"] or 0.0 for c in own)
        assert math.fsum(u.cost_usd for u in usage.values()) == pytest.approx(total), label
        assert sum(u.calls for u in usage.values()) == len(own)
    # by hand, per question: OM builds for 0.004 and answers for 0.003; RAG's recall round is answer cost.
    assert rows["om"].stage("ingest").cost_usd == pytest.approx(5 * 0.004)
    assert rows["om"].stage("answer").cost_usd == pytest.approx(5 * 0.003)
    assert rows["rag10"].stage("answer").cost_usd == pytest.approx(5 * 0.0021)
    assert rows["rag10"].stage("ingest").calls == 10 and rows["full"].stage("ingest").calls == 0
    assert rows["plugin"].stage("ingest").unpriced_calls == 5 and rows["plugin"].stage("answer").unpriced_calls == 0
    assert rows["rag10"].stage("ingest").unpriced_calls == 0  # a cache hit costs $0: it has a price
    # plain llm_calls rows give the same sums as the catalog's per-stage sums
    plain, summed = usage_by_run(calls), usage_by_run(stored[2])
    assert plain.keys() == summed.keys()
    for rid, groups in plain.items():
        for group, usage in groups.items():
            assert dataclasses.astuple(usage) == pytest.approx(dataclasses.astuple(summed[rid][group]))
    wide = to_markdown(table, wide=True)
    assert "| ingest $ |" in wide and "| answer $ |" in wide and "0.0200 |" in wide
    assert "0.0000 +5 unpriced" in to_markdown(table)  # the plugin's observer calls have no price
    records = {r["label"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    om = records["om"]
    assert (om["ingest_cost_usd"], om["ingest_calls"], om["answer_calls"], om["judge_calls"]) == (
        "0.020000", "15", "5", "5")


def test_stage_groups() -> None:
    assert [stage_group(s) for s in ("observer", "reflector", "retrieval", "actor", "recall", "judge")] == [
        "ingest", "ingest", "ingest", "answer", "answer", "judge"]


def hand_recall(items: list[dict[str, Any]], k: int) -> tuple[float, int, dict[str, list[float]]]:
    """recall_any@k straight from the stored JSON: any correct id among the first k ranked, questions with metrics."""
    hits: dict[str, list[float]] = {}
    for item in items:
        record = json.loads(item["retrieval"])
        if "metrics" in record:
            hits.setdefault(item["question_type"], []).append(
                float(any(doc in record["correct"] for doc in record["ranked"][:k])))
    flat = [h for values in hits.values() for h in values]
    return sum(flat) / len(flat), len(flat), hits


def test_recall_at_the_runs_own_k_matches_a_hand_computation(table, stored) -> None:
    items = stored[1]
    rows = by_label(table)
    for label in RETRIEVAL:
        row = rows[label]
        k = SYSTEMS[label][1]["top_k"]  # type: ignore[index]  # retrieval runs store a budget
        value, n, per_type = hand_recall([i for i in items if i["run_id"] == row.run_id], k)
        assert row.recall is not None and row.recall.k == k
        assert (row.recall.value, row.recall.n) == (pytest.approx(value), n)
        for qtype, hits in per_type.items():
            assert row.recall.per_type[qtype] == (pytest.approx(sum(hits) / len(hits)), len(hits))
        assert row.recall.per_type[TR] == (None, 0)  # its only question is an abstention: left out
    # ranks 2, 15, 8, 30: top 10 finds two of four, top 20 three; recall@20 is read from the ranking (no metric)
    assert (rows["rag10"].recall.value, rows["rag20"].recall.value) == (0.5, 0.75)
    # wrong answers: ms1 (rank 15) is a retrieval miss at top 10 and a reading miss at top 20; ms2 reads wrong
    assert (rows["rag10"].recall.retrieval_misses, rows["rag10"].recall.reading_misses) == (1, 1)
    assert (rows["rag20"].recall.retrieval_misses, rows["rag20"].recall.reading_misses) == (0, 2)
    assert rows["rag10"].recall.right_without_evidence == 1  # ku1: evidence at rank 30, answered right anyway
    assert all(rows[label].recall is None for label in SYSTEMS if label not in RETRIEVAL)
    markdown = to_markdown(table)
    assert "### Retrieval: recall_any@k at each run's own k" in markdown
    assert "recall_any@k = the share of questions" in markdown
    recall_row = next(line for line in markdown.splitlines() if line.startswith("| recall_any@k |") and "k=" in line)
    assert "50.0 n=4 k=10" in recall_row and "75.0 n=4 k=20" in recall_row
    records = {r["label"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert (records["rag20"]["recall_any_at_k"], records["rag20"]["recall_k"], records["rag20"]["recall_n"]) == (
        "0.750000", "20", "4")
    assert records["rag10"]["multi-session_recall_any_at_k"] == "0.500000" and records["om"]["recall_k"] == ""


def test_the_budget_warning_appears_exactly_when_budgets_differ(stored) -> None:
    runs = stored[0]
    named = {r["label"]: r for r in runs}
    assert budget_warnings(runs) == [
        "budgets differ: rag10 top_k 10, rag20 top_k 20 — their accuracies are not like for like."]
    assert budget_warnings([r for r in runs if r["label"] != "rag20"]) == []  # context_tokens differ across systems
    same = {**named["rag20"], "memory_budget": named["rag10"]["memory_budget"]}
    assert budget_warnings([named["rag10"], same]) == []
    assert budget_warnings([named["rag10"], {**named["rag20"], "memory_budget": None}]) == []  # none stored
    bigger = {**named["lme"], "run_id": "x" * 16, "label": "lme32k",
              "memory_budget": json.dumps({"top_k": 10, "context_tokens": 32000, "granularity": "session"})}
    assert budget_warnings([named["lme"], bigger]) == [
        "budgets differ: lme context_tokens 126500, lme32k context_tokens 32000 — their accuracies are not like "
        "for like."]
    text = comparability_markdown([], budget_warnings(runs))
    checklist, _, rest = text.partition("8. **both aggregates shown**")
    assert "budgets differ" not in checklist and rest.count("⚠ budgets differ: rag10 top_k 10, rag20 top_k 20") == 1


def test_the_report_prints_the_budget_warning_once(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--results", str(results), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert out.count("budgets differ") == 1 and "rag10 top_k 10, rag20 top_k 20" in " ".join(out.split())
    assert "ingest $" in out and "RAG (Mastra recall, top 20)" in " ".join(out.split())
    assert main(["report", "--results", str(results), "--n-boot", "20", "--runs", "rag10", "lme", "om"]) == 0
    assert "budgets differ" not in capsys.readouterr().out


def test_tables_of_om_runs_only_are_unchanged(stored) -> None:
    runs, items, calls, _ = stored
    om = [r for r in runs if r["label"] == "om"]
    with_calls = summary_table(om, items, calls=calls, n_boot=20)
    without = summary_table(om, items, n_boot=20)
    assert not with_calls.shows_memory and not with_calls.compares_memory
    for wide in (False, True):
        assert to_markdown(with_calls, wide=wide) == to_markdown(without, wide=wide)
        assert "memory" not in to_markdown(with_calls, wide=wide).split("## ")[1].split("\n|")[1]
    header = to_csv(with_calls).splitlines()[0].split(",")
    assert "memory" not in header and "ingest_cost_usd" in header  # the CSV always has the cost split
    assert to_csv(without).splitlines()[1].split(",")[header.index("ingest_cost_usd")] == ""  # calls not given


def test_plots_name_the_memory_systems_and_use_the_context_tokens(table, stored) -> None:
    figure = categories_figure(table)
    legend = [t.get_text().replace("\n", " ") for t in figure.legends[0].get_texts()]
    for label, (*_, name) in SYSTEMS.items():
        suffix = "[full-context reader]" if label == "full" else f"[{name}]"
        assert any(entry.startswith(label + " ") and suffix in entry for entry in legend), (label, legend)
    _, notes = categories_notes(table)
    assert "[…] after a label = the memory system the run answered through" in notes
    assert context_axis(table) is CONTEXT  # the reader stored before context tokens were kept
    runs, items, calls, _ = stored
    recent = [r for r in runs if r["label"] != "full"]
    newer = summary_table(recent, [i for i in items if i["run_id"] != run_id("full")], calls=calls, n_boot=0)
    axis = context_axis(newer)
    assert axis is MEMORY_CONTEXT
    assert axis.value(by_label(newer)["rag20"]) == pytest.approx(610)
    rag_only = summary_table([r for r in runs if r["label"] == "rag10"], items, n_boot=0)
    legend = [t.get_text() for t in categories_figure(rag_only).legends[0].get_texts()]
    assert legend == ["rag10"]  # one system: no mark, a note instead
    assert "every run answered through RAG (Mastra recall, top 10)" in categories_notes(rag_only)[1]


def test_the_view_shows_the_memory_name_and_context_tokens(results: Path, tmp_path: Path) -> None:
    page = write_view(results, tmp_path / "view.html", n_boot=20).read_text(encoding="utf-8")
    for *_, name in SYSTEMS.values():
        assert f">{name}</span>" in page, name
    tradeoff = page[page.index('id="tradeoff"'):page.index('id="agreement"')]
    assert "<th>context tokens / question</th>" in tradeoff and "<th>recall_any@k</th>" in tradeoff
    assert '<td class="num">610</td>' in tradeoff and "50.0% (k=10, n=4)" in tradeoff
    assert "budgets differ: rag10 top_k 10, rag20 top_k 20" in page
    data = json.loads(page.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    assert data["details"][run_id("rag20")]["ms1"]["item"]["retrieval"].startswith(
        "evidence in the top 20 (first at rank 15")
    assert data["details"][run_id("rag10")]["ms1"]["item"]["retrieval"].startswith("no evidence in the top 10")
    assert {r["label"]: list(r["models"]) for r in data["runs"]}["full"] == ["actor"]


@pytest.mark.parametrize(("run", "name"), [
    ({"memory_system": "om"}, "OM"),
    ({}, "OM"),  # stored before the seam
    ({"memory_key": "baseline:oracle"}, "baseline: oracle"),
    # `baseline=oracle` stores the memory group's default beside the reader's key: the key decides
    ({"memory_key": "baseline:oracle", "memory_system": "om"}, "baseline: oracle"),
    ({"memory_system": "full_context", "memory_key": "baseline:full_context"}, "baseline: full context"),
    ({"config_json": json.dumps({"memory": {"system": "simple_om"}})}, "simple OM"),
    ({"memory_system": "rag_mastra", "config_json": json.dumps({"memory": {"top_k": 10}})},
     "RAG (Mastra recall, top 10)"),  # no budget stored: the option says k
    ({"memory_system": "rag_mastra"}, "RAG (Mastra recall)"),
    ({"memory_system": "rag_lme", "memory_budget": json.dumps({"top_k": 50, "granularity": "turn"}),
      "config_json": json.dumps({"memory": {"retriever": "embedding"}})}, "RAG (LongMemEval embeddings, turn, top 50)"),
    ({"memory_system": "my_plugin", "memory_budget": json.dumps({"top_k": 5})}, "my_plugin"),
])
def test_memory_names(run: dict[str, Any], name: str) -> None:
    assert memory_name_of(run) == name


def test_the_systems_doctests_hold() -> None:
    import doctest

    import om_eval.report.systems as systems

    assert doctest.testmod(systems).failed == 0


class _SelfNamed:
    """A plugin class that names its runs and says what it shows, as the base class declares (no report table)."""

    name = "self_named"
    about = "the newest facts a test wrote down"

    @classmethod
    def label(cls, budget: dict[str, Any], options: dict[str, Any]) -> str:
        return f"self-named (keeps {budget.get('keep', '?')}, mode {options.get('mode', '?')})"


def test_a_plugin_names_its_runs_and_says_what_it_shows_in_its_own_words(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from om_eval.memory import registry
    from om_eval.report._systems_text import memory_note

    module = types.ModuleType("self_named_plugin")
    module.SelfNamed = _SelfNamed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "self_named_plugin", module)
    monkeypatch.setattr(registry, "plugin_targets", lambda: {"self_named": "self_named_plugin:SelfNamed",
                                                             "gone": "no_such_module_anywhere:Gone"})
    run = {"memory_system": "self_named", "memory_budget": '{"keep": 5}', "config_json": '{"memory": {"mode": "x"}}'}
    assert memory_name_of(run) == "self-named (keeps 5, mode x)"
    assert memory_name_of({"memory_system": "gone"}) == "gone"  # uninstalled since its run: named by its name
    rows = [types.SimpleNamespace(system="self_named", memory="self-named (keeps 5, mode x)"),
            types.SimpleNamespace(system="gone", memory="gone"), types.SimpleNamespace(system="om", memory="OM")]
    note = memory_note(types.SimpleNamespace(rows=rows))  # type: ignore[arg-type]
    assert note == ("memory: self-named (keeps 5, mode x) = the newest facts a test wrote down; gone = a plugin memory "
                    "system (om_eval.memory_systems entry point); OM = answered through Observational Memory.")
