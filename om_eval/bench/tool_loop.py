"""The actor with tools: it may call a system's tools before it answers (:class:`~om_eval.memory.system.ActorTools`;
OM's ``recall`` in retrieval mode is one, 1.31's agent loop).

Each round is one model call through the same client as every other call (cached, in the ledger): the first is
stage ``actor``, the ones that follow tool results stage ``recall``, so a report can say what reading raw history
cost. The model's tool calls are run by the tools and their results appended as tool messages. ``call_budget``
caps the tool calls of one question and ``token_budget`` the tokens the loop adds to the prompt (the calls echoed
back and their results): a call past either gets an error result telling the model to answer, and a model that
asks again after that has its question fail (an error, retried on resume, never scored). Of a reply with more calls
than the budget has room for, the calls that fit run, the next gets the budget error (saying how many more were
dropped) and the rest are left out of the conversation, so the next prompt stays small. Results are cut at the
tools' ``result_token_cap`` tokens, and echoed arguments past
:data:`~om_eval.om.recall.limits.MAX_ARGUMENTS_CHARS` characters are replaced by a note.

Every call is kept as a :class:`ToolStep` (arguments, the result's size, any error), stored with the item.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from om_eval.memory.system import ActorTools
from om_eval.om.config import ModelSettings
from om_eval.om.model import ChatModel, ModelReply, ToolCall, complete_checked
from om_eval.om.recall.limits import MAX_ARGUMENTS_CHARS, bound_result, shown
from om_eval.om.recall.schema import TOOL_NAME
from om_eval.om.tokens import TokenCounter

DEFAULT_BUDGET = 8
DEFAULT_TOKEN_BUDGET = 40_000
"""Tokens (the run's counter) the tool loop may add to one question's prompt: the calls echoed back and their
results. Sized for OM's recall tool, the one built in: it cuts each page, part chunk and search result to 2,000
tokens of its own estimate, which any
shipped counter puts at 3,700 at most with the JSON (emoji-dense text in ``o200k_base``). So eight calls
(:data:`DEFAULT_BUDGET`) of the largest results stay under 30,000 and never reach the budget, while a fifth result
at :data:`~om_eval.om.recall.limits.RESULT_TOKEN_CAP` does not fit. Refusals past it add one short line per call."""
MAX_ERROR_CHARS = 500
"""The most of an exception's message a tool error repeats (and a :class:`ToolStep` keeps)."""
MAX_CALL_ID_CHARS = 128
"""A call id past this (providers use ~30 characters) is replaced by ``call_<round>_<index>`` in the conversation."""


@dataclass(frozen=True)
class ToolStep:
    """One tool call: the round it was asked in, what was asked, and what came back."""

    round: int
    call_id: str
    name: str
    arguments: str
    result_chars: int
    result_tokens: int
    error: str | None = None
    """``bad_arguments``, ``unknown_tool``, ``tool_error: <message>`` (the tool refused, as 1.31 does),
    ``tool_failure: <exception type>`` (the tool broke on the call) or ``budget``; ``None`` when it ran."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LoopResult:
    reply: ModelReply
    messages: tuple[dict[str, Any], ...]
    steps: tuple[ToolStep, ...]
    prompt_tokens: int | None
    completion_tokens: int | None


class RecallLoopError(RuntimeError):
    """The model kept calling the tool after its budget was used up."""


def error_text(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _echoed(call: ToolCall, round_: int, index: int) -> ToolCall:
    """``call`` as the conversation repeats it to the model: an over-long id, name or arguments replaced or cut
    (arguments by a JSON note, so a provider that parses them still can)."""
    call_id = call.id if len(call.id) <= MAX_CALL_ID_CHARS else f"call_{round_}_{index}"
    arguments = call.arguments
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        arguments = json.dumps({"omitted": f"{len(arguments):,} characters of arguments, over the "
                                           f"{MAX_ARGUMENTS_CHARS:,}-character limit"})
    return ToolCall(call_id, shown(call.name), arguments)


async def run_tool_loop(
    actor: ChatModel, settings: ModelSettings, messages: Sequence[dict[str, Any]], tools: ActorTools, *,
    check: Any, counter: TokenCounter,
) -> LoopResult:
    """Ask the actor with ``tools`` offered until it answers, running each call it makes (module docstring)."""
    budget, token_budget = tools.call_budget, tools.token_budget
    definitions = [dict(d) for d in tools.definitions]
    conversation = [dict(m) for m in messages]
    steps: list[ToolStep] = []
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    added_tokens = 0  # what the loop has added to the prompt (calls echoed, results), in ``counter``'s tokens
    exhausted: str | None = None  # the budget used up ("8 calls", "32,000 tokens"), once the model was told
    round_ = 0
    while True:
        reply = await complete_checked(actor, conversation, stage="actor" if round_ == 0 else "recall",
                                       settings=settings, check=check, complete_only=True, tools=definitions)
        prompt_tokens = None if prompt_tokens is None or reply.prompt_tokens is None else \
            prompt_tokens + reply.prompt_tokens
        completion_tokens = None if completion_tokens is None or reply.completion_tokens is None else \
            completion_tokens + reply.completion_tokens
        if not reply.tool_calls:
            return LoopResult(reply, tuple(conversation), tuple(steps), prompt_tokens, completion_tokens)
        if exhausted:
            raise RecallLoopError(f"the actor called {TOOL_NAME} again after its budget of {exhausted} was used up "
                                  "and it was told to answer")
        # The calls that fit the budget, and the first past it (told to answer); the rest are dropped.
        kept = reply.tool_calls[:max(budget - len(steps), 0) + 1]
        dropped = len(reply.tool_calls) - len(kept)
        echoed = [_echoed(call, round_, index) for index, call in enumerate(kept)]
        conversation.append({"role": "assistant", "content": reply.text,
                             "tool_calls": [call.to_dict() for call in echoed]})
        added_tokens += counter.count_text(reply.text + "".join(call.arguments for call in echoed))
        for call, shown_call in zip(kept, echoed):
            error: str | None
            if exhausted is None and len(steps) >= budget:
                exhausted = f"{budget} calls"
            if exhausted is None:
                text, error = await tools.call(call)
                text = bound_result(text, counter.count_text, tools.result_token_cap)
                if added_tokens + counter.count_text(text) > token_budget:
                    exhausted = f"{token_budget:,} tokens"
            if exhausted is not None:
                text, error = _budget_text(exhausted, dropped), "budget"
            tokens = counter.count_text(text)
            added_tokens += tokens
            steps.append(ToolStep(round_, shown_call.id, shown_call.name, shown(call.arguments, MAX_ARGUMENTS_CHARS),
                                  len(text), tokens, error))
            conversation.append({"role": "tool", "tool_call_id": shown_call.id, "content": text})
        round_ += 1


def _budget_text(exhausted: str, dropped: int) -> str:
    """The result of a call past the budget (``exhausted``: "8 calls" or "32,000 tokens")."""
    more = f" ({dropped:,} more calls in this reply were not run)" if dropped else ""
    return error_text(f"the {TOOL_NAME} budget of {exhausted} for this question is used up: answer now from what "
                       f"you have{more}")


def steps_json(steps: Sequence[ToolStep]) -> str:
    """The steps as stored with the item."""
    return json.dumps([s.to_dict() for s in steps], ensure_ascii=False)

