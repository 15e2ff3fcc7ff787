"""A model's endpoint, named as the docs say, reaches the call: a real HTTP exchange with a stand-in server.

litellm's OpenAI provider sends the request over HTTP to ``provider_options.api_base`` with ``api_key`` as its
bearer token and ``extra_headers`` as headers; the older form (the same keys under ``litellm``) does the same. The
credential check reads the same place, and credentials stay out of the cache key.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from om_eval.experiment.app import run_from_config
from om_eval.llm.client import LLMClient, build_request
from om_eval.llm.credentials import missing_credentials
from om_eval.llm.endpoints import check_endpoint
from om_eval.llm.request import cache_key
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.store import Catalog
from tests.runs import compose_run

QUESTION = [{"role": "user", "content": "Which city did I move to?"}]


class ChatServer(ThreadingHTTPServer):
    """An OpenAI-compatible chat server that answers "Lisbon" and keeps every request it was sent."""

    seen: list[dict[str, Any]]
    models: list[str]
    status: int = 200


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_POST(self) -> None:  # the name http.server calls
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "body": body})
        reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "You moved to Lisbon."}}],
                 "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the name http.server calls
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
        data = json.dumps({"object": "list", "data": [{"id": name, "object": "model"}
                                                      for name in self.server.models]}).encode()
        self.send_response(self.server.status if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ChatServer]:
    httpd = ChatServer(("127.0.0.1", 0), _Handler)
    httpd.seen = []
    httpd.models = ["qwen2.5-coder-1.5b"]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _base(server: ChatServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.mark.parametrize("form", ["documented", "litellm"])
def test_an_endpoint_given_as_documented_is_called(server: ChatServer, form: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    endpoint = {"api_base": _base(server), "api_key": "none", "extra_headers": {"X-Team": "memory-lab"}}
    options = endpoint if form == "documented" else {"litellm": endpoint}
    settings = ModelSettings(model="openai/qwen2.5-coder-1.5b", temperature=0.0, max_output_tokens=32,
                             provider_options=options)
    settings.validate("models.actor")
    assert missing_credentials(settings.model, settings.provider_options) == []  # the check reads the same place
    client = LLMClient(cache=None)
    reply = asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    assert reply.text == "You moved to Lisbon." and (reply.prompt_tokens, reply.completion_tokens) == (12, 5)
    (sent,) = server.seen
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["model"] == "qwen2.5-coder-1.5b"
    assert sent["headers"]["authorization"] == "Bearer none" and sent["headers"]["x-team"] == "memory-lab"
    assert sent["body"]["messages"] == QUESTION and sent["body"]["temperature"] == 0.0
    record = client.ledger.records[-1]
    assert (record.prompt_tokens, record.completion_tokens) == (12, 5)


def test_the_key_stays_out_of_the_cache_key_and_the_address_in_it() -> None:
    def key(options: dict[str, Any]) -> str:
        return cache_key(build_request(QUESTION, ModelSettings(model="openai/m", temperature=0.0,
                                                               provider_options=options)), None)

    base = {"api_base": "http://gpu-box:8000/v1", "api_key": "sk-one"}
    assert key(base) == key({**base, "api_key": "sk-two"})  # a rotated key is the same call
    assert key(base) != key({**base, "api_base": "http://other-box:8000/v1"})  # another server is not
    assert "sk-one" not in repr(build_request(QUESTION, ModelSettings(model="openai/m", provider_options=base)))


@pytest.mark.parametrize(("options", "message"), [
    ({"api_bse": "http://x/v1"}, r"provider_options\.api_bse=.*unknown option; allowed: google, openai, litellm, "
                                 r"api_base, api_key, extra_headers"),
    ({"api_key": ""}, r"provider_options\.api_key=.*non-empty text \('none' for a server that takes no key\)"),
    ({"api_base": "http://a/v1", "litellm": {"api_base": "http://b/v1"}},
     r"provider_options\.api_base and provider_options\.litellm\.api_base differ"),
    ({"extra_headers": "X-Team: lab"}, r"provider_options\.extra_headers=.*must be a mapping"),
])
def test_a_wrong_endpoint_option_is_refused_by_name(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelSettings(model="openai/m", provider_options=options).validate("models.actor")


def test_an_endpoint_for_an_in_process_model_is_refused_as_unused() -> None:
    with pytest.raises(ConfigError, match=r"models\.actor\.provider_options\.api_base=.*unused: local/qwen runs in "
                                          r"this process"):
        ModelSettings(model="local/qwen", provider_options={"api_base": "http://x/v1"}).validate("models.actor")
    with pytest.raises(ConfigError) as refused:
        ModelSettings(model="scripted/x", provider_options={"api_key": "sk-secret"}).validate("models.judge")
    assert "sk-secret" not in str(refused.value)


def test_the_preflight_asks_the_server_what_it_serves(server: ChatServer) -> None:
    options = {"api_base": _base(server), "api_key": "sk-lab", "extra_headers": {"X-Team": "memory-lab"}}
    assert check_endpoint("models.actor", "openai/qwen2.5-coder-1.5b", options) is None
    (asked,) = server.seen
    assert asked["path"] == "/v1/models" and asked["headers"]["authorization"] == "Bearer sk-lab"
    assert asked["headers"]["x-team"] == "memory-lab"
    wrong = check_endpoint("models.actor", "openai/qwen2.5-7b", options)
    assert wrong is not None and "serves no model named 'qwen2.5-7b'; it serves 'qwen2.5-coder-1.5b'" in wrong.reason
    assert "models.actor.model=openai/<name>" in wrong.reason
    server.status = 401
    refused = check_endpoint("models.actor", "openai/qwen2.5-coder-1.5b", options)
    assert refused is not None and "refuses the key (HTTP 401)" in refused.reason
    assert check_endpoint("models.actor", "openai/gpt-4o", {}) is None  # no endpoint named: nothing to ask


def test_a_server_that_is_down_is_named_before_anything_runs(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = check_endpoint("models.actor", "openai/m", {"api_base": f"http://127.0.0.1:{port}/v1", "api_key": "none"},
                          timeout_s=2)
    assert down is not None and "cannot be reached" in down.reason and "provider_options.api_base" in down.reason
    with pytest.raises(ConfigError, match=r"models\.actor=openai/m at http://127\.0\.0\.1:\d+/v1: cannot be reached.*"
                                          r"nothing was run"):
        run_from_config(compose_run(tmp_path, "model@models.actor=openai_compatible", "models.actor.model=openai/m",
                                    f"models.actor.provider_options.api_base=http://127.0.0.1:{port}/v1"),
                        console=Console(file=io.StringIO()))
    assert not list(tmp_path.glob("store/*.duckdb"))


def test_a_run_answers_through_a_served_model_over_http(tmp_path: Path, server: ChatServer) -> None:
    """The smoke run with its actor on an OpenAI-compatible server: every answer comes over HTTP and is stored."""
    summary = run_from_config(compose_run(tmp_path, "model@models.actor=openai_compatible",
                                          "models.actor.model=openai/qwen2.5-coder-1.5b",
                                          f"models.actor.provider_options.api_base={_base(server)}"),
                              console=Console(file=io.StringIO()))
    chats = [seen for seen in server.seen if seen["path"] == "/v1/chat/completions"]
    assert [seen["path"] for seen in server.seen[:1]] == ["/v1/models"]  # asked once, before the first call
    with Catalog(tmp_path) as catalog:
        items = catalog.items([summary["run_id"]])
        calls = catalog.query("SELECT stage, model, prompt_tokens, completion_tokens FROM llm_calls WHERE "
                              "stage = 'actor'")
    assert len(chats) == len(items) == 7 and {item["hypothesis"] for item in items} == {"You moved to Lisbon."}
    assert {(c["model"], c["prompt_tokens"], c["completion_tokens"]) for c in calls} == {
        ("openai/qwen2.5-coder-1.5b", 12, 5)}


class _FlakyHandler(_Handler):
    """Fails the first chat request with a 500 and drops the connection of the second, then answers."""

    def do_POST(self) -> None:  # the name http.server calls
        self.server.attempts = getattr(self.server, "attempts", 0) + 1
        if self.server.attempts == 1:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_error(500, "upstream overloaded")
            return
        if self.server.attempts == 2:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no response at all
            return
        super().do_POST()


def test_a_5xx_and_a_dropped_connection_are_retried_over_http() -> None:
    httpd = ChatServer(("127.0.0.1", 0), _FlakyHandler)
    httpd.seen, httpd.models = [], ["m"]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        settings = ModelSettings(model="openai/m", temperature=0.0, max_output_tokens=16,
                                 provider_options={"api_base": _base(httpd), "api_key": "none"})

        async def no_wait(_delay: float) -> None:
            return None

        client = LLMClient(cache=None, sleep=no_wait)
        reply = asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert reply.text == "You moved to Lisbon." and httpd.attempts == 3
    assert client.ledger.records[-1].retries == 2


def test_a_priced_endpoint_is_priced_and_its_price_changes_no_identity(tmp_path: Path, server: ChatServer) -> None:
    from omegaconf import OmegaConf

    from om_eval.experiment.spec import spec_from_config

    served = ["model@models.actor=openai_compatible", "models.actor.model=openai/qwen2.5-coder-1.5b",
              f"models.actor.provider_options.api_base={_base(server)}"]
    priced = [*served, "+models.actor.provider_options.price.input_per_million=0.2",
              "+models.actor.provider_options.price.output_per_million=0.6"]
    plain_spec, priced_spec = (spec_from_config(OmegaConf.to_container(compose_run(tmp_path, *o), resolve=True))
                               for o in (served, priced))
    assert plain_spec.config_hash == priced_spec.config_hash  # a price changes what a run costs, not its answers
    assert build_request(QUESTION, priced_spec.actor).params == build_request(QUESTION, plain_spec.actor).params
    out = io.StringIO()
    summary = run_from_config(compose_run(tmp_path, *priced), console=Console(file=out, width=300))
    assert "unknown" not in out.getvalue()  # neither the forecast nor the summary calls the price unknown
    with Catalog(tmp_path) as catalog:
        costs = catalog.query("SELECT cost_usd FROM llm_calls WHERE run_id = ? AND stage = 'actor'",
                              [summary["run_id"]])
    assert [round(c["cost_usd"], 12) for c in costs] == [round((12 * 0.2 + 5 * 0.6) / 1e6, 12)] * 7


@pytest.mark.parametrize(("price", "message"), [
    ({"input_per_million": 0.2}, r"must be 'free' or \{input_per_million"),
    ({"input_per_million": -1, "output_per_million": 0}, r"input_per_million must be a number of dollars >= 0"),
    ("cheap", r"must be 'free'"),
    ({"input_per_million": 1, "output_per_million": 2, "cached_per_million": 0.1}, r"optionally with "
     r"cached_input_per_million and cache_write_per_million"),
    ({"input_per_million": 1, "output_per_million": 2, "cache_write_per_million": "high"},
     r"cache_write_per_million must be a number of dollars >= 0"),
])
def test_a_wrong_price_is_refused_by_name(price: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=r"models\.actor\.provider_options\.price=.*" + message):
        ModelSettings(model="openai/m", provider_options={"price": price}).validate("models.actor")
    ModelSettings(model="openai/m", provider_options={"price": "free"}).validate("models.actor")
    ModelSettings(model="openai/m", provider_options={"price": {
        "input_per_million": 1, "output_per_million": 2, "cached_input_per_million": 0.1}}).validate("models.actor")
