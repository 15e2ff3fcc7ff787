"""The harness's own overhead and peak memory on S- or M-sized synthetic datasets, with model time taken out.

First, outside the measured part, writes a LongMemEval-schema file of ``--questions`` seeded questions, one record
at a time (``om-eval data synth`` does the same): ``--size s`` has ~48 sessions and ~115k tokens per question
(500 questions: ~290 MB, like LongMemEval_S), ``--size m`` ~500 sessions and ~1.5M tokens (7.6 MB a question,
like LongMemEval_M). Then a fresh child process, so that the generator's memory does not count, loads that file
through the streaming loader (sha256, then one validating pass that keeps only an index) and runs the whole
``om-eval run`` job on it with the zero-latency scripted model for every role: questions read one by one as
workers free up, replay through OM (token counting, threshold checks, prompt rendering, parsing, section
merging), answering, judging, the litellm client, the response cache and the DuckDB store. Time spent inside the
scripted model itself is measured and subtracted. Prints the overhead in seconds, the child's peak RSS and the
store size.

The overhead is also printed in loop units (:mod:`measure`: a 10⁷-step loop timed in the same process), beside
the CPU time; then a second child runs the same job with every function call counted (:func:`measure.counting`),
a work count that does not move with the machine's load, and prints the ten functions with the most own time
(``--no-count`` skips that pass, which takes about twice as long as the timed one).

Targets (issue 48, on a quiet machine): 500 S questions under 100 loop units of overhead and under 0.8 GB peak
RSS; 50 M questions under 2 GB peak RSS.

Run: ``python benchmarks/harness.py [--size s|m] [--questions N] [--concurrency 4] [--file PATH] [--no-turns]
[--no-count]`` (``--file`` reuses or keeps the generated dataset; default: a temporary file; ``--no-turns`` leaves
out the turn-by-turn cost replay, to measure what it adds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TYPES = 6
TARGET_RSS_GB = {"s": 0.8, "m": 2.0}
TARGET_OVERHEAD_LOOPS = {"s": 100.0}  # for 500 questions


def _counts(questions: int) -> tuple[int, int]:
    """Questions per type and abstention questions adding up to ``questions`` (about 6 % abstention)."""
    abstention = max(1, round(questions * 0.06))
    per_type = max(1, (questions - abstention) // TYPES)
    return per_type, max(0, questions - per_type * TYPES)


def _config(results: Path, dataset: Path, concurrency: int, turns: bool = True) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from om_eval.configs import CONFIG_DIR
    from om_eval.experiment.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            "dataset=mini", f"dataset.path={dataset}", f"run.results_dir={results}",
            f"run.cache_dir={results / 'cache'}", f"run.concurrency={concurrency}", "run.progress=false",
            f"run.turn_costs={str(turns).lower()}",
        ])
    return OmegaConf.to_container(cfg, resolve=True)


def measure(dataset_path: Path, concurrency: int, turns: bool = True, count: bool = False) -> dict:
    """The measured part (run in a child process): load the file streamed, run the job, report figures. With
    ``count``, every function call of the load and the run is counted instead of timed meaningfully."""
    import asyncio
    from contextlib import nullcontext

    from measure import counting, loop_seconds
    from scripted_time import scripted_model_time

    from om_eval.data import load_dataset
    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    loop = loop_seconds()
    with scripted_model_time() as model, tempfile.TemporaryDirectory() as folder:
        results = Path(folder)
        job = RunJob(spec_from_config(_config(results, dataset_path, concurrency, turns)))
        rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        with counting() if count else nullcontext() as work:
            start = time.perf_counter()
            dataset = load_dataset(path=dataset_path, stream=True)
            load_seconds = time.perf_counter() - start
            rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
            start = time.perf_counter()
            progress = asyncio.run(job.run(dataset=dataset))
            run_seconds = time.perf_counter() - start
        store_mb = sum(p.stat().st_size for p in (results / "store").glob("*")) / 1e6
        cache_mb = sum(p.stat().st_size for p in (results / "cache").rglob("*") if p.is_file()) / 1e6
    totals = progress.totals
    usage = resource.getrusage(resource.RUSAGE_SELF)
    if work is not None:
        if os.environ.get("OM_EVAL_PROFILE_DUMP"):  # for a closer look: python -m pstats <file>
            work.dump(os.environ["OM_EVAL_PROFILE_DUMP"])
        return {"calls": work.calls, "python_calls": work.python_calls, "top": work.top(10), "done": progress.done}
    return {"loop_s": loop,
        "questions": len(dataset), "done": progress.done, "errors": progress.errors, "calls": totals.calls,
        "prompt_tokens": totals.prompt_tokens, "load_s": load_seconds, "run_s": run_seconds,
        "model_s": model.seconds, "store_mb": store_mb, "cache_mb": cache_mb,
        "rss_start_gb": rss_start, "rss_loaded_gb": rss_loaded,
        "peak_rss_gb": usage.ru_maxrss / 1e6, "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def _child(path: Path, args: argparse.Namespace, count: bool = False) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), "--concurrency", str(args.concurrency),
         *(["--no-turns"] if args.no_turns else []), *(["--count-child"] if count else [])],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if child.returncode != 0:
        sys.exit(f"the measured child failed:\n{child.stderr[-4000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=("s", "m"), default="s")
    parser.add_argument("--questions", type=int, help="default: 500 for s, 50 for m")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--file", type=Path, help="dataset file to reuse if it exists, else to write and keep")
    parser.add_argument("--no-turns", action="store_true",
                        help="run.turn_costs=false: leave out the turn-by-turn cost replay (to measure what it adds)")
    parser.add_argument("--no-count", action="store_true", help="skip the pass that counts function calls")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's part
    parser.add_argument("--count-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.concurrency, turns=not args.no_turns, count=args.count_child)))
        return

    from om_eval.data.synth import iter_generate, write_dataset

    questions = args.questions or (500 if args.size == "s" else 50)
    per_type, abstention = _counts(questions)
    with tempfile.TemporaryDirectory() as folder:
        path = args.file or Path(folder) / f"synthetic-{args.size}-{questions}.json"
        if path.exists():
            print(f"dataset: reusing {path} ({path.stat().st_size / 1e6:,.0f} MB)")
        else:
            start = time.perf_counter()
            write_dataset(iter_generate(size=args.size, questions_per_type=per_type, abstention=abstention, seed=0),
                          path)
            print(f"dataset: {questions} {args.size.upper()}-sized synthetic questions written one by one to {path} "
                  f"({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - start:.1f} s "
                  "(not measured below)")
        figures = _child(path, args)
        work = None if args.no_count else _child(path, args, count=True)
    overhead = figures["load_s"] + figures["run_s"] - figures["model_s"]
    loop = figures["loop_s"]
    target_loops = TARGET_OVERHEAD_LOOPS.get(args.size) if questions == 500 else None
    target_gb = TARGET_RSS_GB[args.size]
    print(f"run: {figures['done']} answered, {figures['errors']} errors, {figures['calls']:,} model calls "
          f"({figures['prompt_tokens']:,} prompt tokens), concurrency {args.concurrency}; store "
          f"{figures['store_mb']:,.0f} MB, response cache {figures['cache_mb']:,.0f} MB")
    print(f"reference: a 10⁷-step loop took {loop:.3f} s in the measuring process")
    print(f"harness overhead (load + run wall time - scripted model time): {overhead:.1f} s = {overhead / loop:,.1f} "
          "loop units" + (f"   <- target < {target_loops:.0f}" if target_loops else ""))
    print(f"  load (sha256 + validating index pass) {figures['load_s']:.1f} s, run wall time {figures['run_s']:.1f} s, "
          f"of which scripted model {figures['model_s']:.1f} s; CPU time of the measuring process "
          f"{figures['cpu_s']:.1f} s (imports included; less sensitive to other load on the machine)")
    print(f"peak memory (max RSS of the measuring process): {figures['peak_rss_gb']:.2f} GB   <- target < "
          f"{target_gb:.1f} GB  (after imports {figures['rss_start_gb']:.2f} GB, after loading the index "
          f"{figures['rss_loaded_gb']:.2f} GB)")
    print(f"CPU time: {figures['cpu_s']:.1f} s = {figures['cpu_s'] / loop:,.1f} loop units")
    if work is not None:
        print(f"work: {work['python_calls']:,} Python function calls, {work['calls']:,} with built-ins (every "
              "thread, counted in a second run of the same job); the ten functions with the most own time:")
        print(work["top"].rstrip())
        print(f"harness: {figures['done']} questions, overhead {overhead / loop:,.1f} loops, CPU "
              f"{figures['cpu_s'] / loop:,.1f} loops, peak {figures['peak_rss_gb']:.2f} GB, work "
              f"{work['python_calls']:,} Python calls")


if __name__ == "__main__":
    main()
