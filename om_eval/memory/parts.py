"""What a memory system says its agent would send at a user turn, piece by piece (the harness counts and prices it)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class PromptPart:
    """One piece of the prompt an agent on some memory would send at a user turn (a memory system hands these to
    :meth:`~om_eval.memory.system.MemoryServices.record_turn`)."""

    key: Hashable
    """Equal keys mean equal text: a part is counted once per key, and consecutive turns share the parts they both
    start with (a message's id, a memory's version, the instructions' name)."""
    text: str
    head: bool = False
    """Part of the prompt's stable head: the system messages before the conversation, where a cache breakpoint
    goes. Head parts come first."""
