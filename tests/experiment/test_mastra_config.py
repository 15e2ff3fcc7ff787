"""``experiment=mastra_gpt4o`` composes to Mastra's published setup, and every prompt variant is selectable."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.cli.demo import add_parser as add_demo_parser
from om_eval.common.run_identity import MEMORY_KEY_RULE
from om_eval.configs import CONFIG_DIR
from om_eval.experiment.spec import spec_from_config
from om_eval.om.config import PARAPHRASE_VARIANTS, PROMPT_VARIANTS, ConfigError
from om_eval.om.rules import rules_for
from tests.runs import compose_run


def test_mastra_gpt4o_is_the_1_3_prompt_sync_observation_and_prepare_ts_thresholds(tmp_path: Path) -> None:
    cfg = compose_run(tmp_path, experiment="mastra_gpt4o")
    assert cfg.prompt.variant == "current_v1_3"
    assert cfg.om.observation.buffer_tokens is False
    spec = spec_from_config(OmegaConf.to_container(cfg, resolve=True))
    om = spec.om
    assert om.prompt_variant == "current_v1_3"
    # Synchronous observation: no async buffering, so no buffer interval and no block-after point.
    assert not om.async_observation_enabled and om.buffer_tokens is None and om.observation_block_after is None
    # Thresholds and batching as prepare.ts ran them (om-reference §6.4, §8; om_eval/configs/om/benchmark_era.yaml).
    assert om.observation.message_tokens == 30_000
    assert om.reflection.observation_tokens == 80_000
    assert om.observation.max_tokens_per_batch == 5_000 and om.observation.batch_mode == "parallel"
    # The rest of the benchmark-era behaviour (§1.16, §4.1).
    assert om.scope == "resource" and om.obscure_thread_ids
    assert om.observation.previous_observer_tokens is False and om.observation.request_layout == "single"
    assert om.context_layout == "single" and not om.boundary_delimiters
    assert spec.replay.unit == "pair" and spec.replay.turn_spacing_seconds == 5 and not spec.replay.final_flush
    assert om.observation.model.model == om.reflection.model.model == "google/gemini-2.5-flash"
    assert spec.actor.model == "openai/gpt-4o"


@pytest.mark.parametrize("variant", PROMPT_VARIANTS)
def test_every_prompt_variant_is_selectable(variant: str, tmp_path: Path) -> None:
    assert (CONFIG_DIR / "prompt" / f"{variant}.yaml").is_file()
    cfg = compose_run(tmp_path, f"prompt={variant}")
    assert spec_from_config(OmegaConf.to_container(cfg, resolve=True)).om.prompt_variant == variant


def test_the_demo_offers_every_prompt_variant() -> None:
    commands = argparse.ArgumentParser().add_subparsers()
    add_demo_parser(commands)
    demo = commands.choices["demo"]
    (variant,) = [action for action in demo._actions if action.dest == "variant"]
    assert tuple(variant.choices) == PARAPHRASE_VARIANTS  # mastra_exact needs a pack (Node once): not in the demo
    assert {path.stem for path in (CONFIG_DIR / "prompt").glob("*.yaml")} == set(PROMPT_VARIANTS)


def test_later_settings_reach_the_engine_and_keep_default_run_ids(tmp_path: Path) -> None:
    def spec(*overrides: str):
        return spec_from_config(OmegaConf.to_container(compose_run(tmp_path, *overrides, experiment="smoke"),
                                                       resolve=True))

    plain, explicit, strict = spec(), spec("om.reply_checks=om_eval"), spec("om.reply_checks=mastra")
    assert plain.om.reply_checks == "om_eval" and strict.om.reply_checks == "mastra"
    assert plain.config_hash == explicit.config_hash != strict.config_hash
    def memory_view(spec):
        return MEMORY_KEY_RULE.view({"om": spec.om.to_dict()})["om"]

    assert "reply_checks" not in memory_view(plain) and memory_view(strict)["reply_checks"] == "mastra"
    reminded = spec("om.observation.activation_counts_reminder=true")
    assert reminded.om.observation.activation_counts_reminder and reminded.config_hash != plain.config_hash
    assert spec("om.observation.activation_counts_reminder=false").config_hash == plain.config_hash
    strict_preset = compose_run(tmp_path, experiment="mastra_gpt4o_strict")
    assert spec_from_config(OmegaConf.to_container(strict_preset, resolve=True)).om.reply_checks == "mastra"
    with pytest.raises(ConfigError, match=r"om\.reply_checks=.*allowed values are om_eval, mastra"):
        spec("om.reply_checks=lenient")
    merged = spec("om.thread_sections=mastra")
    assert merged.om.thread_sections == "mastra" and merged.config_hash != plain.config_hash
    assert spec("om.thread_sections=om_eval").config_hash == plain.config_hash
    with pytest.raises(ConfigError, match=r"om\.thread_sections=.*allowed values are om_eval, mastra"):
        spec("om.thread_sections=first")


def test_om_v1_31_is_default_with_the_1_31_rules(tmp_path: Path) -> None:
    plain = spec_from_config(OmegaConf.to_container(compose_run(tmp_path, "om=default"), resolve=True)).om
    newer = spec_from_config(OmegaConf.to_container(compose_run(tmp_path, "om=v1_31"), resolve=True)).om
    assert newer.mastra_release == "v1_31" and plain.mastra_release == "v1_10"
    assert newer.reflection.start_level == "auto" and newer.observation.previous_observer_tokens is False
    assert rules_for(newer).degenerate_detector == "v1.31" and rules_for(plain).degenerate_detector == "v1.10"
    assert newer.thread_sections == "mastra" and plain.thread_sections == "om_eval"
    # Everything else is om=default's.
    assert replace(newer, mastra_release="v1_10", thread_sections="om_eval", reflection=plain.reflection,
                   observation=plain.observation) == plain
    assert replace(newer.observation, previous_observer_tokens=2000) == plain.observation
    assert replace(newer.reflection, start_level=0) == plain.reflection


def test_the_1_31_strict_harness_is_the_strict_one_on_the_1_31_engine(tmp_path: Path) -> None:
    def resolved(experiment: str) -> dict:
        return OmegaConf.to_container(compose_run(tmp_path, experiment=experiment), resolve=True)

    older, newer = resolved("mastra_gpt4o_strict"), resolved("mastra_v1_31_strict")
    spec = spec_from_config(newer)
    rules = rules_for(spec.om)
    assert rules.release == "v1_31" and rules.reply_checks == "mastra" and rules.thread_sections == "mastra"
    assert rules.failed_reflection == "skip_while_unchanged"
    assert spec.om.reflection.start_level == "auto" and spec.om.prompt_variant == "mastra_exact"
    assert spec.mastra_prompts is not None and spec.mastra_prompts.version == "1.31.0"
    for harness in ("judge", "dataset"):
        assert newer[harness] == older[harness], harness
    assert newer["models"]["judge"] == older["models"]["judge"]
    assert spec_from_config(older).om.mastra_release == "v1_10"
