"""The run ids and memory keys of the two bundled presets, pinned.

A refactor must not move them: a moved run id orphans every stored result of that configuration, and a moved memory
key rebuilds every memory. When a change is meant to move them (a prompt file, an engine rule), update the pins here
and record the move, old -> new and why, in CHANGELOG.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.experiment.spec import spec_from_config
from om_eval.om.tokens import make_counter
from om_eval.systems.om.identity import memory_hash
from tests.runs import compose_run

PINS = {
    "smoke": ("0da38ec8a1095857", "23a73367404ba752"),
    "quickstart": ("70b2e8c307c12b5b", "3b5cdaadc62fc616"),
    # One per further prompt set and benchmark: the recall tool's words, LoCoMo's rules, the published preset.
    "smoke om=retrieval": ("534906394f92f14e", "4f56606685ca9594"),
    "locomo_quickstart": ("1a1ad5c951053b73", "12bc8d9f6f897ceb"),
    # BEAM's rules, its house rubric judge, and each option that changes its scores.
    "beam_smoke": ("0ebc01363d54003b", "23a73367404ba752"),
    "beam_smoke beam.rounding=exact": ("ed5616483b0a8c0d", "23a73367404ba752"),
    "mastra_gpt4o": ("298de108b276b04e", "c7758ec6a92b4b03"),
    # Mastra's own prompts (prompt=mastra_exact): the pack's identity stands where om-eval's prompt hash does.
    "mastra_gpt4o_strict": ("b8b5a25c73e43093", "3c3529a4e7c645da"),
    "mastra_v1_31_strict": ("5a2cae9506a9f1e1", "71e4127800f7c495"),
}


@pytest.mark.parametrize("preset", list(PINS))
def test_the_preset_keeps_its_run_id_and_memory_key(tmp_path: Path, preset: str) -> None:
    experiment, *overrides = preset.split()
    config = compose_run(tmp_path, *overrides, experiment=experiment)
    spec = spec_from_config(OmegaConf.to_container(config, resolve=True))
    prompts = spec.mastra_prompts.identity if spec.mastra_prompts is not None else None
    key = memory_hash(spec.om, spec.replay, make_counter(spec.token_estimator).name, prompts)
    assert (spec.config_hash, key) == PINS[preset]
