"""``om-eval export RUN``: one archive with everything someone else needs to re-score a run.

The archive (a zip, its members in a fixed order with fixed timestamps, so the same store gives the same bytes):

==========================================  ==================================================================
``README.md``                               what each file holds and how to re-score (and, for a partial
                                            archive, that it is partial)
``hashes.json``                             the run id; sha256 of the data file, prompt set, actor prompt, judge
                                            templates; the judge identity; the sha256 of every other member
``run.json``                                the run record: models, judge identity, data file and its sha256
``state.json``                              how far the run got when exported: ``finished``, ``running``,
                                            ``unfinished`` or ``failed``, with its questions done, error, pending
``config.json``                             the resolved configuration (secrets already redacted)
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

**Unfinished runs are not exported as final.** A run with questions not yet answered (still running, or killed) or
whose questions failed is refused (:class:`UnfinishedRunError`); ``partial=True`` writes it anyway, with its state
in ``state.json``, in the README and in the file name (``<run id>-partial.zip``).

The members' names, the run's state and the checks an archive passes before it is re-scored live in
:mod:`om_eval.report.archive`.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from om_eval.bench.benchmark import benchmark_of_run
from om_eval.bench.metrics import write_eval_results_jsonl, write_hypotheses_jsonl
from om_eval.bench.scoring import run_metrics
from om_eval.common.files import atomic_writer
from om_eval.report.archive import (
    ANSWER_COLUMNS,
    EVAL_RESULTS_PREFIX,
    MEMBER_TIME,
    PARTIAL_SUFFIX,
    ArchiveError,
    RunProgress,
    UnfinishedRunError,
    archive_bytes,
    archive_state,
    as_json_bytes,
    as_jsonl_bytes,
    rescore_archive,
    run_identity,
    run_progress,
)
from om_eval.report.comparability import run_comparability
from om_eval.store.removal import note_archive_elsewhere

__all__ = ["ANSWER_COLUMNS", "ArchiveError", "RunProgress", "UnfinishedRunError", "archive_bytes", "archive_state",
           "export_run", "rescore_archive"]

_BUILD_STAGES = ("observer", "reflector")


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


def _readme(run: Mapping[str, Any], eval_name: str, progress: RunProgress) -> str:
    partial = "" if progress.finished else (
        f"**Partial archive: {progress.describe(exported=True)}.** Its answers and metrics cover the questions done "
        "then; `state.json` holds the counts, and `rescore_archive` refuses it unless called with `partial=True`."
        "\n\n")
    return (
        f"# om-eval export of run {run['run_id']} ({run.get('label') or run.get('experiment')})\n\n{partial}"
        "- answers.jsonl: one line per question (question, gold, answer, verdict, judge reply, scores, tokens, "
        "cost and latency of the memory build and of the answer).\n"
        "- verdicts.jsonl / probes.jsonl: every judge's verdicts and replies; probe answers with their expected "
        "verdict.\n"
        "- calls.jsonl: every model call (no texts).\n"
        "- config.json, run.json, hashes.json: what produced the answers, the sha256 of data, prompts and judge "
        "templates, and of every other file here.\n"
        "- state.json: how far the run got when it was exported.\n"
        "- metrics.json: the run's metrics and its comparability verdict.\n"
        f"- hypotheses.jsonl and {eval_name}: LongMemEval's official layouts; "
        f"`python3 print_qa_metrics.py {eval_name} <reference json>` re-scores them upstream.\n\n"
        "Verify and re-score in Python: `from om_eval.report.export import rescore_archive; rescore_archive(PATH)`.\n"
    )


def _partial_path(path: Path) -> Path:
    """``x.zip`` -> ``x-partial.zip`` (unchanged when the name already says so)."""
    stem = path.name[:-len(path.suffix)] if path.suffix else path.name
    return path if stem.endswith(PARTIAL_SUFFIX) else path.with_name(f"{stem}{PARTIAL_SUFFIX}{path.suffix}")


def export_run(results_dir: str | Path, run: str, out: str | Path | None = None, *, partial: bool = False) -> Path:
    """Write the archive of ``run`` (an id, id prefix or label) to ``out`` (default
    ``<results>/exports/<run id>.zip``); returns its path.

    A run that is not finished (questions pending or failed; see :class:`RunProgress`) is refused unless
    ``partial``; then its archive says so, and its name ends in ``-partial`` (``<run id>-partial.zip``, or ``out``
    with ``-partial`` added).

    Raises:
        LookupError: no run, or several, match ``run``.
        UnfinishedRunError: the run is not finished and ``partial`` is false; nothing was written.
    """
    from om_eval.report.detail import find_run
    from om_eval.store import Catalog

    with Catalog(results_dir, warn=False) as catalog:
        stored = dict(find_run(catalog.runs(), run))
        run_id = stored["run_id"]
        benchmark = benchmark_of_run(stored)
        items = catalog.query("SELECT * EXCLUDE (actor_prompt, store_file) FROM items WHERE run_id = ? "
                              "ORDER BY question_id", [run_id])
        running = any(path.stem == run_id for path in catalog.live_files)
        progress = run_progress(stored, items, running)
        if not progress.finished and not partial:
            raise UnfinishedRunError(progress)
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
    eval_name = f"{EVAL_RESULTS_PREFIX}{judge_model.split('/')[-1]}"
    metrics = {"metrics": run_metrics(benchmark, judged) if judged else {}, "benchmark": benchmark.name,
               "comparability": {"comparable": verdict.comparable,
                                 "conditions": [{"name": c.name, "holds": c.holds, "detail": c.detail}
                                                for c in verdict.conditions]}}
    official = _official_layouts(done, judged, judge_model, eval_name)
    members: dict[str, bytes] = {
        "README.md": _readme(stored, eval_name, progress).encode("utf-8"),
        "run.json": as_json_bytes(stored), "state.json": as_json_bytes(progress.as_json()),
        "config.json": as_json_bytes(config), "answers.jsonl": as_jsonl_bytes(answers),
        "verdicts.jsonl": as_jsonl_bytes(verdicts), "probes.jsonl": as_jsonl_bytes(probes),
        "calls.jsonl": as_jsonl_bytes(calls), "metrics.json": as_json_bytes(metrics), **official,
    }
    hashes = {**run_identity(stored),
              "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(members.items())}}
    members = {"README.md": members.pop("README.md"), "hashes.json": as_json_bytes(hashes), **members}
    path = Path(out) if out is not None else Path(results_dir) / "exports" / f"{run_id}.zip"
    if not progress.finished:
        path = _partial_path(path)
    # Never a half-written archive under the final name, and no temporary file left when writing fails.
    with atomic_writer(path, "wb") as handle, zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(zipfile.ZipInfo(name, MEMBER_TIME), data, compress_type=zipfile.ZIP_DEFLATED)
    note_archive_elsewhere(results_dir, run_id, path)
    return path


def _official_layouts(done: list[dict[str, Any]], judged: list[dict[str, Any]], judge_model: str,
                      eval_name: str) -> dict[str, bytes]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        hypotheses = write_hypotheses_jsonl(Path(folder) / "hypotheses.jsonl", done)
        results = write_eval_results_jsonl(Path(folder) / eval_name, judged, judge_model=judge_model)
        return {"hypotheses.jsonl": hypotheses.read_bytes(), eval_name: results.read_bytes()}
