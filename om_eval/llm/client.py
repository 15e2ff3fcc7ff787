"""The one door to every model: litellm, a persistent cache, a ledger, and rate-limit handling in one place.

:class:`LLMClient` implements OM's :class:`~om_eval.om.model.ChatModel` protocol, so the engine, the actor and the
judge all reach models the same way. Per call it:

1. builds the final :class:`~om_eval.llm.request.LLMRequest` (model id, messages, every parameter);
2. computes the cache key once, from that request plus the caller's scope, *before* the call;
3. serves a hit, or calls ``litellm.acompletion`` under a per-model concurrency limit with a timeout;
4. retries rate limits (429), timeouts and server errors (5xx, connection errors) with jittered exponential
   backoff, a bounded number of times; any other error (400, 401, 404, ...) fails at once with the provider's
   message;
5. records a ledger entry and stores the answer (only deterministic requests, unless the caller opts in).

A paid call is recorded in the ledger, then written to the cache, before it is returned, so a crash afterwards
never loses it. A cache that cannot be written (full disk, no permission) costs the entry, never the answer: a
warning is logged and the reply returned.

Unusable replies and retries (see :mod:`om_eval.om.model`): a caller may pass a ``check`` that says what is
wrong with a reply's text. A reply the check refuses is returned to the caller but never stored, and a stored
reply it refuses is removed and asked for again; so one bad answer cannot be served to every later retry and
re-run. ``attempt`` numbers a caller's retries: from 1 on it joins the cache scope, so a retry is its own entry
and a real call, while the first attempt keeps the key it always had.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from om_eval.common.secrets import remember_secrets, scrub_secrets
from om_eval.llm.cache import CachedResponse, ResponseCache
from om_eval.llm.ledger import REJECTED_PREFIX, CallRecord, Ledger
from om_eval.llm.pricing import FREE_PROVIDERS, call_cost, price_of
from om_eval.llm.request import LLMRequest, cache_key, canonical_json, litellm_model_id
from om_eval.llm.usage import UsageError, checked_count, reported_usage, usage_problem
from om_eval.llm.vectors import EmbeddingReplyError, embedding_problem
from om_eval.om.config import ModelSettings
from om_eval.om.model import CUT_OFF, ChatMessage, ModelReply, ReplyCheck, ToolCall, ToolSpec, cut_off
from om_eval.om.provider_options import endpoint_options

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying: request timeout, conflict, too early, rate limit; every 5xx is too.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
#: Mastra names Gemini models ``google/...``; litellm calls the AI Studio provider ``gemini/...``.
GEMINI_PROVIDERS = ("gemini", "vertex_ai")
#: Models whose replies cost nothing to make again, identically: their cache entries skip the fsync (the local model
#: is free too, but its replies take minutes to remake).
FREE_MODEL_PREFIXES = ("scripted/",)


class LLMCallError(RuntimeError):
    """A model call failed for good. Names the stage, the model, the cause and how many retries were made."""

    def __init__(self, stage: str, model: str, cause: BaseException, retries: int) -> None:
        status = getattr(cause, "status_code", None)
        status_text = f" (HTTP {status})" if status else ""
        tries = f" after {retries} retries" if retries else ""
        # A provider's error may echo the key it refused: the text is scrubbed before anything can show or store it.
        super().__init__(scrub_secrets(f"{stage} call to {model} failed{tries}{status_text}: "
                                       f"{type(cause).__name__}: {cause}"))
        self.stage = stage
        self.model = model
        self.cause = cause
        self.retries = retries
        self.status_code = status


@dataclass(frozen=True)
class ClientSettings:
    """How the client calls providers. None of these change answers, so none are part of a cache key."""

    timeout_s: float = 600.0
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    default_concurrency: int = 16
    concurrency: Mapping[str, int] = field(default_factory=dict)
    """Per-model limits on calls in flight, keyed by litellm model id."""
    cache_nondeterministic: bool = False
    """Also cache requests with temperature > 0 and no seed (off: such calls are repeated on purpose)."""
    always_cache_stages: tuple[str, ...] = ("observer", "reflector")
    """Stages cached whatever their temperature. A memory build's calls are its progress: Mastra's Observer
    samples at 0.3, and without this a build killed halfway would pay for every call again when resumed. The
    stored sample is the one the build drew; clear the cache (or use another ``run.cache_dir``) for new ones."""


def provider_params(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """litellm parameters from OM's ``provider_options``.

    ``google.thinkingConfig.thinkingBudget`` becomes litellm's ``thinking`` budget on Gemini models and is
    dropped elsewhere; ``openai.reasoningEffort`` becomes ``reasoning_effort`` on OpenAI models; everything
    under ``litellm`` is passed through verbatim (e.g. ``{"litellm": {"num_ctx": 8192}}``); the endpoint
    (``api_base``, ``api_key``, ``extra_headers``: :func:`~om_eval.om.provider_options.endpoint_options`, the same
    reading the credential check makes) is sent as litellm's parameters of those names.
    """
    remember_secrets(options)  # so that an error echoing a key or header sent here can be scrubbed of it
    provider = model.partition("/")[0]
    params: dict[str, Any] = {}
    google = options.get("google") or {}
    budget = (google.get("thinkingConfig") or {}).get("thinkingBudget")
    if budget is not None and provider in GEMINI_PROVIDERS:
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    effort = (options.get("openai") or {}).get("reasoningEffort")
    if effort is not None and provider in ("openai", "azure"):
        params["reasoning_effort"] = effort
    params.update(options.get("litellm") or {})
    params.update(endpoint_options(options))
    return params


#: What a caller may set per call on top of its model's settings (:meth:`LLMClient.complete`'s ``params``).
CALL_PARAMS = frozenset({"response_format", "max_tokens", "temperature", "seed", "tool_choice", "logprobs",
                         "top_logprobs"})


def build_request(
    messages: Sequence[ChatMessage], settings: ModelSettings, tools: Sequence[ToolSpec] | None = None,
    params: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """The final request for ``settings``: model id, temperature, output cap, provider parameters and any tools
    offered, with the call's own ``params`` (:data:`CALL_PARAMS`: JSON mode or a schema, an output cap, a seed,
    logprobs...) over them. Everything sent is part of the cache key; the price its settings give it is not sent.

    Raises:
        ValueError: a parameter outside :data:`CALL_PARAMS` (anything else belongs in the model's settings).
    """
    unknown = sorted(set(params or {}) - CALL_PARAMS)
    if unknown:
        raise ValueError(f"unknown call parameter {unknown[0]!r}; a call may set {', '.join(sorted(CALL_PARAMS))} "
                         "(anything else belongs in the model config's provider_options)")
    model = litellm_model_id(settings.model)
    sent: dict[str, Any] = {
        "temperature": settings.temperature, "max_tokens": settings.max_output_tokens,
        "tools": list(tools) if tools else None, **provider_params(model, settings.provider_options),
    }
    sent.update({name: value for name, value in (params or {}).items() if value is not None})
    return limited(LLMRequest.build(model, messages, **sent), settings.provider_options)


def limited(request: LLMRequest, options: Mapping[str, Any]) -> LLMRequest:
    """``request`` with the price and the wait and retry limits a model's ``provider_options`` give it (none of
    them sent)."""
    limits = options.get("request") or {}
    return request.priced(price_of(options)).limited(limits.get("timeout_s"), limits.get("max_retries"))


#: Messages that mean "no usable credentials", which some providers report with a 5xx status.
CREDENTIAL_ERRORS = ("missing credentials", "api_key client option must be set", "api key not found",
                     "no api key", "invalid api key", "incorrect api key")


def is_retryable(error: BaseException) -> bool:
    """Rate limits, timeouts, connection and server errors are worth retrying; other client errors are not."""
    if any(marker in str(error).lower() for marker in CREDENTIAL_ERRORS):
        return False  # retrying a missing key only delays the error
    if isinstance(error, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS or status >= 500
    name = type(error).__name__
    return name in {"APIConnectionError", "Timeout", "APITimeoutError", "RateLimitError", "InternalServerError",
                    "ServiceUnavailableError", "BadGatewayError"}


def _usage_field(holder: Any, name: str) -> Any:
    return holder.get(name) if isinstance(holder, Mapping) else getattr(holder, name, None)


@dataclass(frozen=True)
class PromptCacheUsage:
    """What a provider says about its own prompt cache for one call: of the prompt tokens, those it read from the
    cache and those it wrote to it. ``None``: it did not say (unknown, not zero)."""

    read: int | None = None
    written: int | None = None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prompt_cache_usage(usage: Any) -> PromptCacheUsage:
    """The prompt-cache counts in a reply's ``usage``.

    OpenAI- and Gemini-shaped replies report reads as ``prompt_tokens_details.cached_tokens`` (litellm maps
    Anthropic's ``cache_read_input_tokens`` there too, and keeps it at the top level; a usage carrying only the
    latter is read from it). Writes are Anthropic's ``cache_creation_input_tokens`` (litellm also sets
    ``prompt_tokens_details.cache_creation_tokens``). A server that reports neither, such as llama-cpp-python's,
    leaves both ``None``.
    """
    if usage is None:
        return PromptCacheUsage()
    details = _usage_field(usage, "prompt_tokens_details")
    read = _count(_usage_field(details, "cached_tokens")) if details is not None else None
    if read is None:
        read = _count(_usage_field(usage, "cache_read_input_tokens"))
    written = _count(_usage_field(usage, "cache_creation_input_tokens"))
    if written is None and details is not None:
        written = _count(_usage_field(details, "cache_creation_tokens"))
    return PromptCacheUsage(read, written)


def _checked_prompt_cache(usage: Any, prompt_tokens: int | None) -> PromptCacheUsage:
    """The reply's prompt-cache counts, refused when they are not token counts; unknown when the prompt tokens
    are."""
    if prompt_tokens is None:
        return PromptCacheUsage()
    found = prompt_cache_usage(usage)
    # Whether these are part of prompt_tokens differs by provider shape (Anthropic's are not): only their form is
    # checked.
    checked_count("cached_tokens", found.read)
    checked_count("cache_creation_input_tokens", found.written)
    return found


def answered_by_another(asked: str, answered: str) -> bool:
    """Whether a reply's model name is another model than the litellm id ``asked``. Providers name a dated version
    of the model asked for (``gpt-4o`` answers as ``gpt-4o-2024-08-06``) or prefix a path (``models/gemini-2.5-
    flash``): the same last path segment, or it with a version (``-`` and a digit) after it (``-latest`` counts as
    none), is the same model; ``gpt-4o-mini`` is not ``gpt-4o``."""
    name, asked_name = answered.lower().split("/")[-1], asked.lower().split("/")[-1]
    if not name or name == asked_name:
        return False
    short, long = sorted((name, asked_name), key=len)
    stem = re.escape(short.removesuffix("-latest"))
    return not re.fullmatch(stem + r"-\d[\w.-]*", long)


def _retry_after(error: BaseException) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class LLMClient:
    """Async access to any litellm model, with cache, ledger, limits and retries.

    Args:
        cache: where answers persist; ``None`` disables caching.
        ledger: collects one record per call; a fresh one is made when omitted.
        settings: timeouts, retries and concurrency.
        scope: folded into every cache key (e.g. prompt-variant hash); a call may add its own.
        sleep: the backoff sleeper (tests pass a fake).
        seed: seeds the backoff jitter.
    """

    def __init__(
        self,
        *,
        cache: ResponseCache | None = None,
        ledger: Ledger | None = None,
        settings: ClientSettings | None = None,
        scope: Any = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
    ) -> None:
        self.cache = cache
        self.ledger = ledger if ledger is not None else Ledger()
        self.settings = settings or ClientSettings()
        self.scope = scope
        self._sleep = sleep
        self._random = random.Random(seed)
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.other_models: set[tuple[str, str]] = set()
        """(asked, answered) pairs of replies that named another model than the one asked for (warned once each)."""
        self.dimensions: dict[str, int] = {}
        """The vector length each embedding model (with its parameters) gave first; a later reply must match."""
        self._semaphores_loop: asyncio.AbstractEventLoop | None = None

    def with_ledger(self, ledger: Ledger) -> LLMClient:
        """A client sharing this one's cache, settings and concurrency limits but recording into ``ledger``.

        Used to account calls per question while questions run concurrently.
        """
        twin = object.__new__(LLMClient)
        twin.__dict__.update(self.__dict__)
        twin.ledger = ledger
        return twin

    # -- the ChatModel protocol -----------------------------------------------------------------------------

    async def complete(
        self, messages: Sequence[ChatMessage], *, stage: str, settings: ModelSettings, scope: Any = None,
        tools: Sequence[ToolSpec] | None = None, params: Mapping[str, Any] | None = None,
    ) -> ModelReply:
        """Call the model ``settings`` names with ``messages`` (the engine's entry point); ``params`` are the call's
        own request parameters (:data:`CALL_PARAMS`)."""
        return await self.call(build_request(messages, settings, tools, params), stage=stage, scope=scope)

    async def complete_checked(
        self,
        messages: Sequence[ChatMessage],
        *,
        stage: str,
        settings: ModelSettings,
        check: ReplyCheck | None = None,
        attempt: int = 0,
        scope: Any = None,
        complete_only: bool = False,
        tools: Sequence[ToolSpec] | None = None,
    ) -> ModelReply:
        """:meth:`complete`, caching only replies ``check`` accepts; ``attempt`` > 0 is a retry's own entry."""
        return await self.call(build_request(messages, settings, tools), stage=stage, scope=scope, check=check,
                               attempt=attempt, complete_only=complete_only)

    # -- the general entry point ----------------------------------------------------------------------------

    async def call(
        self,
        request: LLMRequest,
        *,
        stage: str,
        scope: Any = None,
        cache: bool | None = None,
        check: ReplyCheck | None = None,
        attempt: int = 0,
        complete_only: bool = False,
    ) -> ModelReply:
        """Send ``request``. ``cache`` forces caching on or off; by default only deterministic calls are.

        Args:
            check: what is wrong with a reply's text (``None``: usable). Refused replies are returned but never
                cached, and a cached reply it refuses is dropped and asked for again.
            attempt: the caller's retry number; from 1 on it is part of the cache scope.
            complete_only: a reply cut off at the output token limit is refused like one ``check`` refuses (a
                judge's 10-token reply may be cut and still hold its verdict; an answer may not).
        """
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
            raise ValueError(f"attempt must be an integer >= 0, got {attempt!r}")
        started = time.time()
        use_cache = self.cache is not None and (
            cache if cache is not None else (request.deterministic or self.settings.cache_nondeterministic
                                             or stage in self.settings.always_cache_stages)
        )
        key_scope: dict[str, Any] = {"client": self.scope, "call": scope}
        if attempt:
            key_scope["attempt"] = attempt  # the first attempt keeps the key it had before retries were numbered
        key = cache_key(request, key_scope) if use_cache else None
        if key is not None:
            hit = self.cache.get(key)  # type: ignore[union-attr]  # a key is made only when use_cache: a cache is set
            # A reply that calls tools is judged by the caller's loop, not by its text (often empty then).
            problem = check(hit.text) if hit is not None and check is not None and not hit.tool_calls else None
            if hit is not None and problem is None:
                problem = usage_problem(request.model, hit.prompt_tokens, hit.completion_tokens)
            if problem is not None:
                log.warning("dropping a cached %s reply the caller cannot use (%s); asking %s again",
                            stage, problem, request.model)
                self._discard(key)
                hit = None
            if hit is not None:
                self.ledger.add(CallRecord(
                    stage, request.model, hit.prompt_tokens, hit.completion_tokens, True,
                    time.time() - started, 0, 0.0, saved_usd=hit.cost_usd, cache_key=key, started_at=started,
                    cached_prompt_tokens=hit.cached_prompt_tokens, cache_write_tokens=hit.cache_write_tokens,
                ))
                return ModelReply(hit.text, hit.model, hit.prompt_tokens, hit.completion_tokens, cached=True,
                                  finish_reason=hit.finish_reason, logprobs=hit.logprobs,
                                  tool_calls=tuple(ToolCall.from_dict(call) for call in hit.tool_calls))

        retries = 0
        async with self._semaphore(request.model):
            while True:
                try:
                    reply, cost, provider_cache = await self._send(request)
                    break
                except UsageError as error:  # answered (and paid for) with counts that cannot be true
                    self._refuse_usage(request, stage, error, started, retries, key)
                except Exception as error:  # classified below: retried, or recorded and raised
                    if is_retryable(error) and retries < self._retries(request):
                        await self._sleep(self._backoff(retries, error))
                        retries += 1
                        continue
                    self.ledger.add(CallRecord(
                        stage, request.model, None, None, False, time.time() - started, retries, None,
                        error=scrub_secrets(f"{type(error).__name__}: {error}"), cache_key=key, started_at=started,
                    ))
                    raise LLMCallError(stage, request.model, error, retries) from error
        self._note_other_model(request.model, reply.model, stage)
        problem = check(reply.text) if check is not None and not reply.tool_calls else None
        if problem is None and complete_only and cut_off(reply):
            problem = CUT_OFF
        # The paid call is recorded before its reply is cached: a ledger that journals (the run store's) then holds
        # it even if the process is killed during the cache write. The other order left a window in which the
        # reply was on disk, served free to the resumed run, and its cost recorded nowhere.
        self.ledger.add(CallRecord(
            stage, request.model, reply.prompt_tokens, reply.completion_tokens, False, time.time() - started,
            retries, cost, error=None if problem is None else f"{REJECTED_PREFIX}{problem}",
            cache_key=key, started_at=started, cached_prompt_tokens=provider_cache.read,
            cache_write_tokens=provider_cache.written,
        ))
        if key is not None and problem is None:
            entry = CachedResponse(
                text=reply.text, model=reply.model, prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens, cost_usd=cost,
                created_at=datetime.now(UTC).isoformat(), request_model=request.model,
                tool_calls=tuple(call.to_dict() for call in reply.tool_calls), cached_prompt_tokens=provider_cache.read,
                cache_write_tokens=provider_cache.written, finish_reason=reply.finish_reason, logprobs=reply.logprobs,
            )
            await self._store(key, entry, request, stage, scope)
        return reply

    # -- embeddings -----------------------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], *, model: str, stage: str = "recall", scope: Any = None,
                    options: Mapping[str, Any] | None = None) -> list[list[float]]:
        """One vector per text from a litellm embedding model (retrieval mode's embedding search), cached and in
        the ledger like a completion: the vectors are stored as the entry's JSON text. ``options`` are the model's
        ``provider_options`` (its endpoint, litellm parameters and price), read as a completion's are."""
        model_id = litellm_model_id(model)
        request = limited(LLMRequest.build(model_id, (), input=list(texts),
                                           **provider_params(model_id, options or {})), options or {})
        # One length per model and its parameters (a config may ask for fewer dimensions than the default).
        shape = canonical_json({"model": model_id, **{k: v for k, v in request.params.items() if k != "input"}})
        free = model_id.split("/", 1)[0] in FREE_PROVIDERS  # the scripted embedder gives a wordless text no direction
        started = time.time()
        key = cache_key(request, {"client": self.scope, "call": scope, "kind": "embedding"}) if self.cache else None
        hit = self.cache.get(key) if key is not None else None  # type: ignore[union-attr]  # key only with a cache
        if hit is not None:
            try:
                stored = json.loads(hit.text)
            except ValueError:
                stored = None
            problem = ("unreadable vectors" if not isinstance(stored, list)
                       else embedding_problem(stored, len(texts), self.dimensions.get(shape), zero_allowed=free)
                       or usage_problem(model_id, hit.prompt_tokens, 0))
            if problem is None:
                if stored:
                    self.dimensions.setdefault(shape, len(stored[0]))
                self.ledger.add(CallRecord(stage, request.model, hit.prompt_tokens, 0, True, time.time() - started,
                                           0, 0.0, saved_usd=hit.cost_usd, cache_key=key, started_at=started))
                return stored
            log.warning("dropping a cached embedding of %s that cannot be used (%s); asking again", model_id, problem)
            self._discard(key)  # type: ignore[arg-type]  # a hit has a key
        retries = 0
        async with self._semaphore(request.model):
            while True:
                try:
                    vectors, prompt_tokens, cost = await self._send_embedding(request)
                    break
                except UsageError as error:
                    self._refuse_usage(request, stage, error, started, retries, key)
                except Exception as error:  # retried like a completion, or recorded and raised
                    if is_retryable(error) and retries < self._retries(request):
                        await self._sleep(self._backoff(retries, error))
                        retries += 1
                        continue
                    self.ledger.add(CallRecord(stage, request.model, None, None, False, time.time() - started,
                                               retries, None, error=scrub_secrets(f"{type(error).__name__}: {error}"),
                                               cache_key=key, started_at=started))
                    raise LLMCallError(stage, request.model, error, retries) from error
        problem = embedding_problem(vectors, len(texts), self.dimensions.get(shape), zero_allowed=free)
        self.ledger.add(CallRecord(stage, request.model, prompt_tokens, 0, False, time.time() - started, retries,
                                   cost, cache_key=key, started_at=started,
                                   error=None if problem is None else f"{REJECTED_PREFIX}{problem}"))
        if problem is not None:
            bad = EmbeddingReplyError(f"the embedding model {request.model} sent back {problem}; nothing was cached")
            raise LLMCallError(stage, request.model, bad, retries) from bad
        if vectors:
            self.dimensions.setdefault(shape, len(vectors[0]))
        if key is not None:
            entry = CachedResponse(text=json.dumps(vectors), model=request.model, prompt_tokens=prompt_tokens,
                                   completion_tokens=0, cost_usd=cost,
                                   created_at=datetime.now(UTC).isoformat(), request_model=request.model)
            await self._store(key, entry, request, stage, scope)
        return vectors

    async def _send_embedding(self, request: LLMRequest) -> tuple[list[list[float]], int | None, float | None]:
        from om_eval.llm.providers import litellm_with_providers

        litellm = litellm_with_providers()
        kwargs = request.litellm_kwargs()
        del kwargs["messages"]
        timeout = request.timeout_s or self.settings.timeout_s
        response = await asyncio.wait_for(litellm.aembedding(**kwargs, timeout=timeout, num_retries=0),
                                          timeout=timeout + 5)
        rows = sorted(response.data, key=lambda row: row["index"] if isinstance(row, dict) else row.index)
        vectors = [list(row["embedding"] if isinstance(row, dict) else row.embedding) for row in rows]
        usage = getattr(response, "usage", None)
        prompt_tokens, _ = reported_usage(request.model, getattr(usage, "prompt_tokens", None), 0)
        return vectors, prompt_tokens, call_cost(request.model, prompt_tokens, 0, price=request.price)

    # -- internals ------------------------------------------------------------------------------------------

    async def _store(
        self, key: str, entry: CachedResponse, request: LLMRequest, stage: str, scope: Any
    ) -> None:
        """Write a paid answer (fsynced, off the event loop). A failed write is a warning: the answer stands.

        The scripted stand-in's replies are not fsynced: they cost nothing and come back the same, so the disk's
        wait (a third of a scripted call's cost in the harness) buys nothing for them."""
        cache = self.cache
        assert cache is not None
        durable = not request.model.startswith(FREE_MODEL_PREFIXES)
        try:
            await asyncio.to_thread(cache.put, key, entry, request=request, stage=stage, scope=scope, durable=durable)
        except OSError as error:
            log.warning("could not store the %s reply of %s in the cache at %s (%s: %s); the reply is used but "
                        "will be paid for again next time", stage, request.model, cache.root,
                        type(error).__name__, error)

    def _refuse_usage(self, request: LLMRequest, stage: str, error: UsageError, started: float, retries: int,
                      key: str | None) -> None:
        """Record a call whose endpoint reported impossible usage as made, refused and of unknown cost, then fail it:
        its counts are not added to any total, and its reply is neither used nor cached."""
        self.ledger.add(CallRecord(stage, request.model, None, None, False, time.time() - started, retries, None,
                                   error=f"{REJECTED_PREFIX}{error}", cache_key=key, started_at=started))
        raise LLMCallError(stage, request.model, error, retries) from error

    def _discard(self, key: str) -> None:
        try:
            self.cache.discard(key)  # type: ignore[union-attr]  # called only for a key read from the cache
        except OSError as error:  # unremovable: it is refused again on every lookup, never served
            log.warning("could not remove cache entry %s: %s", key, error)

    def _semaphore(self, model: str) -> asyncio.Semaphore:
        # A semaphore belongs to the event loop that first waits on it: one client used by several asyncio.run
        # calls (rejudging answers, then probes, then the next judge) needs one per loop. Loops that ended are
        # dropped with their semaphores.
        loop = asyncio.get_running_loop()
        if self._semaphores_loop is not loop:
            self._semaphores, self._semaphores_loop = {}, loop
            # Every loop the client calls from (a run's, rejudge's, demo's): a Ctrl-C during a call leaves no
            # never-awaited reply coroutine behind (om_eval.llm.threads).
            from om_eval.llm.threads import use_reply_executor

            use_reply_executor(loop)
        semaphore = self._semaphores.get(model)
        if semaphore is None:
            # One in-process local model serves one call at a time; more would only queue on its lock.
            default = 1 if model.startswith("local/") else self.settings.default_concurrency
            limit = self.settings.concurrency.get(model, default)
            semaphore = self._semaphores[model] = asyncio.Semaphore(limit)
        return semaphore

    def _note_other_model(self, asked: str, answered: str, stage: str) -> None:
        """Warn (once per pair) when a reply names another model than the one asked for: a proxy or gateway may fall
        back to a cheaper model, and its answers would be reported under the asked one's name."""
        if not answered_by_another(asked, answered) or (asked, answered) in self.other_models:
            return
        self.other_models.add((asked, answered))
        log.warning("%s: asked %s, but the reply says it came from %s (a proxy's fallback?); its answers are "
                    "recorded under %s", stage, asked, answered, asked)

    def _retries(self, request: LLMRequest) -> int:
        return self.settings.max_retries if request.max_retries is None else request.max_retries

    def _backoff(self, retries: int, error: BaseException) -> float:
        """Full-jitter exponential backoff, at least the provider's Retry-After when it sent one."""
        ceiling = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2**retries)
        delay = self._random.uniform(0, ceiling)
        hinted = _retry_after(error)
        return max(delay, min(hinted, self.settings.backoff_max_s)) if hinted is not None else delay

    async def _send(self, request: LLMRequest) -> tuple[ModelReply, float | None, PromptCacheUsage]:
        """The reply, its cost and what the provider says about its prompt cache."""
        from om_eval.llm.providers import litellm_with_providers

        litellm = litellm_with_providers()
        timeout = request.timeout_s or self.settings.timeout_s
        kwargs = request.litellm_kwargs()
        if kwargs.get("tools"):
            # litellm 1.106 imports its MCP proxy handler (and the optional `mcp` package) whenever tools are passed;
            # om-eval offers plain function tools only, so that handler is skipped. Not part of the request or its key.
            kwargs["_skip_mcp_handler"] = True
        response = await asyncio.wait_for(
            litellm.acompletion(**kwargs, timeout=timeout, num_retries=0),
            timeout=timeout + 5,
        )
        message = response.choices[0].message
        text = message.content or ""
        tool_calls = tuple(
            ToolCall(str(getattr(call, "id", "") or ""), str(call.function.name or ""),
                     str(call.function.arguments or ""))
            for call in (getattr(message, "tool_calls", None) or ())
        )
        finish_reason = getattr(response.choices[0], "finish_reason", None)
        usage = getattr(response, "usage", None)
        prompt_tokens, completion_tokens = reported_usage(request.model, getattr(usage, "prompt_tokens", None),
                                                          getattr(usage, "completion_tokens", None))
        answered_by = getattr(response, "model", None) or request.model
        prompt_cache = _checked_prompt_cache(usage, prompt_tokens)
        cost = call_cost(request.model, prompt_tokens, completion_tokens, cached_prompt_tokens=prompt_cache.read,
                         cache_write_tokens=prompt_cache.written, price=request.price)
        logprobs = _token_logprobs(getattr(response.choices[0], "logprobs", None)) if kwargs.get("logprobs") else None
        return ModelReply(text, answered_by, prompt_tokens, completion_tokens, finish_reason=finish_reason,
                          tool_calls=tool_calls, logprobs=logprobs), cost, prompt_cache


def _token_logprobs(found: Any) -> tuple[Mapping[str, Any], ...]:
    """A reply's per-token log probabilities as plain data (litellm hands pydantic objects or dicts)."""
    if found is None:
        return ()
    plain = found.model_dump() if hasattr(found, "model_dump") else found
    tokens = plain.get("content") if isinstance(plain, Mapping) else None
    return tuple(dict(token) for token in tokens or () if isinstance(token, Mapping))
