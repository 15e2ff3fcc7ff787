"""Composing ``om-eval run`` configurations in tests, as the command line would (Hydra overrides)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir

from om_eval.configs import CONFIG_DIR
from om_eval.experiment.schema import register_configs


def compose_run(results: Path, *overrides: str, experiment: str = "smoke") -> Any:
    """The config of ``om-eval run experiment=<experiment> <overrides>`` writing to ``results`` (quiet)."""
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[f"experiment={experiment}", *overrides, f"run.results_dir={results}",
                                            f"run.cache_dir={results / 'cache'}", "run.progress=false"])


def run_and_read(results: Path, *overrides: str, cache: Path | None = None
                 ) -> tuple[list[dict[str, Any]], dict[str, int], str]:
    """Run ``om-eval run experiment=smoke <overrides>`` into ``results`` (its response cache ``cache`` when given)
    and read back its items (by question id), the calls it paid for by stage, and what it printed."""
    import io

    import duckdb
    from rich.console import Console

    from om_eval.experiment.app import run_from_config

    config = compose_run(results, *overrides)
    if cache is not None:
        config.run.cache_dir = str(cache)
    printed = io.StringIO()
    run_from_config(config, console=Console(file=printed, width=200))
    [store] = (results / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        cursor = con.execute("SELECT * FROM items ORDER BY question_id")
        items = [dict(zip([d[0] for d in cursor.description], row, strict=True)) for row in cursor.fetchall()]
        fresh = dict(con.execute("SELECT stage, count(*) FILTER (WHERE NOT cached) FROM llm_calls GROUP BY stage")
                     .fetchall())
    return items, fresh, printed.getvalue()
