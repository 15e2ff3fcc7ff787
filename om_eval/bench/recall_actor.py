"""The actor in retrieval mode: it may call the ``recall`` tool before it answers (om.retrieval; 1.31's agent loop).

Each round is one model call through the same client as every other call (cached, in the ledger): the first is
stage ``actor``, the ones that follow tool results stage ``recall``, so a report can say what reading raw history
cost. The model's tool calls are run against the memory's stored messages (:meth:`~ObservationalMemory.
recall_history`: ids as models see them, nothing of the benchmark's labels) and their results appended as tool
messages. ``budget`` caps the tool calls of one question: calls past it get an error result telling the model to
answer, and a model that asks again after that has its question fail (an error, retried on resume, never scored).

Every call is kept as a :class:`ToolStep` (arguments, the result's size, any error), stored with the item.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

from om_eval.bench.replay import eval_thread_id
from om_eval.data.records import Question
from om_eval.om.config import ModelSettings
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel, ModelReply, ToolCall, complete_checked
from om_eval.om.recall.schema import TOOL_NAME, RecallScope, tool_definition
from om_eval.om.recall.search import EmbeddingGroupSearch
from om_eval.om.recall.tool import RecallError, recall, result_json
from om_eval.om.tokens import TokenCounter

DEFAULT_BUDGET = 8


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
    """``bad_arguments``, ``unknown_tool``, ``tool_error: <message>`` or ``budget``; ``None`` when it ran."""

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


def _run_call(call: ToolCall, memory: ObservationalMemory, question: Question, history: Any,
              search: Any = None) -> tuple[str, str | None]:
    """The tool's reply to ``call`` (JSON text, as the model reads it) and the error kind, if any."""
    if call.name != TOOL_NAME:
        return json.dumps({"error": f"unknown tool {call.name!r}; the only tool is {TOOL_NAME!r}"}), "unknown_tool"
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as error:
        return json.dumps({"error": f"the arguments are not valid JSON ({error}); send a JSON object"}), \
            "bad_arguments"
    if not isinstance(arguments, dict):
        return json.dumps({"error": "the arguments must be a JSON object"}), "bad_arguments"
    scope = cast(RecallScope, memory.config.retrieval)  # the recall loop runs in retrieval mode only: not "off"
    try:
        result = recall(history, arguments, thread_id=memory.shown_thread_id(eval_thread_id(question)),
                        resource_id=memory.resource_id, scope=scope, search=search)
    except RecallError as error:
        return json.dumps({"error": str(error)}, ensure_ascii=False), f"tool_error: {error}"
    return result_json(result), None


async def run_recall_loop(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Question,
    messages: Sequence[dict[str, Any]], *, check: Any, counter: TokenCounter, budget: int = DEFAULT_BUDGET,
) -> LoopResult:
    """Ask the actor with the tool offered until it answers (see the module docstring)."""
    history = memory.recall_history(eval_thread_id(question), question.question_date)
    searching = memory.config.retrieval_search != "off"
    search = await _search_index(memory, actor) if searching else None
    scope = cast(RecallScope, memory.config.retrieval)  # called in retrieval mode only: not "off"
    tools = [tool_definition(scope, searching)]
    conversation = [dict(m) for m in messages]
    steps: list[ToolStep] = []
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    exhausted = False
    round_ = 0
    while True:
        reply = await complete_checked(actor, conversation, stage="actor" if round_ == 0 else "recall",
                                       settings=settings, check=check, complete_only=True, tools=tools)
        prompt_tokens = None if prompt_tokens is None or reply.prompt_tokens is None else \
            prompt_tokens + reply.prompt_tokens
        completion_tokens = None if completion_tokens is None or reply.completion_tokens is None else \
            completion_tokens + reply.completion_tokens
        if not reply.tool_calls:
            return LoopResult(reply, tuple(conversation), tuple(steps), prompt_tokens, completion_tokens)
        if exhausted:
            raise RecallLoopError(f"the actor called {TOOL_NAME} again after its budget of {budget} calls was used "
                                  "up and it was told to answer")
        conversation.append({"role": "assistant", "content": reply.text,
                             "tool_calls": [call.to_dict() for call in reply.tool_calls]})
        for call in reply.tool_calls:
            if len(steps) >= budget:
                exhausted = True
                text = json.dumps({"error": f"the {TOOL_NAME} budget of {budget} calls for this question is used "
                                            "up: answer now from what you have"})
                error: str | None = "budget"
            else:
                await _prepare_search(search, call)
                text, error = _run_call(call, memory, question, history, search)
            steps.append(ToolStep(round_, call.id, call.name, call.arguments, len(text), counter.count_text(text),
                                  error))
            conversation.append({"role": "tool", "tool_call_id": call.id, "content": text})
        round_ += 1


async def _search_index(memory: ObservationalMemory, client: Any) -> Any:
    """The index ``om.retrieval_search`` asks for: BM25 offline, or embeddings through ``client`` (the litellm
    client, the only model here that can embed)."""
    config = memory.config
    if config.retrieval_search == "bm25":
        return memory.recall_search_index()
    if not callable(getattr(client, "embed", None)):
        raise TypeError(f"om.retrieval_search=embedding needs a client that can embed (the litellm client); "
                        f"{type(client).__name__} cannot: use om.retrieval_search=bm25")
    return await EmbeddingGroupSearch.build(memory.recall_search_groups(), client, config.retrieval_embedding_model)


async def _prepare_search(search: Any, call: ToolCall) -> None:
    """Embed a search call's query before the (synchronous) tool runs it; other calls need nothing."""
    if search is None:
        return
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return
    if isinstance(arguments, dict) and arguments.get("mode") == "search" and isinstance(arguments.get("query"), str):
        await search.prepare(arguments["query"])


def steps_json(steps: Sequence[ToolStep]) -> str:
    """The steps as stored with the item."""
    return json.dumps([s.to_dict() for s in steps], ensure_ascii=False)

