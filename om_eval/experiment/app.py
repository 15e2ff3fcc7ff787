"""``om-eval run``: the Hydra application (single runs and ``-m`` sweeps, any Hydra launcher).

Each job is self-contained: it reads only its resolved config, writes only its own store file under
``run.results_dir``, and shares the response cache (safe for many processes). That is all a launcher needs, so
sweeps run the same with the basic launcher, joblib (``hydra/launcher=joblib``), submitit or Ray, on one machine
or several sharing a results folder.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
#: Set when a job in this process ended with failed questions, so the command exits non-zero.
_FAILED_JOBS: list[str] = []


def _label(spec: Any) -> str:
    """The variant's name in reports: the command-line overrides that define it, else the experiment."""
    if spec.run.label:
        return spec.run.label
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = [o for o in HydraConfig.get().overrides.task if not o.startswith(("run.", "experiment="))]
    except Exception:  # not running under Hydra (tests call run_from_config directly)
        overrides = []
    return " ".join(overrides) or spec.experiment


def run_from_config(cfg: Any, *, console: Any = None) -> dict[str, Any]:
    """Run one resolved config; returns a small summary (Hydra keeps it as the job's return value)."""
    from dataclasses import replace

    from omegaconf import OmegaConf
    from rich.console import Console

    from om_eval.experiment.estimate import print_estimate
    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    console = console or Console()
    data = OmegaConf.to_container(cfg, resolve=True) if not isinstance(cfg, dict) else cfg
    spec = spec_from_config(data)
    spec = replace(spec, run=replace(spec.run, label=_label(spec)))
    job = RunJob(spec, console=console)
    console.print(
        f"[bold]run {job.run_id}[/bold] · {spec.run.label} · observer {spec.om.observation.model.model} · actor "
        f"{spec.actor.model} · judge {spec.judge_mode}:{spec.judge_model.model} · store "
        f"{Path(spec.run.results_dir) / 'store' / (job.run_id + '.duckdb')}"
    )
    dataset = job.load_dataset()
    if spec.hosted_models:
        print_estimate(spec, dataset, console)
    try:
        progress = asyncio.run(_run_with_progress(job, console, spec.run.progress, dataset))
    except KeyboardInterrupt:
        p = job.progress
        console.print(f"[yellow]interrupted: {p.skipped_done + p.done} of {p.total} questions are saved in the "
                      "store; run the same command again to continue[/yellow]")
        raise SystemExit(130) from None
    summary = _print_summary(job, console)
    if progress.errors_seen:
        _FAILED_JOBS.append(job.run_id)
        console.print("[red]failed questions (retried when the same command runs again):[/red]")
        for message, count in sorted(progress.errors_seen.items(), key=lambda kv: -kv[1]):
            console.print(f"  {count} x {message}", markup=False, highlight=False)
    if progress.budget_reached:
        console.print(f"[yellow]budget of ${spec.run.budget_usd} reached: {progress.not_run} questions not run; "
                      "re-run the same command with a larger run.budget_usd to continue[/yellow]")
    return summary


async def _run_with_progress(job: Any, console: Any, show: bool, dataset: Any) -> Any:
    if not show:
        return await job.run(dataset=dataset)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("[bold]questions"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("starting", total=None)

        def update(progress: Any) -> None:
            bar.update(task, total=progress.total, completed=progress.skipped_done + progress.done + progress.errors
                       + progress.not_run, description=progress.describe())

        return await job.run(on_update=update, dataset=dataset)


def _print_summary(job: Any, console: Any) -> dict[str, Any]:
    import json

    metrics_path = Path(job.spec.run.results_dir) / "runs" / job.run_id / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    p = job.progress
    console.print(
        f"run {job.run_id} ({job.spec.run.label}): {p.skipped_done} already done, {p.done} answered, "
        f"{p.errors} errors · {p.describe()}"
    )
    if metrics:
        console.print(
            f"task-averaged {metrics['task_averaged']:.4f} · overall {metrics['overall']:.4f} · abstention "
            f"{metrics['abstention']['accuracy']}" if metrics.get("task_averaged") is not None else str(metrics)
        )
    return {"run_id": job.run_id, "label": job.spec.run.label, **{k: metrics.get(k) for k in ("overall",
                                                                                            "task_averaged")}}


def main(argv: Sequence[str]) -> int:
    """Entry point for ``om-eval run [overrides] [-m]``: hands the arguments to Hydra."""
    import hydra

    from om_eval.experiment.schema import register_configs

    if not CONFIG_DIR.is_dir():
        print(f"om-eval run needs the configs folder {CONFIG_DIR}; install the project with pip install -e .",
              file=sys.stderr)
        return 2
    register_configs()
    saved = sys.argv
    sys.argv = ["om-eval run", *argv]
    try:
        hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(run_from_config)()
    finally:
        sys.argv = saved
    return 1 if _FAILED_JOBS else 0
