"""Offline providers registered with litellm, so they go through the same client, cache and ledger.

* ``scripted/<name>``: the deterministic scripted model (a test and demo tool, :mod:`om_eval.testing.scripted`,
  found through :mod:`om_eval.llm.stand_in`). ``scripted/om-eval`` is the default instance; tests register others
  (for example one told to fail) with :func:`register_scripted`.
* ``local/<model>``: a real instruction-tuned model run in-process with llama-cpp-python (see ``local.py``), or, for
  ``litellm.embedding``/``aembedding``, a real sentence-embedding model run in-process with numpy (see
  ``local_embedding.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import threading
import time
from functools import lru_cache
from types import ModuleType
from typing import Any, cast

from om_eval.llm._litellm import litellm_module
from om_eval.llm.prompt_cache import PromptCacheEmulator, PromptCacheRules
from om_eval.llm.stand_in import StandInError, StandInModel, default_factory

DEFAULT_SCRIPTED = "om-eval"
_scripted: dict[str, StandInModel] = {}
_lock = threading.Lock()


def register_scripted(name: str, model: StandInModel) -> str:
    """Make ``model`` answer for ``scripted/<name>``; returns that model id."""
    with _lock:
        _scripted[name] = model
    return f"scripted/{name}"


def scripted_model(name: str = DEFAULT_SCRIPTED) -> StandInModel:
    """The instance behind ``scripted/<name>`` (the default one is created on first use)."""
    with _lock:
        if name not in _scripted:
            if name != DEFAULT_SCRIPTED:
                known = ", ".join(sorted({DEFAULT_SCRIPTED, *_scripted}))
                raise KeyError(f"no scripted model named {name!r}; known: {known} (register_scripted adds one)")
            # A per-call delay for the default instance, for tests and demos that need a run to take time.
            latency = float(os.environ.get("OM_EVAL_SCRIPTED_LATENCY", "0") or 0)
            _scripted[name] = default_factory()(name=f"scripted/{name}", latency=latency)
        return _scripted[name]


_prompt_caches: dict[tuple[str, PromptCacheRules], PromptCacheEmulator] = {}


def _prompt_cache(name: str, option: Any) -> PromptCacheEmulator | None:
    """The emulated provider cache of ``scripted/<name>`` under the rules ``option`` names (``None``: no cache,
    and usage says nothing about one, as a server without a prompt cache)."""
    if option is None:
        return None
    rules = PromptCacheRules.parse(option)
    with _lock:
        return _prompt_caches.setdefault((name, rules), PromptCacheEmulator(rules))


def reset_prompt_caches() -> None:
    """Forget every emulated provider cache (a provider's caches expire; tests start from empty ones)."""
    with _lock:
        _prompt_caches.clear()


#: Dimensions of the scripted embedding.
SCRIPTED_EMBEDDING_SIZE = 64


def scripted_embedding(text: str) -> list[float]:
    """Each lower-cased word (letters and digits) counted into one of 64 slots by its hash: texts sharing words
    point the same way, so cosine similarity ranks them like word overlap, deterministically and offline."""
    vector = [0.0] * SCRIPTED_EMBEDDING_SIZE
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % SCRIPTED_EMBEDDING_SIZE] += 1.0
    return vector


def _price_as_free(litellm: ModuleType, model_id: str) -> None:
    """Put ``model_id`` in litellm's price list at zero, as :data:`~om_eval.llm.pricing.FREE_PROVIDERS` has it.
    Why: litellm prices every reply, and a model missing from its list sends each call through a slow search of
    near names (a quarter of litellm's own time per scripted call)."""
    if model_id not in litellm.model_cost:
        litellm.model_cost[model_id] = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                                        "litellm_provider": model_id.split("/", 1)[0], "mode": "chat"}


def _free(response: Any) -> Any:
    """``response`` with its cost (zero) told to litellm, which then skips pricing it: the price lookup and cost
    breakdown were a third of litellm's own time per scripted call. om-eval prices calls itself (pricing.py)."""
    response._hidden_params["response_cost"] = 0.0
    return response


def _scripted_provider_class(litellm: ModuleType) -> type:
    from litellm.llms.custom_llm import CustomLLM, CustomLLMError

    class ScriptedProvider(CustomLLM):
        """litellm handler that answers with a stand-in model (:class:`~om_eval.llm.stand_in.StandInModel`)."""

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[-1]
            optional = kwargs.get("optional_params") or {}
            try:
                instance = scripted_model(name)
                _price_as_free(litellm, f"scripted/{name}")
                emulator = _prompt_cache(name, optional.get("prompt_cache"))
                # Structured parameters reach the stand-in only when sent: stand-ins written before them keep working.
                structured = {key: optional[key] for key in ("response_format", "logprobs", "top_logprobs")
                              if optional.get(key) is not None}
                reply = instance.reply(messages, model=f"scripted/{name}", tools=optional.get("tools"), **structured)
            except KeyError as error:
                raise CustomLLMError(status_code=404, message=str(error)) from error
            except StandInError as error:
                raise CustomLLMError(status_code=error.status_code, message=str(error)) from error
            except ValueError as error:  # a prompt_cache option that names no rules
                raise CustomLLMError(status_code=400, message=f"provider_options.litellm.{error}") from error
            cache_fields = emulator.usage_fields(emulator.serve(messages)) if emulator is not None else {}
            return _free(litellm.ModelResponse(
                model=f"scripted/{name}",
                created=int(time.time()),
                choices=[{"index": 0, "finish_reason": reply.finish_reason or "stop",
                          **({"logprobs": {"content": [dict(t) for t in reply.logprobs]}}
                             if reply.logprobs is not None else {}),
                          "message": {"role": "assistant", "content": reply.text or None if reply.tool_calls
                                      else reply.text,
                                      **({"tool_calls": [c.to_dict() for c in reply.tool_calls]}
                                         if reply.tool_calls else {})}}],
                usage={
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": (reply.prompt_tokens or 0) + (reply.completion_tokens or 0),
                    **cache_fields,
                },
            ))

        def embedding(self, model: str, input: list, *args: Any, **kwargs: Any) -> Any:
            """A deterministic offline embedding: hashed word counts (the scripted model is no language model)."""
            vectors = [scripted_embedding(str(text)) for text in input]
            tokens = sum(len(str(text).split()) for text in input)
            return litellm.EmbeddingResponse(
                model=f"scripted/{model.split('/', 1)[-1]}",
                data=[{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                usage=litellm.Usage(prompt_tokens=tokens, total_tokens=tokens),
            )

        async def aembedding(self, model: str, input: list, *args: Any, **kwargs: Any) -> Any:
            return self.embedding(model, input, *args, **kwargs)

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            # litellm hands over the name without its provider prefix ("om-eval", not "scripted/om-eval").
            try:
                latency = scripted_model(model.split("/", 1)[-1]).latency
            except KeyError:
                latency = 0.0  # completion() answers the unknown name with a 404
            if latency:
                await asyncio.sleep(latency)
            return self.completion(model, messages, *args, **kwargs)

    return ScriptedProvider


def _lazy_local_class() -> type:
    from litellm.llms.custom_llm import CustomLLM

    class LazyLocalProvider(CustomLLM):
        """Loads the llama-cpp provider, or the embedding one (and the model's weights), only when a ``local/...``
        model is first called."""

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            from om_eval.llm.local import get_local_provider

            return get_local_provider().completion(*args, **kwargs)

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            from om_eval.llm.local import get_local_provider

            return await get_local_provider().acompletion(*args, **kwargs)

        def embedding(self, *args: Any, **kwargs: Any) -> Any:
            from om_eval.llm.local_embedding import get_embedding_provider

            return get_embedding_provider().embedding(*args, **kwargs)

        async def aembedding(self, *args: Any, **kwargs: Any) -> Any:
            from om_eval.llm.local_embedding import get_embedding_provider

            return await get_embedding_provider().aembedding(*args, **kwargs)

    return LazyLocalProvider


@lru_cache(maxsize=1)
def litellm_with_providers() -> ModuleType:
    """litellm, configured (:func:`~om_eval.llm._litellm.litellm_module`) and with our offline providers: what a
    model call goes through."""
    litellm = litellm_module()
    register_providers(litellm)
    return litellm


def register_providers(litellm: ModuleType) -> None:
    """Add the ``scripted`` and ``local`` providers to litellm's custom provider map (idempotent)."""
    present = {entry.get("provider") for entry in (litellm.custom_provider_map or [])}
    entries = list(litellm.custom_provider_map or [])
    if "scripted" not in present:
        entries.append({"provider": "scripted", "custom_handler": _scripted_provider_class(litellm)()})
    if "local" not in present:
        entries.append({"provider": "local", "custom_handler": _lazy_local_class()()})
    cast(Any, litellm).custom_provider_map = entries  # ModuleType declares no attributes to assign
    # litellm reads the map into its provider list when set through its setter helper.
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
