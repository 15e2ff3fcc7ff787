"""Answer a LongMemEval question from memory (om-reference §6.5).

The actor sees its instructions, then OM's context built *for the question date* (relative-time annotations are
computed from it), then ``Current Date: <question_date>`` + ``Question: <question>`` as the user message. It answers
on a fresh thread, so in resource scope every haystack session counts as "another conversation" and its unobserved
tail appears raw. The shipped actor configs sample at temperature 0. Memory is only read here: no observation or
reflection runs at answer time, and nothing about the question is written into memory.

An unusable reply (empty, a repetition loop, cut off) raises :class:`~om_eval.bench.answer.AnswerError`: it is not
scored and not cached.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from om_eval.bench.answer import actor_prompts, ask_actor, ask_actor_with_tools
from om_eval.bench.tool_loop import ToolStep
from om_eval.data.records import Question
from om_eval.om.config import ModelSettings
from om_eval.om.context import ContextInputs, format_other_conversations
from om_eval.om.dates import format_boundary
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel
from om_eval.om.prompts import fill, text_hash
from om_eval.systems.om.recall import RecallTools
from om_eval.systems.om.replay import Asked, asked_thread_id


def memory_messages(memory: ObservationalMemory, question: Asked) -> list[dict[str, str]]:
    """OM's context for the question date, in the memory's scope and layout."""
    return memory.wording.actor_memory_messages(actor_view(memory, question), memory.config.context_layout)


def history_messages(memory: ObservationalMemory, question: Asked) -> list[dict[str, str]]:
    """The raw messages the question's turn holds as chat history. The question's thread is fresh, so none,
    except under 1.31 in resource scope, whose turn loads every message not yet observed
    (:meth:`~ObservationalMemory.turn_history`)."""
    return memory.history_messages(asked_thread_id(question))


def raw_tail_tokens(memory: ObservationalMemory, question: Asked) -> int:
    """Tokens of the raw (unobserved) messages the actor is shown: the other-conversations text (none while the
    memory holds no observations: then no memory is shown) and any raw chat history (:func:`history_messages`)."""
    inputs = actor_view(memory, question)
    history = sum(memory.counter.count_text(m["content"]) for m in history_messages(memory, question))
    if not inputs.observations:
        return history
    text = format_other_conversations(inputs.other_conversations, line_history=inputs.line_history)
    return history + (memory.counter.count_text(text) if text else 0)


def actor_view(memory: ObservationalMemory, question: Asked) -> ContextInputs:
    """What the actor's memory messages are built from, asked on a fresh thread at the question date."""
    if memory.resource_scope:
        return memory.context_inputs(question.question_date, asked_thread_id(question))
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
    return ContextInputs(text, question.question_date, {k: v for k, v in other.items() if v},
                         rules=memory.rules, retrieval=memory.config.retrieval,
                         retrieval_instructions=memory.config.retrieval_instructions,
                         retrieval_search=memory.config.retrieval_search != "off")


def actor_messages(memory: ObservationalMemory, question: Asked,
                   renders: dict[Any, list[dict[str, str]]] | None = None) -> list[dict[str, str]]:
    """Everything the actor receives, in order.

    ``renders`` keeps the memory's messages for each question date and thread, for questions that share one
    built memory (a LoCoMo conversation's ~200): answering only reads memory, so they are the same each time.
    """
    prompts = actor_prompts()
    user = fill(prompts["question"], question_date=question.question_date_text, question=question.question)
    if renders is None:
        shown = memory_messages(memory, question)
    elif (kept := renders.get(key := (question.question_date, asked_thread_id(question)))) is not None:
        shown = kept
    else:
        shown = renders[key] = memory_messages(memory, question)
    return [
        {"role": "system", "content": prompts["instructions"]},
        *shown,
        *history_messages(memory, question),
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
    messages: tuple[dict[str, Any], ...]
    """What the actor was sent; in retrieval mode the whole exchange (its tool calls and the tool's results)."""
    tool_steps: tuple[ToolStep, ...] | None = None
    """Retrieval mode: every recall call (``None`` when the actor had no tool)."""
    context_tokens: int | None = None
    """Tokens of the memory shown before the question (its instructions and the question left out)."""


async def answer_question(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Question,
    renders: dict[Any, list[dict[str, str]]] | None = None,
) -> AnswerResult:
    """Ask the actor ``question`` with ``memory``'s context.

    Sampling comes from ``settings``; the shipped actor configs use temperature 0 (reasoning models such as
    gpt-5-mini only accept their default, so it is not forced here).

    Raises:
        AnswerError: the reply is empty, degenerate (:func:`~om_eval.bench.answer.answer_problem`) or cut off at
            the output token limit (a truncated answer would be judged as if whole); it is not cached.

    ``renders``: see :func:`actor_messages`.
    """
    messages = actor_messages(memory, question, renders)
    joined = "\n\u241e\n".join(f"{m['role']}\n{m['content']}" for m in messages)
    shown = memory.counter.count_text("".join(m["content"] for m in messages[1:-1]))
    if memory.config.retrieval != "off":
        result = await _answer_with_recall(actor, settings, memory, question, messages, text_hash(joined))
        return replace(result, context_tokens=shown)
    reply = await ask_actor(actor, messages, settings, question.question_id)
    return AnswerResult(
        reply.text.strip(), reply.prompt_tokens, reply.completion_tokens, reply.cached, text_hash(joined),
        tuple(messages), context_tokens=shown,
    )


async def _answer_with_recall(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Question,
    messages: list[dict[str, str]], prompt_hash: str,
) -> AnswerResult:
    """Retrieval mode: the actor may read raw history with the recall tool first (:mod:`~om_eval.systems.om.recall`).
    Token counts are summed over its rounds (what was read and paid for); the prompt hash is the first round's."""
    tools = await RecallTools.open(memory, question, actor)
    loop = await ask_actor_with_tools(actor, messages, settings, question.question_id, tools, memory.counter)
    return AnswerResult(loop.reply.text.strip(), loop.prompt_tokens, loop.completion_tokens, loop.reply.cached,
                        prompt_hash, loop.messages, loop.steps)
