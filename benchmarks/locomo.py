"""The harness's own overhead on the whole LoCoMo file (1,986 questions, 10 conversations), model time taken out.

Runs the whole ``om-eval run`` job on the real ``locomo10.json`` (``--file``, else ``$LOCOMO_PATH``; never shipped)
with the zero-latency scripted model for every role and the audit's corrections on, in a fresh child process:
the file is read and checked against its pinned sha256, each conversation's memory is built once and shared by
its questions, every answer is judged and scored with LoCoMo's F1 (and again against a corrected gold where the
audit changes it), and everything lands in the DuckDB store. Time inside the scripted model is measured and
subtracted. Then the report table, the category plot and the HTML view are built from the store, and timed.

The overhead is also printed in loop units (:mod:`measure`: a 10⁷-step loop timed in the measuring process), beside
the process's CPU time. Target (issue 48, on a quiet machine): 10 memory builds, 1,986 items, overhead under 60 loop
units.

``--count`` adds a second child that runs the same job with every function call counted (:func:`measure.counting`:
a work count that does not move with the machine's load) and prints the ten functions with the most own time;
``OM_EVAL_PROFILE_DUMP=<file>`` keeps that profile for ``python -m pstats``.

Run: ``python benchmarks/locomo.py [--file PATH] [--audit PATH] [--concurrency 4] [--keep DIR] [--count]``

``--keep DIR`` runs in ``DIR`` (created if missing) and keeps it: its store, exports, plot and view stay for
``om-eval report --results DIR``. Without it the run goes to a temporary folder that is deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_OVERHEAD_LOOPS = 60.0


def _config(results: Path, data: Path, audit: Path, concurrency: int) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from om_eval.configs import CONFIG_DIR
    from om_eval.experiment.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            "experiment=smoke", "dataset=locomo", f"dataset.path={data}", "dataset.corrections=locomo_audit",
            f"dataset.audit_path={audit}", f"run.results_dir={results}", f"run.cache_dir={results / 'cache'}",
            f"run.concurrency={concurrency}", "run.progress=false",
        ])
    return OmegaConf.to_container(cfg, resolve=True)


def _results_folder(keep: Path | None) -> contextlib.AbstractContextManager[str]:
    """``keep`` (created, never deleted) or a temporary folder deleted afterwards."""
    if keep is None:
        return tempfile.TemporaryDirectory()
    keep.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(keep.resolve()))


def measure(data: Path, audit: Path, concurrency: int, keep: Path | None = None, count: bool = False) -> dict:
    """The measured part (run in a child process); ``keep``: the results folder to keep. With ``count``, every
    function call of the load and the run is counted instead of timed meaningfully."""
    import asyncio
    from contextlib import nullcontext

    from measure import counting, cpu_seconds, loop_seconds, peak_rss_gb
    from scripted_time import scripted_model_time

    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    loop = loop_seconds()
    cpu_before = cpu_seconds()
    with scripted_model_time() as model, _results_folder(keep) as folder:
        results = Path(folder)
        job = RunJob(spec_from_config(_config(results, data, audit, concurrency)))
        with counting() if count else nullcontext() as work:
            start = time.perf_counter()
            dataset = job.load_dataset()
            load_seconds = time.perf_counter() - start
            start = time.perf_counter()
            progress = asyncio.run(job.run(dataset=dataset))
            run_seconds = time.perf_counter() - start
        if work is not None:
            if os.environ.get("OM_EVAL_PROFILE_DUMP"):  # for a closer look: python -m pstats <file>
                work.dump(os.environ["OM_EVAL_PROFILE_DUMP"])
            return {"calls": work.calls, "python_calls": work.python_calls, "top": work.top(10),
                    "done": progress.done}
        cpu = cpu_seconds() - cpu_before
        peak = peak_rss_gb()
        figures = _read_back(results)
    return {"questions": len(dataset), "done": progress.done, "errors": progress.errors,
            "calls": progress.totals.calls, "load_s": load_seconds, "run_s": run_seconds, "model_s": model.seconds,
            "builds": job.shared.builds, "loop_s": loop, "cpu_s": cpu, "peak_gb": peak, **figures}


def _read_back(results: Path) -> dict:
    """Items, builds and scores from the store; the report, plot and view built from it, timed."""
    from om_eval.report import summary_table, to_markdown
    from om_eval.report.plots import plot_categories
    from om_eval.report.view import write_view
    from om_eval.store import Catalog

    with Catalog(results) as catalog:
        runs = catalog.runs()
        items = catalog.query("SELECT * FROM items")
    start = time.perf_counter()
    table = summary_table(runs, items)
    markdown = to_markdown(table)
    report_s = time.perf_counter() - start
    start = time.perf_counter()
    plot_categories(table, results / "categories.png")
    plot_s = time.perf_counter() - start
    start = time.perf_counter()
    write_view(results, results / "view.html")
    view_s = time.perf_counter() - start
    row = table.rows[0]
    return {"items": len(items), "stored_builds": sum(not i["reused_memory"] for i in items),
            "haystacks": len({i["haystack_id"] for i in items}), "f1": row.own.overall if row.own else None,
            "accuracy": row.graded.overall.value, "corrected": row.n_corrected, "ceiling": row.ceiling,
            "corrected_accuracy": row.corrected.overall.value if row.corrected else None,
            "categories_in_report": [c for c in ("1 multi-hop", "5 adversarial") if c in markdown],
            "report_s": report_s, "plot_s": plot_s, "view_s": view_s,
            "view_mb": (results / "view.html").stat().st_size / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=os.environ.get("LOCOMO_PATH"))
    parser.add_argument("--audit", type=Path, default=os.environ.get("LOCOMO_AUDIT_PATH"))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="run in DIR and keep its results (store, exports) for om-eval report")
    parser.add_argument("--count", action="store_true", help="add a pass that counts function calls")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the child's part
    parser.add_argument("--count-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.file is None or args.audit is None:
        sys.exit("give --file and --audit (or $LOCOMO_PATH and $LOCOMO_AUDIT_PATH): om-eval ships neither file")
    if args.measure:
        print(json.dumps(measure(args.file, args.audit, args.concurrency, args.keep, count=args.count_child)))
        return
    f = _child(args, ["--keep", str(args.keep.resolve())] if args.keep else [])
    work = _child(args, ["--count-child"]) if args.count else None
    overhead = f["load_s"] + f["run_s"] - f["model_s"]
    print(f"run: {f['questions']} questions, {f['done']} answered, {f['errors']} errors, {f['items']} items stored, "
          f"{f['calls']:,} model calls, concurrency {args.concurrency}")
    print(f"memory builds: {f['builds']} started by the job, {f['stored_builds']} items that built rather than "
          f"reused, over {f['haystacks']} conversations   <- target 10")
    loop = f["loop_s"]
    print(f"reference: a 10⁷-step loop took {loop:.3f} s in the measuring process")
    print(f"harness overhead (load + run wall time - scripted model time): {overhead:.1f} s = "
          f"{overhead / loop:.1f} loop units   <- target < {TARGET_OVERHEAD_LOOPS:.0f}")
    print(f"  load {f['load_s']:.1f} s, run {f['run_s']:.1f} s, of which scripted model {f['model_s']:.1f} s; CPU "
          f"{f['cpu_s']:.1f} s = {f['cpu_s'] / loop:.1f} loop units; peak {f['peak_gb']:.2f} GB")
    print(f"scores (scripted model, meaningless as memory quality): accuracy {f['accuracy']:.3f}, F1 {f['f1']:.3f}; "
          f"{f['corrected']} gold answers corrected, ceiling {f['ceiling']:.3f}, corrected accuracy "
          f"{f['corrected_accuracy']:.3f}")
    print(f"read back: report {f['report_s']:.1f} s (categories shown: {', '.join(f['categories_in_report'])}), "
          f"plot {f['plot_s']:.1f} s, view {f['view_s']:.1f} s ({f['view_mb']:.0f} MB)")
    if args.keep:
        print(f"results kept in {args.keep} (store, exports, categories.png, view.html): "
              f"om-eval report --results {args.keep}")
    counted = ""
    if work is not None:
        print(f"work: {work['python_calls']:,} Python function calls, {work['calls']:,} with built-ins (every thread, "
              "counted in a second run of the same job); the ten functions with the most own time:")
        print(work["top"])
        counted = f", work {work['python_calls']:,} Python calls"
    print(f"locomo: {f['questions']} questions, overhead {overhead / loop:.1f} loops, CPU {f['cpu_s'] / loop:.1f} "
          f"loops, peak {f['peak_gb']:.2f} GB{counted}")


def _child(args: argparse.Namespace, extra: list[str]) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--measure", "--file", str(args.file), "--audit", str(args.audit),
         "--concurrency", str(args.concurrency), *extra],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if child.returncode != 0:
        sys.exit(f"the measured child failed:\n{child.stderr[-4000:]}")
    result: dict = json.loads(child.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
