"""``memory=``: OM and the baseline readers keep their run ids; seam systems hash what they use and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.experiment.spec import RunSpec, spec_from_config
from om_eval.om.config import ConfigError
from tests.runs import compose_run


def spec(results: Path, *overrides: str) -> RunSpec:
    return spec_from_config(OmegaConf.to_container(compose_run(results, *overrides), resolve=True))


def test_memory_om_is_the_run_without_the_group(tmp_path: Path) -> None:
    assert spec(tmp_path, "memory=om").config_hash == spec(tmp_path).config_hash == "0da38ec8a1095857"


@pytest.mark.parametrize("reader", ["full_context", "oracle"])
def test_a_reader_chosen_by_memory_is_the_baseline_run(tmp_path: Path, reader: str) -> None:
    by_memory = spec(tmp_path, f"memory={reader}")
    by_baseline = spec(tmp_path, f"baseline={reader}")
    assert by_memory.config_hash == by_baseline.config_hash and by_memory.baseline.reader == reader
    assert by_memory.resolved == by_baseline.resolved
    assert spec(tmp_path, f"memory={reader}", "memory.context_tokens=32000").baseline.context_tokens == 32000


def test_a_seam_system_drops_what_it_does_not_use(tmp_path: Path) -> None:
    rag = spec(tmp_path, "memory=rag_mastra")
    assert rag.memory_system == "rag_mastra" and rag.memory_options == {"top_k": 10, "message_range": 2}
    assert "om" not in rag.resolved and "prompt" not in rag.resolved and "baseline" not in rag.resolved
    assert set(rag.resolved["models"]) == {"actor", "judge", "embedding"}
    # The OM engine's settings do not move a RAG run; its own options do.
    assert spec(tmp_path, "memory=rag_mastra", "om.observation.message_tokens=999").config_hash == rag.config_hash
    assert spec(tmp_path, "memory=rag_mastra_top20").config_hash != rag.config_hash
    simple = spec(tmp_path, "memory=simple_om")
    assert set(simple.resolved["models"]) == {"actor", "judge", "observer"}
    assert simple.memory_options["buffer_threshold"] == 50  # the smoke preset's memory_defaults
    assert spec(tmp_path, "memory=simple_om", "memory.buffer_threshold=70").memory_options["buffer_threshold"] == 70
    fallback = spec(tmp_path, "memory=simple_om", "memory.observer=fallback")
    assert set(fallback.resolved["models"]) == {"actor", "judge"}
    assert set(fallback.role_models()) == {"models.actor", "models.judge"}


def test_a_seam_run_keeps_its_id_when_an_unused_model_changes(tmp_path: Path) -> None:
    rag = spec(tmp_path, "memory=rag_lme")
    assert spec(tmp_path, "memory=rag_lme", "model@models.embedding=text-embedding-3-small").config_hash \
        == rag.config_hash  # BM25 embeds nothing
    assert spec(tmp_path, "memory=rag_lme", "memory.retriever=embedding").role_models()["models.embedding"].model \
        == "scripted/om-eval"


@pytest.mark.parametrize(("overrides", "message"), [
    (("memory=simple_om", "baseline=oracle"), "memory=simple_om and baseline=oracle both choose what answers"),
    (("memory=oracle", "baseline=full_context"), "memory=oracle and baseline=full_context both choose a reader"),
    (("memory=rag_mastra", "+memory.topk=3"), "memory.topk is not an option of memory=rag_mastra"),
    (("memory.system=nonesuch",), "memory='nonesuch' is not a memory system: choose one of"),
])
def test_contradictions_and_unknown_names_are_refused(tmp_path: Path, overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spec(tmp_path, *overrides)


def test_the_baseline_form_records_its_reader_as_the_memory_system(tmp_path: Path) -> None:
    assert spec(tmp_path, "baseline=oracle").memory_system == "oracle"
    assert spec(tmp_path, "memory=full_context").memory_system == "full_context"
    assert spec(tmp_path).memory_system == "om"


def test_models_small_moves_only_the_runs_of_a_system_that_calls_it(tmp_path: Path) -> None:
    small = "model@models.small=gpt-4o-mini"
    # OM and mem0 call no small model: setting one leaves their run ids and roles as they were.
    assert spec(tmp_path, small).config_hash == "0da38ec8a1095857"
    mem0 = spec(tmp_path, "memory=mem0")
    assert spec(tmp_path, "memory=mem0", small).config_hash == mem0.config_hash
    assert "models.small" not in spec(tmp_path, "memory=mem0", small).role_models()
    # Graphiti asks for two sizes: unset, its small calls go to models.observer; set, the model is in its id.
    graphiti = spec(tmp_path, "memory=graphiti")
    with_small = spec(tmp_path, "memory=graphiti", small)
    assert "models.small" not in graphiti.role_models() and graphiti.small is None
    assert with_small.role_models()["models.small"].model == "openai/gpt-4o-mini"
    assert with_small.config_hash != graphiti.config_hash and with_small.resolved["models"]["small"]["model"]
