"""What of an engine config a memory key sees (the engine's tests check which settings stay out of it)."""

from __future__ import annotations

from typing import Any

from om_eval.common.run_identity import MEMORY_KEY_RULE
from om_eval.om.config import OMConfig


def memory_view(config: OMConfig) -> dict[str, Any]:
    """``config``'s settings as its memory key holds them."""
    return MEMORY_KEY_RULE.view({"om": config.to_dict()})["om"]
