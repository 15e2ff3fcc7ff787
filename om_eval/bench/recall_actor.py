"""The actor in retrieval mode: it may call the ``recall`` tool before it answers (om.retrieval; 1.31's agent loop).

Each round is one model call through the same client as every other call (cached, in the ledger): the first is
stage ``actor``, the ones that follow tool results stage ``recall``, so a report can say what reading raw history
cost. The model's tool calls are run against the memory's stored messages (:meth:`~ObservationalMemory.
recall_history`: ids as models see them, nothing of the benchmark's labels) and their results appended as tool
messages. ``budget`` caps the tool calls of one question and ``token_budget`` the tokens the loop adds to the
prompt (the calls echoed back and their results): a call past either gets an error result telling the model to
answer, and a model that asks again after that has its question fail (an error, retried on resume, never scored).
Of a reply with more calls than the budget has room for, the calls that fit run, the next gets the budget error
(saying how many more were dropped) and the rest are left out of the conversation, so the next prompt stays small.

Nothing one call asks for ends the question. Arguments past the limits of :mod:`om_eval.om.recall.limits` (too
long, too deep, a number past JavaScript's safe range) are refused before the tool runs, and any exception the tool
raises on a call becomes that call's error result. The model reads either, cut to a bounded size, and goes on.
A reply whose call failed that way is cached like any other; on resume it gets the same error result, and the
question goes on from there instead of failing again. Results are cut at
:data:`~om_eval.om.recall.limits.RESULT_TOKEN_CAP` tokens, and echoed arguments past
:data:`~om_eval.om.recall.limits.MAX_ARGUMENTS_CHARS` characters are replaced by a note.
The embedding of a ``mode="search"`` query counts as part of its call when the call is at fault (a query the
request cannot carry, or that the provider refuses with HTTP 400, 413 or 422). Any other failure of the embedding
model (rate limits, outages, keys) is a failed model call, and the question fails and is retried on resume.

Every call is kept as a :class:`ToolStep` (arguments, the result's size, any error), stored with the item.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

from om_eval.bench.replay import Asked, asked_thread_id
from om_eval.llm.client import LLMCallError
from om_eval.memory.system import ActorTools
from om_eval.om.config import ModelSettings
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel, ModelReply, ToolCall, complete_checked
from om_eval.om.recall.limits import (
    MAX_ARGUMENTS_CHARS,
    RESULT_TOKEN_CAP,
    ArgumentsRefused,
    bound_result,
    parse_arguments,
    shown,
)
from om_eval.om.recall.schema import TOOL_NAME, RecallScope, tool_definition
from om_eval.om.recall.search import EmbeddingGroupSearch
from om_eval.om.recall.tool import RecallError, recall, result_json
from om_eval.om.tokens import TokenCounter

logger = logging.getLogger(__name__)

DEFAULT_BUDGET = 8
DEFAULT_TOKEN_BUDGET = 40_000
"""Tokens (the run's counter) the tool loop may add to one question's prompt: the calls echoed back and their
results. The tool cuts each page, part chunk and search result to 2,000 tokens of its own estimate, which any
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


def _error_text(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _run_call(call: ToolCall, memory: ObservationalMemory, question: Asked, history: Any,
              search: Any = None) -> tuple[str, str | None]:
    """The tool's reply to ``call`` (JSON text, as the model reads it) and the error kind, if any. Never raises for
    anything in the call: see the module docstring."""
    if call.name != TOOL_NAME:
        return _error_text(f"unknown tool {shown(call.name)!r}; the only tool is {TOOL_NAME!r}"), "unknown_tool"
    try:
        arguments = parse_arguments(call.arguments)
    except ArgumentsRefused as refused:
        return _error_text(str(refused)), "bad_arguments"
    scope = cast(RecallScope, memory.config.retrieval)  # the recall loop runs in retrieval mode only: not "off"
    try:
        result = recall(history, arguments, thread_id=memory.shown_thread_id(asked_thread_id(question)),
                        resource_id=memory.resource_id, scope=scope, search=search)
        return result_json(result), None
    except RecallError as error:
        return _error_text(str(error)), f"tool_error: {shown(str(error), MAX_ERROR_CHARS)}"
    except Exception as error:  # any failure on one call is that call's result, never the question's end
        kind = type(error).__name__
        logger.warning("recall call %s of question %s failed (%s); the model gets it as the call's error",
                       shown(call.id), question.question_id, kind)
        return _error_text(f"the {TOOL_NAME} tool failed on these arguments ({kind}: "
                           f"{shown(str(error), MAX_ERROR_CHARS)}); check them against the tool's schema, or answer "
                           "from what you have"), f"tool_failure: {kind}"


class RecallTools:
    """OM's ``recall`` tool over one memory, for one question (``om.retrieval``): what the harness's tool loop
    (:func:`run_tool_loop`) offers the actor. Build it with :meth:`open` (an embedding search embeds the memory's
    observation groups first)."""

    result_token_cap = RESULT_TOKEN_CAP

    def __init__(self, memory: ObservationalMemory, question: Asked, search: Any = None, *,
                 call_budget: int = DEFAULT_BUDGET, token_budget: int = DEFAULT_TOKEN_BUDGET) -> None:
        self.memory = memory
        self.question = question
        self.search = search
        self.call_budget = call_budget
        self.token_budget = token_budget
        self.history = memory.recall_history(asked_thread_id(question), question.question_date)
        scope = cast(RecallScope, memory.config.retrieval)  # offered in retrieval mode only: not "off"
        searching = memory.config.retrieval_search != "off"
        self.definitions: Sequence[Mapping[str, Any]] = [tool_definition(scope, searching)]

    @classmethod
    async def open(cls, memory: ObservationalMemory, question: Asked, client: Any, **budgets: int) -> RecallTools:
        """The tool, with the search index ``om.retrieval_search`` asks for (embedded through ``client``)."""
        search = await _search_index(memory, client) if memory.config.retrieval_search != "off" else None
        return cls(memory, question, search, **budgets)

    async def call(self, call: ToolCall) -> tuple[str, str | None]:
        unembedded = await _prepare_search(self.search, call)
        return unembedded or _run_call(call, self.memory, self.question, self.history, self.search)


def _echoed(call: ToolCall, round_: int, index: int) -> ToolCall:
    """``call`` as the conversation repeats it to the model: an over-long id, name or arguments replaced or cut
    (arguments by a JSON note, so a provider that parses them still can)."""
    call_id = call.id if len(call.id) <= MAX_CALL_ID_CHARS else f"call_{round_}_{index}"
    arguments = call.arguments
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        arguments = json.dumps({"omitted": f"{len(arguments):,} characters of arguments, over the "
                                           f"{MAX_ARGUMENTS_CHARS:,}-character limit"})
    return ToolCall(call_id, shown(call.name), arguments)


async def run_recall_loop(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Asked,
    messages: Sequence[dict[str, Any]], *, check: Any, counter: TokenCounter, budget: int = DEFAULT_BUDGET,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
) -> LoopResult:
    """Ask the actor with OM's recall tool offered until it answers (see the module docstring)."""
    tools = await RecallTools.open(memory, question, actor, call_budget=budget, token_budget=token_budget)
    return await run_tool_loop(actor, settings, messages, tools, check=check, counter=counter)


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
    return _error_text(f"the {TOOL_NAME} budget of {exhausted} for this question is used up: answer now from what "
                       f"you have{more}")


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


#: HTTP statuses of an embedding call that blame the query (a bad or too large request), not the provider.
QUERY_FAULT_STATUSES = (400, 413, 422)


async def _prepare_search(search: Any, call: ToolCall) -> tuple[str, str] | None:
    """Embed a search call's query before the (synchronous) tool runs it; other calls need nothing. Returns the
    call's error result when the query cannot be embedded through its own fault (see the module docstring)."""
    if search is None:
        return None
    try:
        arguments = parse_arguments(call.arguments)
    except ArgumentsRefused:
        return None  # refused again, with its reason, when the call runs
    query = arguments.get("query")
    if arguments.get("mode") != "search" or not isinstance(query, str) or not query:
        return None
    try:
        await search.prepare(query)
    except Exception as error:
        if isinstance(error, LLMCallError) and error.status_code not in QUERY_FAULT_STATUSES:
            raise
        kind = type(error).__name__
        return _error_text(f"the query could not be embedded for the search ({kind}: "
                           f"{shown(str(error), MAX_ERROR_CHARS)}); try other words"), f"tool_failure: {kind}"
    return None


def steps_json(steps: Sequence[ToolStep]) -> str:
    """The steps as stored with the item."""
    return json.dumps([s.to_dict() for s in steps], ensure_ascii=False)

