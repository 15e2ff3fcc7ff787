"""``om_eval.evaluate``: ``om-eval run`` as a function, for notebooks and scripts.

It takes what the command line takes (Hydra overrides, a user config folder) or an already composed config, runs
the job in this process (or finds it finished and runs nothing: the same run id, the same store file, the same
resume), and returns an :class:`Evaluation` read back from the store, so a resumed run reports the same figures as
the invocation that answered it.

>>> from om_eval import evaluate                                        # doctest: +SKIP
>>> result = evaluate("experiment=smoke", results_dir="results")        # doctest: +SKIP
>>> result.overall, result.scores["knowledge-update"], result.cost_usd  # doctest: +SKIP
(0.42857142857142855, 1.0, 0.0)

Sweeps (``-m``) stay with the command line: a sweep is many runs, and its launcher owns the processes.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Evaluation", "evaluate"]


@dataclass(frozen=True)
class Evaluation:
    """What one run scored and cost, read from its store.

    Attributes:
        run_id: the config hash naming the run (the same as ``om-eval run`` gives the same settings).
        label: the run's name in reports.
        store: the run's DuckDB file.
        results_dir: the results folder (``om-eval report --results`` reads it).
        questions: questions the run holds.
        answered: questions answered and stored; ``errors``: questions that failed (a later call retries them).
        overall, task_averaged, abstention: the judge's accuracy; ``None`` when nothing was graded.
        scores: accuracy per question category (LongMemEval's question types, LoCoMo's categories).
        counts: graded questions per category.
        cost_usd: the known spend of every model call of the run; ``unpriced_calls``: calls with no known price.
        calls, prompt_tokens, completion_tokens: the run's model calls, cache hits included.
        metrics: the run's ``metrics.json`` as written (its own score, corrected gold, and more per benchmark).
    """

    run_id: str
    label: str
    store: Path
    results_dir: Path
    questions: int
    answered: int
    errors: int
    overall: float | None
    task_averaged: float | None
    abstention: float | None
    scores: dict[str, float | None]
    counts: dict[str, int]
    cost_usd: float
    unpriced_calls: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    metrics: dict[str, Any] = field(repr=False)


def evaluate(overrides: str | Sequence[str] = (), *, config: Mapping[str, Any] | Any | None = None,
             config_dir: str | Path | None = None, results_dir: str | Path | None = None,
             console: Any = None, quiet: bool = False) -> Evaluation:
    """Run (or resume) one om-eval run and return its scores and costs.

    Args:
        overrides: Hydra overrides as on the command line (``"experiment=smoke"``, ``["memory=rag_mastra",
            "run.concurrency=4"]``); a string is split on whitespace.
        config: a composed config (``hydra.compose`` result or a plain mapping) to run instead of composing one;
            ``overrides`` and ``config_dir`` must then be empty.
        config_dir: a folder of the user's own config groups, as ``om-eval run --config-dir``.
        results_dir: where the run's store goes (``run.results_dir``; default ``results`` under the current folder).
        console: a rich console for the run's lines; ``quiet`` silences them.

    Raises:
        ValueError: ``config`` given together with overrides, or a ``-m`` sweep asked for.
        om_eval.om.config.ConfigError: a bad option, named as the command line names it.
    """
    from rich.console import Console

    from om_eval.configs import checked_user_dir, hydra_quoted, using_user_dir
    from om_eval.experiment.app import run_from_config

    given = overrides.split() if isinstance(overrides, str) else list(overrides)
    if {"-m", "--multirun"} & set(given):
        raise ValueError("evaluate runs one configuration; run a sweep with om-eval run -m")
    if config is not None and (given or config_dir is not None):
        raise ValueError("evaluate takes a composed config or overrides (with config_dir), not both")
    folder_given = None if results_dir is None else str(Path(results_dir).expanduser().resolve())
    if folder_given is not None and config is None:
        given.append(f"run.results_dir={hydra_quoted(folder_given)}")
    folder = None if config_dir is None else checked_user_dir(config_dir, "config_dir")
    with using_user_dir(folder):  # for this call only: a later call without config_dir must not find it
        composed = _compose(given, folder) if config is None else _plain(config)
        if config is not None and folder_given is not None:
            composed["run"] = {**composed.get("run", {}), "results_dir": folder_given}
        job = functools.partial(run_from_config, composed, console=console or Console(quiet=quiet), overrides=given)
        summary = job() if not _loop_running() else _on_a_thread(job)
    return _read_back(summary["run_id"], Path(composed["run"]["results_dir"]))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _on_a_thread(job: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``job()`` on a thread of its own: a notebook cell runs inside an event loop, where the run's own
    ``asyncio.run`` cannot start one."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="om-eval-evaluate") as pool:
        return pool.submit(job).result()


def _compose(overrides: list[str], folder: Path | None) -> dict[str, Any]:
    """The run config the command line would compose (with the user's config folder searched too), as a dict."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from om_eval.configs import searchpath_override
    from om_eval.experiment.schema import register_configs

    register_configs()
    searched = [] if folder is None else [searchpath_override(folder)]
    with initialize_config_module("om_eval.configs", version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, *searched])
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    return {str(key): value for key, value in plain.items()}


def _plain(config: Mapping[str, Any] | Any) -> dict[str, Any]:
    from omegaconf import DictConfig, OmegaConf

    if isinstance(config, DictConfig):
        plain = OmegaConf.to_container(config, resolve=True)
        assert isinstance(plain, dict)
        return {str(key): value for key, value in plain.items()}
    copied = json.loads(json.dumps(dict(config), default=str))
    assert isinstance(copied, dict)
    return {str(key): value for key, value in copied.items()}


def _read_back(run_id: str, results_dir: Path) -> Evaluation:
    """The run's figures as the store and its ``metrics.json`` hold them."""
    from om_eval.store import Catalog

    with Catalog(results_dir) as catalog:
        [run] = catalog.query("SELECT label, store_file FROM runs WHERE run_id = ?", [run_id])
        [items] = catalog.query("SELECT count(*) AS n, count(*) FILTER (WHERE status = 'done') AS done, "
                                "count(*) FILTER (WHERE status = 'error') AS errors FROM items WHERE run_id = ?",
                                [run_id])
        [calls] = catalog.query("SELECT count(*) AS n, coalesce(sum(cost_usd), 0) AS cost, "
                                "count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced, "
                                "coalesce(sum(prompt_tokens), 0) AS prompt, "
                                "coalesce(sum(completion_tokens), 0) AS completion FROM llm_calls WHERE run_id = ?",
                                [run_id])
    path = results_dir / "runs" / run_id / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    per_type = metrics.get("per_type") or {}
    abstention = (metrics.get("abstention") or {}).get("accuracy")
    return Evaluation(
        run_id=run_id, label=str(run["label"]), store=results_dir / "store" / Path(run["store_file"]).name,
        results_dir=results_dir,
        questions=int(items["n"]), answered=int(items["done"]), errors=int(items["errors"]),
        overall=metrics.get("overall"), task_averaged=metrics.get("task_averaged"), abstention=abstention,
        scores={name: part.get("accuracy") for name, part in per_type.items()},
        counts={name: int(part.get("n") or 0) for name, part in per_type.items()},
        cost_usd=float(calls["cost"]), unpriced_calls=int(calls["unpriced"]), calls=int(calls["n"]),
        prompt_tokens=int(calls["prompt"]), completion_tokens=int(calls["completion"]), metrics=metrics)
