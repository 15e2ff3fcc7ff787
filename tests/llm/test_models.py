"""Model configs: every shipped file is valid; names and ids resolve; bad files name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from om_eval.llm.models import MODEL_GROUP, known_models, load_model_file, model_settings
from om_eval.om.config import ConfigError


def test_required_model_configs_exist() -> None:
    assert {"local", "scripted", "gpt-4o", "gpt-4o-mini", "gemini-2.5-flash", "gpt-4o-judge"} <= set(known_models())


@pytest.mark.parametrize("name", known_models())
def test_every_model_config_is_valid(name: str) -> None:
    settings = model_settings(name)
    assert "/" in settings.model


def test_recommended_parameters() -> None:
    judge = model_settings("gpt-4o-judge")
    assert judge.model == "openai/gpt-4o-2024-08-06" and judge.temperature == 0 and judge.max_output_tokens == 10
    flash = model_settings("gemini-2.5-flash")
    assert flash.provider_options["google"]["thinkingConfig"]["thinkingBudget"] == 215
    assert model_settings("local").model == "local/qwen2.5-coder-1.5b"


def test_bare_ids_and_unknown_names() -> None:
    assert model_settings("anthropic/claude-sonnet-4-5").temperature == 0
    with pytest.raises(ConfigError, match="model 'gtp-4o' is neither a config"):
        model_settings("gtp-4o")


def test_bad_files_name_file_and_field(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text("model: openai/gpt-4o\ntemprature: 0\n")
    with pytest.raises(ConfigError, match="typo.yaml: unknown field 'temprature'"):
        load_model_file(typo)
    hot = tmp_path / "hot.yaml"
    hot.write_text("model: openai/gpt-4o\ntemperature: 5\n")
    with pytest.raises(ConfigError, match=r"hot.yaml: hot.temperature=5 is invalid"):
        load_model_file(hot)
    assert MODEL_GROUP.is_dir()
