"""Cost forecast before hosted runs, and a budget that stops a run cleanly."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from om_eval.configs import CONFIG_DIR
from om_eval.experiment.estimate import estimate_run, print_estimate
from om_eval.experiment.job import RunJob, load_run_dataset
from om_eval.experiment.schema import register_configs
from om_eval.experiment.spec import spec_from_config
from om_eval.store import Catalog


def spec_for(results: Path, *overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, f"run.results_dir={results}",
                                           f"run.cache_dir={results / 'cache'}", "run.progress=false"])
    return spec_from_config(OmegaConf.to_container(cfg, resolve=True))


def test_forecast_prices_hosted_models(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, "experiment=mastra_gpt4o", "dataset=mini")
    assert spec.hosted_models == ["google/gemini-2.5-flash", "openai/gpt-4o", "openai/gpt-4o-2024-08-06"]
    stages = {e.stage: e for e in estimate_run(spec, load_run_dataset({"name": "mini"}))}
    assert stages["actor"].calls == 7 and stages["judge"].calls == 7
    assert stages["actor"].cost_usd and stages["actor"].cost_usd > 0  # gpt-4o is in litellm's price list
    assert stages["observer"].calls == 0  # mini haystacks never reach the 30k threshold without a flush


def test_scripted_and_local_runs_cost_nothing(tmp_path: Path) -> None:
    assert spec_for(tmp_path, "experiment=smoke").hosted_models == []


def test_a_spent_budget_stops_scheduling_and_a_rerun_continues(tmp_path: Path) -> None:
    stopped = RunJob(spec_for(tmp_path, "experiment=smoke", "run.budget_usd=0"))
    progress = asyncio.run(stopped.run())
    assert progress.budget_reached and progress.not_run == 7 and progress.done == 0
    resumed = RunJob(spec_for(tmp_path, "experiment=smoke"))
    assert resumed.run_id == stopped.run_id  # the budget is not part of the configuration
    assert asyncio.run(resumed.run()).done == 7
    with Catalog(tmp_path) as catalog:
        assert len(catalog.items()) == 7


def test_forecast_of_a_baseline_reader_has_no_memory_calls_and_oracle_reads_less(tmp_path: Path) -> None:
    dataset = load_run_dataset({"name": "mini"})
    stages = {}
    for reader in ("full_context", "oracle"):
        spec = spec_for(tmp_path, "experiment=mastra_gpt4o", "dataset=mini", f"baseline={reader}")
        stages[reader] = {e.stage: e for e in estimate_run(spec, dataset)}
    for reader, by_stage in stages.items():
        assert set(by_stage) == {"actor", "judge"}, reader  # a reader has no ingest stage
        assert by_stage["actor"].calls == 7 and by_stage["judge"].calls == 7, reader
    assert stages["oracle"]["actor"].prompt_tokens < stages["full_context"]["actor"].prompt_tokens
    small = spec_for(tmp_path, "experiment=mastra_gpt4o", "dataset=mini", "baseline=full_context",
                     "baseline.context_tokens=2000")
    cut = {e.stage: e for e in estimate_run(small, dataset)}["actor"]
    assert cut.prompt_tokens <= 7 * (2000 - 500 - 1000 + 1500)  # each history cut to its budget


def test_forecast_of_seam_systems_names_their_ingest_stages_and_follows_their_budget(tmp_path: Path) -> None:
    dataset = load_run_dataset({"name": "mini"})

    def stages(*overrides: str) -> dict:
        spec = spec_for(tmp_path, "experiment=smoke", "model@models.actor=gpt-4o", *overrides)
        return {e.stage: e for e in estimate_run(spec, dataset)}

    rag = stages("memory=rag_mastra", "model@models.embedding=text-embedding-3-small")
    assert set(rag) == {"retrieval", "query", "actor", "judge"}
    assert (rag["retrieval"].calls, rag["query"].calls) == (7, 7)  # an index and a query for each question
    assert rag["retrieval"].cost_usd and rag["actor"].cost_usd
    one = stages("memory=rag_mastra", "memory.top_k=1", "memory.message_range=0")["actor"]
    assert one.prompt_tokens < rag["actor"].prompt_tokens
    simple = stages("memory=simple_om", "memory.buffer_threshold=40")
    assert set(simple) == {"observer", "actor", "judge"} and simple["observer"].calls >= 7
    assert set(stages("memory=rag_lme")) == {"actor", "judge"}  # BM25 costs nothing


def test_the_forecast_names_an_unpriced_model_once_however_many_stages_it_serves(tmp_path: Path) -> None:
    from rich.console import Console

    unpriced = "openai/om-eval-unpriced-model"
    spec = spec_for(tmp_path, "experiment=mastra_gpt4o", "dataset=mini", f"models.actor.model={unpriced}",
                    f"models.judge.model={unpriced}")
    console = Console(record=True, width=300)
    print_estimate(spec, load_run_dataset({"name": "mini"}), console)
    shown = console.export_text()
    caption = " ".join(shown[shown.rindex("┘") + 1:].split())  # the caption, however rich wraps it
    assert caption.count(unpriced) == 1 and "plus unknown prices for" in caption, caption
