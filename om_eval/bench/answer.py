"""The actor's answer, whatever memory it was shown: its prompt file, the call, and the checks that refuse an
unusable reply.

Why an unusable answer raises: an empty reply or a repetition loop is a model failure, not a wrong answer.
Scoring it would count the failure against the memory system, so :func:`ask_actor` raises :class:`AnswerError`
instead, and the reply is never cached (a re-run asks the actor again).
"""

from __future__ import annotations

import tomllib
import zlib
from functools import lru_cache
from importlib import resources
from typing import Any

from om_eval.bench.tool_loop import LoopResult, run_tool_loop
from om_eval.common.files import short_hash
from om_eval.memory.system import ActorTools
from om_eval.om.config import ModelSettings
from om_eval.om.model import CUT_OFF, ChatModel, ModelReply, complete_checked, cut_off
from om_eval.om.reply_lines import DEGENERATE_MIN_CHARS, detect_degenerate
from om_eval.om.tokens import TokenCounter


@lru_cache(maxsize=1)
def actor_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.bench.prompts").joinpath("actor.toml").read_text("utf-8"))


def actor_prompt_hash() -> str:
    """Identity of the actor's prompt file (its exact bytes)."""
    return short_hash(resources.files("om_eval.bench.prompts").joinpath("actor.toml").read_bytes())


class AnswerError(RuntimeError):
    """The actor's reply cannot be scored (empty, or a repetition loop). Names the question and the problem."""

    def __init__(self, question_id: str, model: str, problem: str, reply: str) -> None:
        super().__init__(
            f"the actor ({model}) gave {problem} for question {question_id}; it was not scored and not cached. "
            f"Re-run the question to ask again, or check the actor model. First 200 characters: {reply[:200]!r}"
        )
        self.question_id = question_id
        self.model = model
        self.problem = problem
        self.reply = reply


MIN_COMPRESSED_SHARE = 0.05
"""A long reply that zlib squeezes below this share of its size is a repetition loop.

Why besides Mastra's detector: that one samples 50 windows at a fixed step, so a loop whose period shares no
factor with the step (a 69-character sentence repeated 60 times) yields 50 distinct windows and passes. zlib
finds repeats of any period: a passage repeated n times compresses to about half of 1/n, so ten or more repeats
fall under 5 %, while prose stays near 45 % and even a 600-row templated table near 9 %. Only replies of at
least ``DEGENERATE_MIN_CHARS`` characters are measured.
"""


def _compressed_share(text: str) -> float:
    data = text.encode("utf-8")
    return len(zlib.compress(data, 9)) / len(data)


def answer_problem(text: str) -> str | None:
    """What makes an actor reply unusable (``"an empty reply"``, ``"a degenerate reply ..."``), or ``None``."""
    if not text.strip():
        return "an empty reply"
    if detect_degenerate(text) or (
        len(text) >= DEGENERATE_MIN_CHARS and _compressed_share(text) < MIN_COMPRESSED_SHARE
    ):
        return "a degenerate reply (a repetition loop)"
    return None


async def ask_actor(
    actor: ChatModel, messages: list[dict[str, str]], settings: ModelSettings, question_id: str
) -> ModelReply:
    """The actor's reply to ``messages``; :class:`AnswerError` when it is empty, degenerate or cut off."""
    reply = await complete_checked(actor, messages, stage="actor", settings=settings, check=answer_problem,
                                   complete_only=True)
    problem = CUT_OFF if cut_off(reply) else answer_problem(reply.text)
    if problem is not None:
        raise AnswerError(question_id, settings.model, problem, reply.text)
    return reply


async def ask_actor_with_tools(
    actor: ChatModel, messages: list[dict[str, str]], settings: ModelSettings, question_id: str, tools: ActorTools,
    counter: TokenCounter,
) -> LoopResult:
    """The actor's answer when it may call ``tools`` first (:func:`~om_eval.bench.tool_loop.run_tool_loop`);
    :class:`AnswerError` as :func:`ask_actor`."""
    loop = await run_tool_loop(actor, settings, messages, tools, check=answer_problem, counter=counter)
    problem = CUT_OFF if cut_off(loop.reply) else answer_problem(loop.reply.text)
    if problem is not None:
        raise AnswerError(question_id, settings.model, problem, loop.reply.text)
    return loop
