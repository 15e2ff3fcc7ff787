"""Issue 46 item 2: an embedding reply is checked before it is ranked with or cached.

The drill's server sent NaN or all-zero vectors: rankings came back in document order and scored *better* than a
working embedder; mixed lengths and too few vectors ended in raw numpy errors; and because the bad reply was cached,
the fixed server could not heal the run without ``om-eval cache clear``.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from om_eval.llm.cache import CachedResponse, ResponseCache
from om_eval.llm.client import LLMCallError, LLMClient, provider_params
from om_eval.llm.request import LLMRequest, cache_key
from om_eval.llm.vectors import embedding_problem
from tests.reliability.harness import invoke, query
from tests.reliability.hostile_server import DIMENSION, SERVED, HostileServer, hostile  # noqa: F401  # the fixture

TEXTS = ["I moved to Lisbon in March.", "I bake sourdough on Sundays.", "My sister lives in Porto."]
MODEL = f"openai/{SERVED}"


def _options(server: HostileServer) -> dict[str, str]:
    return {"api_base": server.base, "api_key": "none"}


def _embed(client: LLMClient, server: HostileServer, texts: list[str] = TEXTS) -> object:
    try:
        return asyncio.run(client.embed(texts, model=MODEL, options=_options(server)))
    except LLMCallError as error:
        return error


@pytest.mark.parametrize(("mode", "said"), [("nan", "non-finite values"), ("zero", "all-zero vectors"),
                                             ("mixed", "different lengths"), ("few", "2 vectors for 3 inputs")])
def test_a_bad_embedding_reply_is_an_error_naming_the_model_and_is_never_cached(
        hostile: HostileServer, mode: str, said: str, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    hostile.mode = mode
    client = LLMClient(cache=ResponseCache(tmp_path / "cache"))
    failed = _embed(client, hostile)
    assert isinstance(failed, LLMCallError) and said in str(failed) and MODEL in str(failed), failed
    assert client.ledger.records[-1].rejected
    hostile.mode = "ok"  # the server is fixed: the same call heals without clearing the cache
    vectors = _embed(client, hostile)
    assert isinstance(vectors, list) and len(vectors) == 3 and not client.ledger.records[-1].cached
    assert isinstance(_embed(client, hostile), list) and client.ledger.records[-1].cached


def test_one_model_keeps_one_dimension(hostile: HostileServer) -> None:  # noqa: F811  # the fixture
    client = LLMClient(cache=None)
    assert len(_embed(client, hostile)[0]) == DIMENSION  # type: ignore[index]  # vectors
    hostile.mode = "wide"
    failed = _embed(client, hostile, TEXTS[:1])
    assert isinstance(failed, LLMCallError) and f"where this model gave {DIMENSION} before" in str(failed)


def test_a_bad_reply_cached_before_the_checks_is_not_served(hostile: HostileServer, tmp_path: Path) -> None:  # noqa: F811
    cache = ResponseCache(tmp_path / "cache")
    request = LLMRequest.build(MODEL, (), input=list(TEXTS), **provider_params(MODEL, _options(hostile)))
    key = cache_key(request, {"client": None, "call": None, "kind": "embedding"})
    stale = [[float("nan")] * DIMENSION for _ in TEXTS]
    cache.put(key, CachedResponse(text=json.dumps(stale), model=MODEL, prompt_tokens=9, completion_tokens=0,
                                  cost_usd=None, created_at=datetime.now(UTC).isoformat(), request_model=MODEL))
    client = LLMClient(cache=cache)
    vectors = _embed(client, hostile)
    assert isinstance(vectors, list) and embedding_problem(vectors, 3) is None
    assert len(hostile.seen) == 1 and not client.ledger.records[-1].cached


def test_a_rag_run_on_a_nan_embedder_fails_its_questions_and_heals_when_the_server_does(
        hostile: HostileServer, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    hostile.mode = "nan"
    served = ["memory=rag_mastra", "model@models.embedding=openai_compatible", f"models.embedding.model={MODEL}",
              f"models.embedding.provider_options.api_base={hostile.base}", "dataset.subset.first=2"]
    first = invoke(tmp_path, *served)
    assert first.code == 1, first.output[-2000:]
    items = query(tmp_path, "SELECT status, error FROM items")
    assert items and all(i["status"] == "error" and "non-finite" in i["error"] for i in items), items
    hostile.mode = "ok"
    second = invoke(tmp_path, *served)
    assert second.code == 0, second.output[-2000:]
    assert {i["status"] for i in query(tmp_path, "SELECT status FROM items")} == {"done"}
