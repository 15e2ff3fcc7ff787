"""Prompt texts as versioned data: one TOML file per prompt family, each with an ``id``.

Placeholders are written ``{name}`` and filled with :func:`fill` (plain replacement, so other braces are safe).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

from om_eval.common.files import short_hash

PROMPT_FILES = (
    "observer_shared",
    "observer_current",
    "observer_current_v1_3",
    "observer_legacy",
    "observer_condensed",
    "observer_request",
    "reflector",
    "context",
)
#: Read only in retrieval mode (``om.retrieval``), so they are hashed into those runs' identity alone.
RETRIEVAL_PROMPT_FILES = ("recall",)


@cache
def load_prompts(name: str) -> dict[str, Any]:
    """The parsed contents of ``<name>.toml``; raises ``FileNotFoundError`` naming the file when missing."""
    if name not in PROMPT_FILES + RETRIEVAL_PROMPT_FILES:
        known = ", ".join(PROMPT_FILES + RETRIEVAL_PROMPT_FILES)
        raise FileNotFoundError(f"no prompt file {name}.toml; known: {known}")
    text = resources.files(__name__).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def fill(template: str, **values: object) -> str:
    """Replace each ``{key}`` in ``template`` by its value."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", str(value))
    return template


def text_hash(text: str) -> str:
    """Short, stable identity of a rendered prompt (first 16 hex digits of its sha256)."""
    return short_hash(text)


def prompt_set_hash(names: tuple[str, ...] = PROMPT_FILES) -> str:
    """Identity of the prompt files ``names`` (their exact bytes): changes to any wording change it."""
    parts = []
    for name in names:
        parts += [name.encode("utf-8"), b"\0", resources.files(__name__).joinpath(f"{name}.toml").read_bytes(), b"\0"]
    return short_hash(b"".join(parts))
