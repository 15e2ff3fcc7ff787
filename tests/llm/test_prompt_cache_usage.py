"""What providers say about their prompt caches reaches the ledger and is priced as they bill it.

Each provider's reply is served over real HTTP by a small stand-in server, in the provider's own JSON shape (as
its API reference documents it), so litellm's own parsing turns it into a usage object, as it does for a real
reply; the client then records the cached reads and writes and prices the call with ``litellm.cost_per_token``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMClient, build_request
from om_eval.llm.pricing import Price, call_cost
from om_eval.om.config import ModelSettings

QUESTION = [{"role": "user", "content": "Which city did I move to?"}]

OPENAI_REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Lisbon"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
              "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0}},
}
ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Lisbon"}], "stop_reason": "end_turn", "stop_sequence": None,
    # Anthropic counts fresh input apart from cache reads and writes; litellm adds them up into prompt_tokens.
    "usage": {"input_tokens": 50, "cache_creation_input_tokens": 248, "cache_read_input_tokens": 1800,
              "output_tokens": 12},
}
GEMINI_REPLY = {
    "candidates": [{"content": {"parts": [{"text": "Lisbon"}], "role": "model"}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 2100, "candidatesTokenCount": 5, "totalTokenCount": 2105,
                      "cachedContentTokenCount": 2048,
                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 2100}]},
    "modelVersion": "gemini-2.5-flash",
}


class _Replies(BaseHTTPRequestHandler):
    """Answers each provider's chat route with its recorded reply."""

    def do_POST(self) -> None:  # the name http.server calls
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.endswith("/messages"):
            reply: dict[str, Any] = ANTHROPIC_REPLY
        elif ":generateContent" in self.path:
            reply = GEMINI_REPLY
        else:
            reply = OPENAI_REPLY
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def provider_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replies)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("model", "route", "prompt", "completion", "read", "written", "by_hand"), [
    # gpt-4o: $2.50 per million input, $1.25 cached (half off), $10 output.
    ("openai/gpt-4o", "/v1", 2006, 300, 1920, None, (86 * 2.5 + 1920 * 1.25 + 300 * 10) / 1e6),
    # claude-sonnet-4-5: $3 input, $0.30 cache read (90 % off), $3.75 cache write (a 25 % premium), $15 output.
    ("anthropic/claude-sonnet-4-5", "", 2098, 12, 1800, 248, (50 * 3 + 1800 * 0.3 + 248 * 3.75 + 12 * 15) / 1e6),
    # gemini-2.5-flash: $0.30 input, $0.03 cached (90 % off), $2.50 output.
    ("gemini/gemini-2.5-flash", "", 2100, 5, 2048, None, (52 * 0.3 + 2048 * 0.03 + 5 * 2.5) / 1e6),
])
def test_each_providers_cache_counts_reach_the_ledger_priced_as_litellm_prices_them(
    provider_base: str, tmp_path: Path, model: str, route: str, prompt: int, completion: int, read: int,
    written: int | None, by_hand: float,
) -> None:
    import litellm

    client = LLMClient(cache=ResponseCache(tmp_path / "cache"))
    settings = ModelSettings(model=model, temperature=0,
                             provider_options={"api_base": provider_base + route, "api_key": "test-key"})
    paid = asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    replayed = asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    assert paid.text == "Lisbon" and not paid.cached and replayed.cached
    first, again = client.ledger.records
    assert (first.prompt_tokens, first.completion_tokens) == (prompt, completion)
    assert (first.cached_prompt_tokens, first.cache_write_tokens) == (read, written)
    usage = litellm.Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion,
                          prompt_tokens_details={"cached_tokens": read}, cache_read_input_tokens=read,
                          **({"cache_creation_input_tokens": written} if written else {}))
    assert first.cost_usd == pytest.approx(sum(litellm.cost_per_token(model=model, usage_object=usage)), rel=1e-12)
    assert first.cost_usd == pytest.approx(by_hand, rel=1e-9)
    # The response cache's replay keeps what the original call reported and what it cost.
    assert (again.cached_prompt_tokens, again.cache_write_tokens, again.saved_usd) == (read, written, first.cost_usd)


def test_caching_is_cheaper_by_the_providers_discount() -> None:
    full = call_cost("openai/gpt-4o", 30_000, 0)
    cached = call_cost("openai/gpt-4o", 30_000, 0, cached_prompt_tokens=28_000)
    assert full is not None and cached is not None and full / cached == pytest.approx(30 / 16)  # 50 % off
    full = call_cost("openai/gpt-5-mini", 30_000, 0)
    cached = call_cost("openai/gpt-5-mini", 30_000, 0, cached_prompt_tokens=28_000)
    assert full is not None and cached is not None and full / cached == pytest.approx(30 / 4.8)  # 90 % off


def test_a_given_price_prices_cache_reads_and_writes_at_their_own_rates_or_the_input_rate() -> None:
    price = Price(input_per_million=1.0, output_per_million=2.0, cached_input_per_million=0.1,
                  cache_write_per_million=1.25)
    assert call_cost("openai/served", 1000, 100, cached_prompt_tokens=600, cache_write_tokens=200,
                     price=price) == pytest.approx((200 * 1.0 + 600 * 0.1 + 200 * 1.25 + 100 * 2.0) / 1e6)
    plain = Price(input_per_million=1.0, output_per_million=2.0)
    assert call_cost("openai/served", 1000, 100, cached_prompt_tokens=600, price=plain) == pytest.approx(1200 / 1e6)


def test_two_roles_calling_one_served_model_are_priced_by_their_own_settings(provider_base: str) -> None:
    """A price belongs to a role's settings: the judge on the actor's served model is not billed at the actor's
    price (a price registered by model id would price both alike)."""
    client = LLMClient(cache=None)
    endpoint = {"api_base": provider_base + "/v1", "api_key": "none"}
    actor = ModelSettings(model="openai/served-model", temperature=0,
                          provider_options={**endpoint, "price": {"input_per_million": 1.0, "output_per_million": 1.0}})
    judge = ModelSettings(model="openai/served-model", temperature=0, provider_options={**endpoint, "price": "free"})
    unpriced = ModelSettings(model="openai/served-model", temperature=0, provider_options=endpoint)
    asyncio.run(client.complete(QUESTION, stage="actor", settings=actor))
    # The judge sends its request as build_request makes it, through the client's general entry point.
    asyncio.run(client.call(build_request(QUESTION, judge), stage="judge"))
    asyncio.run(client.call(build_request(QUESTION, unpriced), stage="judge"))
    costs = [record.cost_usd for record in client.ledger.records]
    assert costs == [pytest.approx((2006 + 300) / 1e6), 0.0, None]
