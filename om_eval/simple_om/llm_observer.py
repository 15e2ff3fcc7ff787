"""An observer backed by a chat model: the buffer, oldest first, sent with a short prompt in our words
(``prompts/observer.toml``); one fact per line of the reply. ``memory=simple_om`` runs it by default."""

from __future__ import annotations

import tomllib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from om_eval.common.files import short_hash
from om_eval.om.prompts import fill

#: Sends chat messages to a model and returns its reply text.
Complete = Callable[[Sequence[Mapping[str, str]]], Awaitable[str]]


@lru_cache(maxsize=1)
def observer_prompts() -> dict[str, Any]:
    text = resources.files("om_eval.simple_om.prompts").joinpath("observer.toml").read_text("utf-8")
    return tomllib.loads(text)


def observer_prompt_hash() -> str:
    """Identity of the prompt file (its exact bytes)."""
    return short_hash(resources.files("om_eval.simple_om.prompts").joinpath("observer.toml").read_bytes())


def observation_lines(reply: str) -> list[str]:
    """The facts of a reply: one per non-empty line, any list marker the model added removed."""
    facts = []
    for line in reply.splitlines():
        text = line.strip().lstrip("-*•").strip()
        if text:
            facts.append(text)
    return facts


def observer_messages(buffer: Sequence[str]) -> list[dict[str, str]]:
    """What the model is sent for ``buffer``."""
    prompts = observer_prompts()
    return [{"role": "system", "content": prompts["instructions"]},
            {"role": "user", "content": fill(prompts["task"], buffer="\n\n".join(buffer))}]


def buffer_of(messages: Sequence[Mapping[str, str]]) -> str | None:
    """The buffer text of a request :func:`observer_messages` made, else ``None`` (the scripted model reads it)."""
    heading = observer_prompts()["task"].split("{buffer}", 1)[0]
    user = messages[-1]["content"] if messages else ""
    return user[len(heading):] if heading and user.startswith(heading) else None


def llm_observer(complete: Complete) -> Callable[[list[str]], Awaitable[list[str]]]:
    """An observer that asks ``complete`` for the facts of each buffer."""

    async def observe(buffer: list[str]) -> list[str]:
        return observation_lines(await complete(observer_messages(buffer)))

    return observe
