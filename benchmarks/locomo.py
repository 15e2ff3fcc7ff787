"""The harness's own overhead on the whole LoCoMo file (1,986 questions, 10 conversations), model time taken out.

Runs the whole ``om-eval run`` job on the real ``locomo10.json`` (``--file``, else ``$LOCOMO_PATH``; never shipped)
with the zero-latency scripted model for every role and the audit's corrections on, in a fresh child process:
the file is read and checked against its pinned sha256, each conversation's memory is built once and shared by
its questions, every answer is judged and scored with LoCoMo's F1 (and again against a corrected gold where the
audit changes it), and everything lands in the DuckDB store. Time inside the scripted model is measured and
subtracted. Then the report table, the category plot and the HTML view are built from the store, and timed.

Target (issue 17, this 2-core machine): 10 memory builds, 1,986 items, overhead under 60 s.

Run: ``python benchmarks/locomo.py [--file PATH] [--audit PATH] [--concurrency 4] [--keep DIR]``

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

TARGET_OVERHEAD_S = 60.0


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


def measure(data: Path, audit: Path, concurrency: int, keep: Path | None = None) -> dict:
    """The measured part (run in a child process); ``keep``: the results folder to keep."""
    import asyncio

    from scripted_time import scripted_model_time

    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    with scripted_model_time() as model, _results_folder(keep) as folder:
        results = Path(folder)
        job = RunJob(spec_from_config(_config(results, data, audit, concurrency)))
        start = time.perf_counter()
        dataset = job.load_dataset()
        load_seconds = time.perf_counter() - start
        start = time.perf_counter()
        progress = asyncio.run(job.run(dataset=dataset))
        run_seconds = time.perf_counter() - start
        figures = _read_back(results)
    return {"questions": len(dataset), "done": progress.done, "errors": progress.errors,
            "calls": progress.totals.calls, "load_s": load_seconds, "run_s": run_seconds, "model_s": model.seconds,
            "builds": job.shared.builds, **figures}


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
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the child's part
    args = parser.parse_args()
    if args.file is None or args.audit is None:
        sys.exit("give --file and --audit (or $LOCOMO_PATH and $LOCOMO_AUDIT_PATH): om-eval ships neither file")
    if args.measure:
        print(json.dumps(measure(args.file, args.audit, args.concurrency, args.keep)))
        return
    keep = ["--keep", str(args.keep.resolve())] if args.keep else []
    child = subprocess.run(
        [sys.executable, __file__, "--measure", "--file", str(args.file), "--audit", str(args.audit),
         "--concurrency", str(args.concurrency), *keep],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if child.returncode != 0:
        sys.exit(f"the measured child failed:\n{child.stderr[-4000:]}")
    f = json.loads(child.stdout.strip().splitlines()[-1])
    overhead = f["load_s"] + f["run_s"] - f["model_s"]
    print(f"run: {f['questions']} questions, {f['done']} answered, {f['errors']} errors, {f['items']} items stored, "
          f"{f['calls']:,} model calls, concurrency {args.concurrency}")
    print(f"memory builds: {f['builds']} started by the job, {f['stored_builds']} items that built rather than "
          f"reused, over {f['haystacks']} conversations   <- target 10")
    print(f"harness overhead (load + run wall time - scripted model time): {overhead:.1f} s   <- target < "
          f"{TARGET_OVERHEAD_S:.0f} s")
    print(f"  load {f['load_s']:.1f} s, run {f['run_s']:.1f} s, of which scripted model {f['model_s']:.1f} s")
    print(f"scores (scripted model, meaningless as memory quality): accuracy {f['accuracy']:.3f}, F1 {f['f1']:.3f}; "
          f"{f['corrected']} gold answers corrected, ceiling {f['ceiling']:.3f}, corrected accuracy "
          f"{f['corrected_accuracy']:.3f}")
    print(f"read back: report {f['report_s']:.1f} s (categories shown: {', '.join(f['categories_in_report'])}), "
          f"plot {f['plot_s']:.1f} s, view {f['view_s']:.1f} s ({f['view_mb']:.0f} MB)")
    if args.keep:
        print(f"results kept in {args.keep} (store, exports, categories.png, view.html): "
              f"om-eval report --results {args.keep}")


if __name__ == "__main__":
    main()
