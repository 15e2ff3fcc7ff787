"""The identity rules are complete and their pins hold.

Every setting of the run config and of the engine config is classed by the rules that see it, so a new setting
cannot slip into (or out of) an identity unnoticed; and every value a rule omits a setting at is the setting's live
default, so changing a default is never silent.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from om_eval.common.identity import IdentityRule, leaf_paths, lookup
from om_eval.common.run_identity import LATER_MEMORY_OPTIONS, MEMORY_KEY_RULE, RUN_ID_RULE
from om_eval.experiment.schema import Config
from om_eval.om.config import OMConfig
from om_eval.systems.om.replay import ReplayConfig
from tests.runs import compose_run

#: Defaults deliberately moved away from their pin, path -> (pinned, new default). An entry says the move was
#: meant and recorded in CHANGELOG.md: runs at the new default carry the setting, so their ids moved.
ACKNOWLEDGED_DEFAULT_MOVES: dict[str, tuple[Any, Any]] = {}


def run_config_defaults() -> dict[str, Any]:
    return asdict(Config())


def engine_defaults() -> dict[str, Any]:
    return {"om": OMConfig().to_dict(), "replay": asdict(ReplayConfig())}


@pytest.mark.parametrize(("rule", "defaults"), [(RUN_ID_RULE, run_config_defaults),
                                                (MEMORY_KEY_RULE, engine_defaults)], ids=["run id", "memory key"])
def test_every_setting_is_classed(rule: IdentityRule, defaults) -> None:
    unclassed = rule.unclassed(leaf_paths(defaults()))
    assert not unclassed, (
        f"the {rule.name} rule does not class {', '.join(unclassed)}: add each to om_eval/common/run_identity.py "
        "(a setting new since identities were first stored goes under omitted_at with its default, so earlier runs "
        "keep their ids)")


@pytest.mark.parametrize(("rule", "defaults"), [(RUN_ID_RULE, run_config_defaults),
                                                (MEMORY_KEY_RULE, engine_defaults)], ids=["run id", "memory key"])
def test_every_pinned_value_is_the_live_default(rule: IdentityRule, defaults) -> None:
    live = defaults()
    one_systems = {f"memory.{option}" for options in LATER_MEMORY_OPTIONS.values() for option in options}
    for path, pinned in rule.omitted_at.items():
        if path in one_systems:  # one system's option: checked against that system's config below
            continue
        default = lookup(live, path)
        if (type(default), default) == (type(pinned), pinned):
            assert path not in ACKNOWLEDGED_DEFAULT_MOVES, f"{path} is back at its pin: drop its acknowledgement"
            continue
        assert ACKNOWLEDGED_DEFAULT_MOVES.get(path) == (pinned, default), (
            f"the default of {path} moved from {pinned!r} (pinned by the {rule.name} rule) to {default!r}: the "
            f"identity must move. Runs at the new default now carry {path} in their {rule.name}, so the ids of the "
            f"presets at that default move. Leave the pin at {pinned!r} (it stands for every run stored before), "
            "record the move old -> new in CHANGELOG.md, update the pins in tests/experiment/test_identity_pins.py "
            f"and acknowledge it in ACKNOWLEDGED_DEFAULT_MOVES ({__name__})")


@pytest.mark.parametrize("system", sorted(LATER_MEMORY_OPTIONS))
def test_a_systems_later_options_are_pinned_at_its_live_defaults(tmp_path: Path, system: str) -> None:
    memory = OmegaConf.to_container(compose_run(tmp_path, f"memory={system}"), resolve=True)["memory"]
    for option, pinned in LATER_MEMORY_OPTIONS[system].items():
        assert RUN_ID_RULE.omitted_at[f"memory.{option}"] == pinned
        assert (type(memory[option]), memory[option]) == (type(pinned), pinned), (
            f"memory={system}'s {option} now defaults to {memory[option]!r}, not the pinned {pinned!r}: its runs' "
            "ids move; record the move in CHANGELOG.md")


@pytest.mark.parametrize("experiment", ["smoke", "quickstart", "locomo_quickstart", "mastra_gpt4o",
                                        "mastra_v1_31_strict", "retrieval_smoke"])
@pytest.mark.parametrize("reader", ["none", "oracle"])
def test_every_preset_setting_is_classed(tmp_path: Path, experiment: str, reader: str) -> None:
    config = OmegaConf.to_container(compose_run(tmp_path, f"baseline={reader}", experiment=experiment), resolve=True)
    assert RUN_ID_RULE.unclassed(leaf_paths(config)) == []


def test_a_changed_default_moves_the_identity_instead_of_hiding() -> None:
    """The stale-identity bug: were a default compared live, old runs at the old default and new runs at the new one
    would share an id. Against the pin, the new default enters the view and the id moves."""
    config = run_config_defaults()
    assert "retrieval" not in RUN_ID_RULE.view(config)["om"]
    config["om"]["retrieval"] = "resource"  # as if the default had become "resource"
    assert RUN_ID_RULE.view(config)["om"]["retrieval"] == "resource"


def test_what_only_shapes_a_view_or_a_folder_stays_out() -> None:
    config = run_config_defaults()
    view = RUN_ID_RULE.view(config)
    assert "run" not in view and "experiment" not in view and "verify" not in view["dataset"]
    assert {"source", "panel"}.isdisjoint(view["judge"])
    memory = MEMORY_KEY_RULE.view(engine_defaults())
    assert {"context_layout", "other_threads_order", "other_threads_limit", "thread_id_hash"}.isdisjoint(memory["om"])
    obscured = engine_defaults()
    obscured["om"]["obscure_thread_ids"] = True
    assert MEMORY_KEY_RULE.view(obscured)["om"]["thread_id_hash"] == "xxh32"
