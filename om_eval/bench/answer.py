"""Answer a LongMemEval question from memory (om-reference §6.5).

The actor sees its instructions, then OM's context built *for the question date* (relative-time annotations
are computed from it), then ``Current Date: <question_date>`` + ``Question: <question>`` as the user message. It answers on a fresh thread, so in resource scope every haystack session counts as "another
conversation" and its unobserved tail appears raw. The shipped actor configs sample at temperature 0. Memory is
only read here: no observation or reflection runs
at answer time, and nothing about the question is written into memory.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from om_eval.data.records import Question
from om_eval.om.config import ModelSettings
from om_eval.om.context import ContextInputs, build_actor_context
from om_eval.om.dates import format_boundary
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel
from om_eval.om.prompts import fill, text_hash


@lru_cache(maxsize=1)
def actor_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.bench.prompts").joinpath("actor.toml").read_text("utf-8"))


def actor_prompt_hash() -> str:
    """Identity of the actor's prompt file (its exact bytes)."""
    import hashlib

    data = resources.files("om_eval.bench.prompts").joinpath("actor.toml").read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def eval_thread_id(question: Question) -> str:
    """The fresh thread the question is asked on (never part of the replayed memory)."""
    return f"eval:{question.question_id}"


def memory_messages(memory: ObservationalMemory, question: Question) -> list[dict[str, str]]:
    """OM's context for the question date, in the memory's scope and layout."""
    if memory.resource_scope:
        return memory.build_context(question.question_date, eval_thread_id(question)).messages
    # Thread scope keeps one memory per session; the actor sees them all, oldest first, as one memory.
    records = sorted(
        (memory.record(t) for t in memory.thread_ids if memory.record(t).active_observations.strip()),
        key=lambda r: (r.last_observed_at is None, r.last_observed_at),
    )
    text = "".join(
        (format_boundary(r.last_observed_at) if i and r.last_observed_at else "\n\n" if i else "")
        + r.active_observations
        for i, r in enumerate(records)
    )
    other = {memory.shown_thread_id(t): memory.unobserved_messages(t) for t in memory.thread_ids}
    inputs = ContextInputs(text, question.question_date, {k: v for k, v in other.items() if v})
    return build_actor_context(inputs, memory.config.context_layout)


def actor_messages(memory: ObservationalMemory, question: Question) -> list[dict[str, str]]:
    """Everything the actor receives, in order."""
    prompts = actor_prompts()
    user = fill(prompts["question"], question_date=question.question_date_text, question=question.question)
    return [
        {"role": "system", "content": prompts["instructions"]},
        *memory_messages(memory, question),
        {"role": "user", "content": user},
    ]


@dataclass(frozen=True)
class AnswerResult:
    """The actor's answer and what it cost."""

    hypothesis: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached: bool
    prompt_hash: str
    """Identity of the full actor prompt (all messages), for traceability."""
    messages: tuple[dict[str, str], ...]


async def answer_question(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Question
) -> AnswerResult:
    """Ask the actor ``question`` with ``memory``'s context.

    Sampling comes from ``settings``; the shipped actor configs use temperature 0 (reasoning models such as
    gpt-5-mini only accept their default, so it is not forced here).
    """
    messages = actor_messages(memory, question)
    reply = await actor.complete(messages, stage="actor", settings=settings)
    joined = "\n\u241e\n".join(f"{m['role']}\n{m['content']}" for m in messages)
    return AnswerResult(
        reply.text.strip(), reply.prompt_tokens, reply.completion_tokens, reply.cached, text_hash(joined),
        tuple(messages),
    )
