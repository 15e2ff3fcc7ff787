"""OM configuration: 1.10 defaults, validation messages, dict round trips."""

from __future__ import annotations

import pytest

from om_eval.om.config import ConfigError, ModelSettings, ObservationConfig, OMConfig, ReflectionConfig


def test_defaults_match_mastra_1_10() -> None:
    config = OMConfig()
    assert config.scope == "thread"
    assert config.observation.message_tokens == 30_000
    assert config.observation.max_tokens_per_batch == 10_000
    assert config.observation.previous_observer_tokens == 2000
    assert config.reflection.observation_tokens == 40_000
    assert config.buffer_tokens == 6000
    assert config.observation_activation == 0.8
    assert config.observation_block_after == 36_000
    assert config.reflection_activation == 0.5
    assert config.reflection_block_after == 48_000
    assert config.observation.model.temperature == 0.3
    assert config.reflection.model.temperature == 0.0
    assert config.observation.model.provider_options["google"]["thinkingConfig"]["thinkingBudget"] == 215
    assert config.reflection.model.provider_options["google"]["thinkingConfig"]["thinkingBudget"] == 1024
    assert config.prompt_variant == "current"


def test_resource_scope_disables_async_unless_set() -> None:
    config = OMConfig(scope="resource")
    assert not config.async_observation_enabled
    assert config.buffer_tokens is None and config.observation_block_after is None


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"scope": "global"}, "scope='global' is invalid: allowed values are thread, resource"),
        ({"prompt_variant": "v2"}, "prompt_variant='v2'"),
        ({"observation": ObservationConfig(message_tokens=0)}, "observation.message_tokens=0"),
        ({"observation": ObservationConfig(buffer_tokens=40_000)}, "must be less than observation.message_tokens"),
        ({"observation": ObservationConfig(buffer_tokens=-0.2)}, "observation.buffer_tokens=-0.2"),
        ({"observation": ObservationConfig(buffer_activation=5.0)}, "ratio in (0, 1] or an absolute retention"),
        ({"observation": ObservationConfig(buffer_activation=0)}, "observation.buffer_activation=0"),
        ({"observation": ObservationConfig(block_after=0.5)}, "observation.block_after=0.5"),
        ({"observation": ObservationConfig(block_after=200)}, "resolves below its threshold"),
        ({"observation": ObservationConfig(buffer_tokens=False, block_after=1.5)}, "needs async buffering on"),
        ({"observation": ObservationConfig(previous_observer_tokens=-1)}, "previous_observer_tokens=-1"),
        ({"observation": ObservationConfig(previous_observer_tokens=True)}, "previous_observer_tokens=True"),
        ({"reflection": ReflectionConfig(buffer_activation=1.5)}, "reflection.buffer_activation=1.5"),
        ({"reflection": ReflectionConfig(start_level=5)}, "reflection.start_level=5"),
        ({"reflection": ReflectionConfig(model=ModelSettings(temperature=3))}, "reflection.model.temperature=3"),
        ({"share_token_budget": True}, "share_token_budget=True is invalid"),
        (
            {"scope": "resource", "observation": ObservationConfig(buffer_tokens=0.2)},
            "not available in resource scope",
        ),
    ],
)
def test_invalid_values_name_option_value_and_range(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as error:
        OMConfig(**kwargs)
    assert fragment in str(error.value)


def test_valid_edge_values_are_accepted_and_resolve_as_1_10_does() -> None:
    assert OMConfig(observation=ObservationConfig(buffer_activation=1.0)).retention_floor == 0  # activate all
    assert OMConfig(observation=ObservationConfig(buffer_activation=1000)).retention_floor == 1000  # absolute
    at_threshold = OMConfig(observation=ObservationConfig(block_after=1.0, buffer_tokens=5000))
    assert (at_threshold.observation_block_after, at_threshold.buffer_tokens) == (30_000, 5000)
    unshown = OMConfig(observation=ObservationConfig(previous_observer_tokens=False))
    assert unshown.observation.previous_observer_tokens is False
    assert OMConfig(observation=ObservationConfig(previous_observer_tokens=0)).observation.previous_observer_tokens == 0
    shared = OMConfig(share_token_budget=True, observation=ObservationConfig(buffer_tokens=False))
    assert shared.share_token_budget and not shared.async_observation_enabled and shared.buffer_tokens is None
    OMConfig(scope="resource", share_token_budget=True)
    OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=False))
    OMConfig(reflection=ReflectionConfig(start_level="auto"))


def test_auto_start_level_depends_on_model() -> None:
    assert OMConfig(reflection=ReflectionConfig(start_level="auto")).reflection_start_level() == 2
    other = ReflectionConfig(start_level="auto", model=ModelSettings(model="openai/gpt-4o-mini", temperature=0))
    assert OMConfig(reflection=other).reflection_start_level() == 1


def test_dict_round_trip_and_unknown_keys() -> None:
    config = OMConfig(
        scope="resource",
        prompt_variant="legacy",
        observation=ObservationConfig(message_tokens=12_000, instruction="Note pets."),
        reflection=ReflectionConfig(start_level=2),
    )
    assert OMConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="unknown option observation.mesage_tokens"):
        OMConfig.from_dict({"observation": {"mesage_tokens": 10}})
    with pytest.raises(ConfigError, match="unknown option colour"):
        OMConfig.from_dict({"colour": "blue"})


def test_model_given_as_string_keeps_default_sampling() -> None:
    config = OMConfig.from_dict({"observation": {"model": "scripted/om-eval"}})
    assert config.observation.model.model == "scripted/om-eval"
    assert config.observation.model.temperature == 0.3
