"""OM's ``recall`` tool for the actor in retrieval mode (om.retrieval): what the harness's tool loop
(:func:`~om_eval.bench.tool_loop.run_tool_loop`) offers it.

The model's tool calls are run against the memory's stored messages (:meth:`~ObservationalMemory.recall_history`:
ids as models see them, nothing of the benchmark's labels). Nothing one call asks for ends the question. Arguments
past the limits of :mod:`om_eval.om.recall.limits` (too long, too deep, a number past JavaScript's safe range) are
refused before the tool runs, and any exception the tool raises on a call becomes that call's error result. The
model reads either, cut to a bounded size, and goes on. A reply whose call failed that way is cached like any
other; on resume it gets the same error result, and the question goes on from there instead of failing again.
Results are cut at :data:`~om_eval.om.recall.limits.RESULT_TOKEN_CAP` tokens.
The embedding of a ``mode="search"`` query counts as part of its call when the call is at fault (a query the
request cannot carry, or that the provider refuses with HTTP 400, 413 or 422). Any other failure of the embedding
model (rate limits, outages, keys) is a failed model call, and the question fails and is retried on resume.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from om_eval.bench.tool_loop import (
    DEFAULT_BUDGET,
    DEFAULT_TOKEN_BUDGET,
    MAX_ERROR_CHARS,
    LoopResult,
    error_text,
    run_tool_loop,
)
from om_eval.llm.client import LLMCallError
from om_eval.om.config import ModelSettings
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel, ToolCall
from om_eval.om.recall.limits import RESULT_TOKEN_CAP, ArgumentsRefused, parse_arguments, shown
from om_eval.om.recall.schema import TOOL_NAME, RecallScope, tool_definition
from om_eval.om.recall.search import EmbeddingGroupSearch
from om_eval.om.recall.tool import RecallError, recall, result_json
from om_eval.om.tokens import TokenCounter
from om_eval.systems.om.replay import Asked, asked_thread_id

logger = logging.getLogger(__name__)


def _run_call(call: ToolCall, memory: ObservationalMemory, question: Asked, history: Any,
              search: Any = None) -> tuple[str, str | None]:
    """The tool's reply to ``call`` (JSON text, as the model reads it) and the error kind, if any. Never raises for
    anything in the call: see the module docstring."""
    if call.name != TOOL_NAME:
        return error_text(f"unknown tool {shown(call.name)!r}; the only tool is {TOOL_NAME!r}"), "unknown_tool"
    try:
        arguments = parse_arguments(call.arguments)
    except ArgumentsRefused as refused:
        return error_text(str(refused)), "bad_arguments"
    scope = cast(RecallScope, memory.config.retrieval)  # the recall loop runs in retrieval mode only: not "off"
    try:
        result = recall(history, arguments, thread_id=memory.shown_thread_id(asked_thread_id(question)),
                        resource_id=memory.resource_id, scope=scope, search=search)
        return result_json(result), None
    except RecallError as error:
        return error_text(str(error)), f"tool_error: {shown(str(error), MAX_ERROR_CHARS)}"
    except Exception as error:  # any failure on one call is that call's result, never the question's end
        kind = type(error).__name__
        logger.warning("recall call %s of question %s failed (%s); the model gets it as the call's error",
                       shown(call.id), question.question_id, kind)
        return error_text(f"the {TOOL_NAME} tool failed on these arguments ({kind}: "
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


async def run_recall_loop(
    actor: ChatModel, settings: ModelSettings, memory: ObservationalMemory, question: Asked,
    messages: Sequence[dict[str, Any]], *, check: Any, counter: TokenCounter, budget: int = DEFAULT_BUDGET,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
) -> LoopResult:
    """Ask the actor with OM's recall tool offered until it answers (see the module docstring)."""
    tools = await RecallTools.open(memory, question, actor, call_budget=budget, token_budget=token_budget)
    return await run_tool_loop(actor, settings, messages, tools, check=check, counter=counter)


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
        return error_text(f"the query could not be embedded for the search ({kind}: "
                           f"{shown(str(error), MAX_ERROR_CHARS)}); try other words"), f"tool_failure: {kind}"
    return None
