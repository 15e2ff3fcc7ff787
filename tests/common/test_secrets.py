"""Credentials never appear in what om-eval shows or stores: redact_secrets, ModelSettings and request reprs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.secrets import REDACTED, holds_secrets, is_secret_key, redact_secrets
from om_eval.llm.cache import CachedResponse, ResponseCache
from om_eval.llm.pricing import Price
from om_eval.llm.request import LLMRequest, cache_key, canonical_json
from om_eval.om.config import ModelSettings, ObservationConfig, OMConfig

SECRET = "sk-live-7f3a9c1e5b"


@pytest.mark.parametrize("key", ["api_key", "apiKey", "API_KEY", "x-api-key", "OPENAI_API_KEY", "apikey", "token",
                                 "access_token", "hfToken", "HF_TOKEN", "client_secret", "aws_secret_access_key",
                                 "password", "db_password", "Authorization", "auth", "private_key", "credentials"])
def test_secret_key_names(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "max_output_tokens", "prompt_tokens", "budget_tokens", "max_token",
                                 "thinkingBudget", "model", "temperature", "tokenizer", "author", "keywords", "key",
                                 "cache_key", "num_ctx", 3, None])
def test_ordinary_key_names(key: Any) -> None:
    assert not is_secret_key(key)


def test_nested_secrets_are_replaced_and_the_input_is_untouched() -> None:
    options = {"litellm": {"api_key": SECRET, "num_ctx": 8192, "extra_headers": {"Authorization": f"Bearer {SECRET}"}},
               "google": {"thinkingConfig": {"thinkingBudget": 215}},
               "keys": [{"token": SECRET, "name": "a"}], "password": None}
    original = copy.deepcopy(options)
    clean = redact_secrets(options)
    assert options == original
    assert clean == {"litellm": {"api_key": REDACTED, "num_ctx": 8192, "extra_headers": {"Authorization": REDACTED}},
                     "google": {"thinkingConfig": {"thinkingBudget": 215}},
                     "keys": [{"token": REDACTED, "name": "a"}], "password": None}


def test_dataclasses_are_redacted_field_by_field() -> None:
    settings = ModelSettings(model="openai/gpt-4o", provider_options={"litellm": {"api_key": SECRET}})
    clean = redact_secrets(settings)
    assert isinstance(clean, ModelSettings) and clean.provider_options == {"litellm": {"api_key": REDACTED}}
    assert settings.provider_options["litellm"]["api_key"] == SECRET  # the original is unchanged


def test_model_settings_never_show_an_api_key() -> None:
    settings = ModelSettings(model="openai/gpt-4o", provider_options={"litellm": {"api_key": SECRET, "num_ctx": 1}})
    config = OMConfig(observation=ObservationConfig(model=settings))
    for text in (repr(settings), str(settings), repr(config), str(config)):
        assert SECRET not in text and "num_ctx" in text and "openai/gpt-4o" in text
    assert settings.provider_options["litellm"]["api_key"] == SECRET  # still sent to the provider


def test_requests_and_cache_entries_never_show_an_api_key(tmp_path: Path) -> None:
    request = LLMRequest.build("openai/gpt-4o", [{"role": "user", "content": "hi"}], temperature=0, api_key=SECRET)
    assert SECRET not in repr(request) and SECRET in request.payload  # the provider still gets it
    cache = ResponseCache(tmp_path / "cache")
    key = cache_key(request)
    cache.put(key, CachedResponse("hello", "gpt-4o", 1, 1, 0.0, "2025-01-01T00:00:00", "openai/gpt-4o"),
              request=request, stage="actor", scope={"token": SECRET})
    stored = b"".join(path.read_bytes() for path in (tmp_path / "cache").rglob("*.json"))
    assert SECRET.encode() not in stored and cache.get(key).text == "hello"  # type: ignore[union-attr]  # the entry was just put


_KEYS = st.one_of(st.sampled_from(["api_key", "token", "Authorization", "secret", "password", "apiKey", "model",
                                   "max_tokens", "name", "num_ctx", "headers"]), st.text(max_size=12))
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
_VALUES = st.recursive(_LEAVES, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=5)), max_leaves=20)


def _walk(value: Any, under_secret: bool = False):
    """(value, stored under a secret key) for every node."""
    yield value, under_secret
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, is_secret_key(key))
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, False)


@given(_VALUES)
def test_redaction_is_idempotent(value: Any) -> None:
    once = redact_secrets(value)
    assert redact_secrets(once) == once


def _plant(value: Any) -> Any:
    """``value`` with every value under a secret key replaced by the SECRET string."""
    if isinstance(value, dict):
        return {k: SECRET if is_secret_key(k) else _plant(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v) for v in value]
    return value


@given(_VALUES)
def test_redaction_never_leaks(value: Any) -> None:
    planted = {"litellm": {"api_key": SECRET}, "value": _plant(value)}
    clean = redact_secrets(planted)
    assert SECRET not in repr(clean)
    for node, secret in _walk(clean):
        if secret:
            assert node in (REDACTED, None)


@given(st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_redaction_leaves_other_keys_intact(value: dict[str, Any]) -> None:
    clean = redact_secrets(value)
    assert clean.keys() == value.keys()
    for key, item in value.items():
        if is_secret_key(key):
            assert clean[key] == (None if item is None else REDACTED)
        else:
            assert clean[key] == redact_secrets(item)
            if not isinstance(item, (dict, list)):
                assert clean[key] == item


_BODY_KEYS = st.sampled_from(["role", "content", "api_key", "max_tokens", "Authorization", "hf_token", "model", "x"])
_BODIES = st.recursive(
    st.none() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_BODY_KEYS, inner, max_size=3),
    max_leaves=12,
)


@given(_BODIES)
def test_what_holds_no_secrets_is_unchanged_by_redacting(body: Any) -> None:
    # (A secret that already reads "***" holds a secret that redacting leaves as it is.)
    assert holds_secrets(body) or redact_secrets(body) == body
    assert not holds_secrets(body) or redact_secrets(body) != body or "***" in repr(body)


@given(st.dictionaries(_BODY_KEYS, _BODIES, max_size=3))
def test_a_requests_key_payload_is_its_redacted_serialisation(params: dict) -> None:
    params.pop("model", None)
    request = LLMRequest.build("scripted/om-eval", [{"role": "user", "content": "hi"}], **params)
    assert request.key_payload == canonical_json(redact_secrets(
        {"model": request.model, "messages": list(request.messages), **request.params}))
    priced = request.priced(Price(1.0, 2.0))
    assert (priced.payload, priced.key_payload, priced.price) == (request.payload, request.key_payload,
                                                                  Price(1.0, 2.0))
