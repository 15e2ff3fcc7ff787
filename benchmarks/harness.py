"""The harness's own overhead on a 500-question S-sized synthetic dataset, with model time taken out.

Generates LongMemEval-schema haystacks of ~115k tokens per question (seeded), then runs the whole ``om-eval run``
job on them with the zero-latency scripted model for every role: replay through OM (token counting, threshold
checks, prompt rendering, parsing, section merging), answering, judging, the litellm client, the response cache
and the DuckDB store. Time spent inside the scripted model itself is measured and subtracted. Prints seconds and
peak memory (targets: under 5 minutes and under 3 GB on this 2-core machine).

Run: ``python benchmarks/harness.py [--questions 500] [--concurrency 4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from om_eval.experiment.job import RunJob
from om_eval.experiment.spec import spec_from_config
from om_eval.om.scripted import ScriptedModel

TYPES = 6


def _config(results: Path, per_type: int, abstention: int, concurrency: int) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from om_eval.experiment.app import CONFIG_DIR
    from om_eval.experiment.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            "dataset=synthetic_s", f"dataset.synthetic.questions_per_type={per_type}",
            f"dataset.synthetic.abstention={abstention}", f"run.results_dir={results}",
            f"run.cache_dir={results / 'cache'}", f"run.concurrency={concurrency}", "run.progress=false",
        ])
    return OmegaConf.to_container(cfg, resolve=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    abstention = max(1, round(args.questions * 0.06))
    per_type = max(1, (args.questions - abstention) // TYPES)
    abstention = args.questions - per_type * TYPES

    model_seconds = 0.0
    original = ScriptedModel.reply

    def timed(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        nonlocal model_seconds
        start = time.perf_counter()
        try:
            return original(self, *a, **kw)
        finally:
            model_seconds += time.perf_counter() - start

    ScriptedModel.reply = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder)
        spec = spec_from_config(_config(results, per_type, abstention, args.concurrency))
        job = RunJob(spec)
        start = time.perf_counter()
        dataset = job.load_dataset()
        generated = time.perf_counter() - start
        start = time.perf_counter()
        progress = asyncio.run(job.run(dataset=dataset))
        run_seconds = time.perf_counter() - start
        store_mb = sum(p.stat().st_size for p in (results / "store").glob("*")) / 1e6
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    totals = progress.totals
    print(f"dataset: {len(dataset)} S-sized synthetic questions generated and validated in {generated:.1f} s")
    print(f"run: {progress.done} answered, {progress.errors} errors, {totals.calls:,} model calls "
          f"({totals.prompt_tokens:,} prompt tokens), store {store_mb:,.0f} MB")
    print(f"harness overhead (run wall time - scripted model time): {run_seconds - model_seconds:.1f} s   "
          "<- target < 300 s")
    print(f"  run wall time {run_seconds:.1f} s, of which scripted model {model_seconds:.1f} s")
    print(f"peak memory (max RSS, whole process): {peak_gb:.2f} GB   <- target < 3 GB")


if __name__ == "__main__":
    main()
