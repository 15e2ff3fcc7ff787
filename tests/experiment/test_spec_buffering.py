"""Buffering options on the command line reach the engine config, in both scopes."""

from __future__ import annotations

from pathlib import Path

import pytest

from om_eval.experiment.spec import spec_from_config
from om_eval.om.config import ConfigError
from tests.runs import compose_run


def test_resource_scope_buffering_with_explicit_options_composes(tmp_path: Path) -> None:
    spec = spec_from_config(compose_run(tmp_path, "om.replay.buffering=true", "om.replay.scope=resource",
                                        "om.observation.buffer_tokens=0.1"))
    assert spec.om.resource_buffering and spec.om.async_observation_enabled
    assert spec.om.buffer_tokens == round(spec.om.observation.message_tokens * 0.1)


def test_explicit_buffer_options_in_resource_scope_without_buffering_name_the_switch(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="resource_buffering"):
        spec_from_config(compose_run(tmp_path, "om.replay.scope=resource", "om.observation.buffer_tokens=0.1"))


def test_default_configs_keep_the_switch_off(tmp_path: Path) -> None:
    assert not spec_from_config(compose_run(tmp_path)).om.resource_buffering
