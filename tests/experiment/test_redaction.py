"""A credential given in a model's provider options never reaches the store, the console or the run id.

(The scripted models run in this process and take no endpoint, so the credential here is one litellm passes on,
``vertex_credentials``; an ``api_key`` is refused for them, ``tests/llm/test_endpoint.py``.)"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from om_eval.experiment.app import run_from_config
from om_eval.experiment.spec import spec_from_config
from om_eval.store import Catalog
from tests.runs import compose_run


def composed(results: Path, *overrides: str):
    return compose_run(results, *overrides)


def test_a_key_in_provider_options_is_redacted_everywhere(tmp_path: Path) -> None:
    key = "+models.judge.provider_options.litellm.vertex_credentials="
    console = Console(file=io.StringIO(), width=200)
    summary = run_from_config(composed(tmp_path, key + "sk-first-secret-1234"), console=console)
    with Catalog(tmp_path) as catalog:
        stored = catalog.runs()[0]["config_json"]
    assert "sk-first-secret" not in stored and '"vertex_credentials": "***"' in stored
    assert "sk-first-secret" not in console.file.getvalue()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".yaml", ".md", ".txt"):
            assert "sk-first-secret" not in path.read_text(errors="replace"), path
    # Rotating the key is the same run.
    from omegaconf import OmegaConf

    rotated = spec_from_config(OmegaConf.to_container(composed(tmp_path, key + "sk-other-5678"), resolve=True))
    assert rotated.config_hash == summary["run_id"]
