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
