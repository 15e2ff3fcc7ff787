"""What the library adapters (mem0, Graphiti) share: per-turn prompts of an agent on a searching library's memory
(for the per-turn cost table), texts cut to the embedding model's limit, and a warning for an unpinned release.

Such an agent, at every user message, searches the memory with the message and sends the harness's instructions,
what the search found (as the actor is shown it at answer time), the day's date, the session's messages so far and
the message. A library adds a session when it ends (as the harness replays it), so the search at a message of
session *k* sees the memory of the sessions before *k*; the library's own model calls for session *k* are charged
to the turns that follow them, as the harness's recorder charges any memory call.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from om_eval.bench.seam import seam_actor_prompts
from om_eval.memory.parts import PromptPart
from om_eval.memory.system import TURN_SPACING
from om_eval.memory.view import SessionView
from om_eval.om.prompts import fill

__all__ = ["SearchedTurns", "fit_to_limit", "installed_version", "warn_unpinned"]

#: Of an embedding model's input limit, what a text may use: the run's tokenizer is not the embedding model's.
LIMIT_SHARE = 0.9


def fit_to_limit(services: Any, text: str, limit: int | None) -> str:
    """``text`` cut to the embedding model's input limit (its start kept), when it has one and the text passes it
    (a hosted embedder refuses a longer text, which would fail the build)."""
    if limit is None:
        return text
    budget = int(limit * LIMIT_SHARE)
    if services.count_tokens(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix within the budget
        middle = (low + high + 1) // 2
        if services.count_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def installed_version(package: str) -> str | None:
    """The installed release of ``package`` (``None``: not installed)."""
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def warn_unpinned(system: str, package: str, pinned: str) -> None:
    """Warn when the installed ``package`` is not the release the adapter of ``system`` follows (the extra pins
    it; another release may change the prompts, the schemas or the hooks the adapter replaces)."""
    installed = installed_version(package)
    if installed is not None and installed != pinned:
        warnings.warn(f"memory={system} follows {package} {pinned}; {installed} is installed (pip install "
                      f"'om-eval[{system}]' installs the pinned release)", RuntimeWarning, stacklevel=2)


class SearchedTurns:
    """Records one session's user turns, given what the memory's search found for each."""

    def __init__(self) -> None:
        prompts = seam_actor_prompts()
        self.instructions = PromptPart("instructions", prompts["instructions"], head=True)
        self._template = prompts["memory"]

    @staticmethod
    def user_messages(session: SessionView) -> list[str]:
        """The session's user messages, in order: the searches to run (one block each, for :meth:`record`)."""
        return [turn.content for turn in session.turns if turn.role == "user"]

    def record(self, services: Any, session: SessionView, found: Sequence[str]) -> None:
        """Record the session's user turns; ``found[i]`` is the memory text the search gave its ``i``-th user
        message (empty: nothing found, no memory block)."""
        blocks = iter(found)
        said: list[PromptPart] = []
        for position, turn in enumerate(session.turns):
            part = PromptPart(("message", session.id, position), turn.content)
            if turn.role == "user":
                block = next(blocks, "")
                at = session.date + TURN_SPACING * position
                shown = [PromptPart(("memory", hashlib.sha256(block.encode()).hexdigest()),
                                    fill(self._template, memory=block), head=True)] if block else []
                day = PromptPart(("date", at.date()), f"Current Date: {at:%Y/%m/%d (%a)}", head=True)
                following = session.turns[position + 1] if position + 1 < len(session.turns) else None
                reply = PromptPart(("message", session.id, position + 1), following.content) \
                    if following is not None and following.role == "assistant" else None
                services.record_turn([self.instructions, *shown, day, *said, part], at=at, reply=reply)
            said.append(part)
