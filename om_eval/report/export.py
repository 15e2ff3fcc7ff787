"""``om-eval export RUN``: one archive with everything someone else needs to re-score a run.

The archive (a zip, its members in a fixed order with fixed timestamps, so the same store gives the same bytes):

==========================================  ==================================================================
``README.md``                               what each file holds and how to re-score
``run.json``                                the run record: models, judge identity, data file and its sha256
``config.json``                             the resolved configuration (secrets already redacted)
``hashes.json``                             sha256 of the data file, prompt set, actor prompt, judge templates;
                                            the judge identity; the sha256 of every other member
``answers.jsonl``                           per question: question, date, gold (and corrected gold), answer,
                                            verdict, the judge's reply, the benchmark's own score, actor context
                                            tokens, cost and latency split into memory build and answer
``verdicts.jsonl``                          every verdict of every judge (``om-eval rejudge``), with replies
``probes.jsonl``                            judge probe verdicts (``rejudge --probes``), if any
``calls.jsonl``                             every model call: stage, model, tokens, cached, latency, cost
``metrics.json``                            the run's metrics and its comparability verdict
``hypotheses.jsonl``, ``*.eval-results-*``  the official LongMemEval layouts (``print_qa_metrics.py`` reads the
                                            second)
==========================================  ==================================================================

:func:`rescore_archive` recomputes the metrics from ``answers.jsonl`` alone, with the same functions the run
used (:func:`om_eval.bench.scoring.run_metrics`: LongMemEval's arithmetic, and LoCoMo's F1 aggregation where the
benchmark has its own score).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from om_eval.bench.benchmark import benchmark_of_run
from om_eval.bench.metrics import write_eval_results_jsonl, write_hypotheses_jsonl
from om_eval.bench.scoring import run_metrics
from om_eval.report.comparability import run_comparability

__all__ = ["ANSWER_COLUMNS", "archive_bytes", "export_run", "rescore_archive"]

#: Item columns kept in ``answers.jsonl`` (the actor's compressed prompt and the evidence trace stay in the store).
ANSWER_COLUMNS = (
    "question_id", "question_type", "is_abstention", "haystack_id", "question", "question_date", "gold_answer",
    "corrected_answer", "hypothesis", "status", "error", "label", "judge_status", "judge_reply", "score",
    "corrected_score", "corrected_label", "actor_prompt_tokens", "actor_completion_tokens", "observation_tokens",
    "history_tokens", "reused_memory", "cost_usd", "unknown_cost_calls", "actor_prompt_hash",
)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_BUILD_STAGES = ("observer", "reflector")


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True, default=str) + "\n"
                   for r in rows).encode("utf-8")


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1, default=str) + "\n").encode("utf-8")


def _stage_split(calls: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per question: cost and latency of its memory build (Observer, Reflector) and of its answer (the actor, and in
    retrieval mode its rounds after tool results)."""
    split: dict[str, dict[str, float | None]] = {}
    for call in calls:
        part = "build" if call["stage"] in _BUILD_STAGES else "answer" if call["stage"] in ("actor", "recall") else None
        if part is None:
            continue
        row = split.setdefault(call["question_id"], {"build_cost_usd": 0.0, "build_latency_s": 0.0,
                                                     "answer_cost_usd": 0.0, "answer_latency_s": 0.0})
        cost_key = f"{part}_cost_usd"
        if call["cost_usd"] is None:
            row[cost_key] = None  # one unknown price makes the sum unknown
        elif row[cost_key] is not None:
            row[cost_key] += call["cost_usd"]
        row[f"{part}_latency_s"] = (row[f"{part}_latency_s"] or 0.0) + (call["latency_s"] or 0.0)
    return split


def _readme(run: Mapping[str, Any], eval_name: str) -> str:
    return (
        f"# om-eval export of run {run['run_id']} ({run.get('label') or run.get('experiment')})\n\n"
        "- answers.jsonl: one line per question (question, gold, answer, verdict, judge reply, scores, tokens, "
        "cost and latency of the memory build and of the answer).\n"
        "- verdicts.jsonl / probes.jsonl: every judge's verdicts and replies; probe answers with their expected "
        "verdict.\n"
        "- calls.jsonl: every model call (no texts).\n"
        "- config.json, run.json, hashes.json: what produced the answers, and the sha256 of data, prompts and "
        "judge templates.\n"
        "- metrics.json: the run's metrics and its comparability verdict.\n"
        f"- hypotheses.jsonl and {eval_name}: LongMemEval's official layouts; "
        f"`python3 print_qa_metrics.py {eval_name} <reference json>` re-scores them upstream.\n\n"
        "Re-score in Python: `from om_eval.report.export import rescore_archive; rescore_archive(PATH)`.\n"
    )


def export_run(results_dir: str | Path, run: str, out: str | Path | None = None) -> Path:
    """Write the archive of ``run`` (an id, id prefix or label) to ``out`` (default
    ``<results>/exports/<run id>.zip``); returns its path.

    Raises:
        LookupError: no run, or several, match ``run``.
    """
    from om_eval.report.detail import find_run
    from om_eval.store import Catalog

    with Catalog(results_dir, warn=False) as catalog:
        stored = dict(find_run(catalog.runs(), run))
        run_id = stored["run_id"]
        benchmark = benchmark_of_run(stored)
        items = catalog.query("SELECT * EXCLUDE (actor_prompt, store_file) FROM items WHERE run_id = ? "
                              "ORDER BY question_id", [run_id])
        verdicts = catalog.query("SELECT * EXCLUDE (store_file) FROM judgments WHERE run_id = ? "
                                 "ORDER BY question_id, judge_key", [run_id])
        probes = catalog.query("SELECT * EXCLUDE (store_file) FROM probe_verdicts WHERE run_id = ? "
                               "ORDER BY question_id, judge_key, probe", [run_id])
        calls = catalog.query("SELECT * EXCLUDE (store_file) FROM llm_calls WHERE run_id = ? "
                              "ORDER BY question_id, seq", [run_id])
        verdict = run_comparability(catalog, stored, benchmark)
    split = _stage_split(calls)
    answers = [{**{c: item.get(c) for c in ANSWER_COLUMNS}, **split.get(item["question_id"], {})} for item in items]
    done = [a for a in answers if a["status"] == "done"]
    judged = [{**a, "status": a["judge_status"]} for a in done]
    config = json.loads(stored.pop("config_json") or "{}")
    judge_model = ((config.get("models") or {}).get("judge") or {}).get("model") or stored.get("judge_model") or ""
    eval_name = f"hypotheses.jsonl.eval-results-{judge_model.split('/')[-1]}"
    metrics = {"metrics": run_metrics(benchmark, judged) if judged else {}, "benchmark": benchmark.name,
               "comparability": {"comparable": verdict.comparable,
                                 "conditions": [{"name": c.name, "holds": c.holds, "detail": c.detail}
                                                for c in verdict.conditions]}}
    official = _official_layouts(done, judged, judge_model, eval_name)
    members: dict[str, bytes] = {
        "run.json": _json(stored), "config.json": _json(config), "answers.jsonl": _jsonl(answers),
        "verdicts.jsonl": _jsonl(verdicts), "probes.jsonl": _jsonl(probes), "calls.jsonl": _jsonl(calls),
        "metrics.json": _json(metrics), **official,
    }
    identity = json.loads(stored["judge_identity"]) if stored.get("judge_identity") else {}
    hashes = {"dataset_sha256": stored.get("dataset_sha256"),
              "prompts": json.loads(stored["prompt_hashes"]) if stored.get("prompt_hashes") else {},
              "judge_templates_sha256": identity.get("template_sha256"), "judge_identity": identity,
              "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(members.items())}}
    members = {"README.md": _readme(stored, eval_name).encode("utf-8"), "hashes.json": _json(hashes), **members}
    path = Path(out) if out is not None else Path(results_dir) / "exports" / f"{run_id}.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")  # never a half-written archive under the final name
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, _FIXED_TIME), data, compress_type=zipfile.ZIP_DEFLATED)
    partial.replace(path)
    return path


def _official_layouts(done: list[dict[str, Any]], judged: list[dict[str, Any]], judge_model: str,
                      eval_name: str) -> dict[str, bytes]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        hypotheses = write_hypotheses_jsonl(Path(folder) / "hypotheses.jsonl", done)
        results = write_eval_results_jsonl(Path(folder) / eval_name, judged, judge_model=judge_model)
        return {"hypotheses.jsonl": hypotheses.read_bytes(), eval_name: results.read_bytes()}


def rescore_archive(path: str | Path) -> dict[str, Any]:
    """The metrics recomputed from an archive's ``answers.jsonl`` and ``run.json`` alone."""
    with zipfile.ZipFile(path) as archive:
        run = json.loads(archive.read("run.json"))
        answers = [json.loads(line) for line in archive.read("answers.jsonl").decode("utf-8").splitlines() if line]
    judged = [{**a, "status": a["judge_status"]} for a in answers if a["status"] == "done"]
    return run_metrics(benchmark_of_run(run), judged) if judged else {}


def archive_bytes(path: str | Path) -> dict[str, bytes]:
    """Every member of an archive, by name (for tests and tools)."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
