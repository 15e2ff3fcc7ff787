"""Models as configuration: ``om_eval/configs/model/<name>.yaml`` files (and the user's ``--config-dir``) turned
into :class:`ModelSettings`.

Each role (observer, reflector, actor, judge) names its own model; a name is either a file in the model config
group or a litellm model id (``openai/gpt-4o-mini``), which gets temperature 0 and the provider's output cap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from om_eval.configs import CONFIG_DIR, config_dirs
from om_eval.llm.request import litellm_model_id
from om_eval.om.config import ConfigError, ModelSettings

MODEL_GROUP = CONFIG_DIR / "model"


def model_file(name: str) -> Path | None:
    """The config file of model ``name``: shipped, else in the user's folder; ``None`` when neither has one."""
    return next((path for folder in config_dirs() if (path := folder / "model" / f"{name}.yaml").is_file()), None)


def known_models() -> list[str]:
    """Names of the model configs: shipped in ``om_eval/configs/model``, and in the user's ``--config-dir``."""
    return sorted({p.stem for folder in config_dirs() for p in (folder / "model").glob("*.yaml")})


def load_model_file(path: Path) -> ModelSettings:
    """Read one model config file; errors name the file and the field."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a model config must be a mapping with at least 'model'")
    unknown = sorted(set(data) - {"model", "temperature", "max_output_tokens", "provider_options"})
    if unknown:
        raise ConfigError(f"{path}: unknown field {unknown[0]!r}; allowed: model, temperature, max_output_tokens, "
                          "provider_options")
    if "model" not in data:
        raise ConfigError(f"{path}: missing field 'model' (a litellm model id such as openai/gpt-4o-mini)")
    settings = ModelSettings(**cast(dict[str, Any], data))  # every key is one of the allowed names (checked above)
    try:
        settings.validate(path.stem)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error
    return settings


def model_settings(name: str) -> ModelSettings:
    """Settings for a model config name (``local``, ``gpt-4o``...) or a bare litellm model id."""
    path = model_file(name)
    if path is not None:
        return load_model_file(path)
    if "/" in name:
        return ModelSettings(model=name, temperature=0.0, max_output_tokens=None, provider_options={})
    folders = " or ".join(str(folder / "model") for folder in config_dirs())
    raise ConfigError(
        f"model {name!r} is neither a config in {folders} ({', '.join(known_models()) or 'none found'}) "
        "nor a litellm model id like 'openai/gpt-4o-mini'"
    )


def embedding_limits(model: str) -> tuple[int | None, int | None]:
    """An embedding model's vector size and input limit in tokens, as litellm's (offline) model list gives them;
    ``(None, None)`` for a model it does not list (the local and scripted ones: ask the model once instead)."""
    found = _listed(model)
    size, limit = found.get("output_vector_size"), found.get("max_input_tokens")
    return (size if isinstance(size, int) else None, limit if isinstance(limit, int) else None)


def _listed(model: str) -> dict:
    """``model``'s entry in litellm's offline model list, under any of its spellings (``{}``: not listed)."""
    from om_eval.llm._litellm import litellm_module

    table = litellm_module().model_cost
    return table.get(model) or table.get(litellm_model_id(model)) or table.get(model.split("/", 1)[-1]) or {}


def chat_window(model: str) -> int | None:
    """A chat model's input window in tokens, as litellm's (offline) model list gives it; ``None`` for a model it
    does not list (scripted, local and self-hosted ones)."""
    limit = _listed(model).get("max_input_tokens")
    return limit if isinstance(limit, int) and limit > 0 else None
