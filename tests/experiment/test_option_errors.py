"""An invalid option is named by the path it has in the run config, from the option the engine reports, not from
its message's text."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.experiment.spec import cli_option, spec_from_config
from om_eval.om.config import ConfigError, option_error
from tests.runs import compose_run


@pytest.mark.parametrize(("override", "named"), [
    ("om.observation.message_tokens=-5", "om.observation.message_tokens=-5 is invalid"),
    ("om.reply_checks=lenient", "om.reply_checks='lenient' is invalid"),
    ("om.replay.pending_accounting=often", "om.replay.pending_accounting='often' is invalid"),
    ("prompt.variant=shouty", "prompt.variant='shouty' is invalid"),
    ("models.observer.temperature=7", "models.observer.temperature=7.0 is invalid"),
])
def test_the_error_names_the_run_config_path(tmp_path: Path, override: str, named: str) -> None:
    cfg = compose_run(tmp_path, override, experiment="smoke")
    with pytest.raises(ConfigError) as caught:
        spec_from_config(OmegaConf.to_container(cfg, resolve=True))
    assert str(caught.value).startswith(named)
    assert caught.value.option == named.split("=")[0]


def test_an_error_about_no_single_option_is_left_as_it_is() -> None:
    plain = ConfigError("the config must be a mapping")
    assert plain.at("om.x") is plain
    moved = option_error("scope", "='x' is invalid").at(cli_option("scope"))
    assert str(moved) == "om.replay.scope='x' is invalid" and moved.detail == "='x' is invalid"
    assert cli_option("observation.model.temperature") == "models.observer.temperature"
    assert cli_option("observation.message_tokens") == "om.observation.message_tokens"


def test_a_model_can_be_sent_no_temperature(tmp_path: Path) -> None:
    # 1.31 sends none to the models its registry marks so (gpt-5-mini, o3-mini, ...): null reproduces it.
    cfg = compose_run(tmp_path, "models.observer.temperature=null", experiment="smoke")
    spec = spec_from_config(OmegaConf.to_container(cfg, resolve=True))
    assert spec.om.observation.model.temperature is None
    default = spec_from_config(OmegaConf.to_container(compose_run(tmp_path, experiment="smoke"), resolve=True))
    assert spec.config_hash != default.config_hash
