"""The self-hosted path end to end: llama.cpp's own OpenAI-compatible server, reached over HTTP through litellm's
OpenAI provider, answers as the in-process local model does on the same prompt, answers a small experiment whose
calls are recorded and priced as served, survives a failing proxy in between, and is refused before anything runs
when it is down.

The server renders chats with the model's own template (what ``python -m llama_cpp.server --model model.gguf`` does
without ``--chat_format``), as the in-process model renders them: llama-cpp-python's ``chatml`` format keeps only
the first system message, and OM's actor prompt is several (the observations are the later ones).

Needs the ``local`` extra's weights and ``llama-cpp-python[server]``; skipped with the reason otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from om_eval.experiment.app import run_from_config
from om_eval.llm.client import LLMClient
from om_eval.llm.endpoints import check_endpoint
from om_eval.llm.local_models import DEFAULT_LOCAL_MODEL, get_local_model_spec
from om_eval.llm.weights import LocalModelNotInstalledError, ensure_weights
from om_eval.om.config import ModelSettings
from om_eval.store import Catalog
from tests.runs import compose_run

pytestmark = pytest.mark.integration

MESSAGES = [
    {"role": "system", "content": "You answer questions about the user from what they told you. Be brief."},
    {"role": "user", "content": "I moved to Lisbon in March and I bake sourdough every Sunday."},
    {"role": "assistant", "content": "Lisbon in March, and sourdough on Sundays: noted."},
    {"role": "user", "content": "Which city do I live in, and what do I bake?"},
]


@pytest.fixture(scope="module")
def server_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip("llama.cpp's server is not installed (pip install 'llama-cpp-python[server]')")
    try:
        weights = ensure_weights(DEFAULT_LOCAL_MODEL)
    except LocalModelNotInstalledError as error:
        pytest.skip(f"the local model's weights are not installed: {error}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    # The in-process model's context window; no --chat_format: the model's own template (see the module docstring).
    n_ctx = get_local_model_spec(DEFAULT_LOCAL_MODEL).n_ctx
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", DEFAULT_LOCAL_MODEL,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "2"],
        # Its log goes to a file: an unread pipe fills up and stops the server mid-request.
        stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def _complete(settings: ModelSettings) -> tuple[str, int, int]:
    client = LLMClient(cache=None)
    reply = asyncio.run(client.complete(MESSAGES, stage="actor", settings=settings))
    record = client.ledger.records[-1]
    assert (record.prompt_tokens, record.completion_tokens) == (reply.prompt_tokens, reply.completion_tokens)
    return reply.text, reply.prompt_tokens or 0, reply.completion_tokens or 0


def test_the_served_model_answers_as_the_in_process_one(server_base: str) -> None:
    sampling = {"temperature": 0.0, "max_output_tokens": 48}
    # A request that names no repetition penalty gets llama-cpp-python's server default (1.1) over HTTP and
    # llama.cpp's (1.0) in-process: both sides name 1.0, so sampling matches.
    no_penalty = {"litellm": {"repeat_penalty": 1.0}}
    served = ModelSettings(model=f"openai/{DEFAULT_LOCAL_MODEL}", **sampling,
                           provider_options={"api_base": server_base, "api_key": "none", **no_penalty})
    served.validate("models.actor")
    assert check_endpoint("models.actor", served.model, served.provider_options) is None
    wrong = check_endpoint("models.actor", "openai/qwen2.5-7b", served.provider_options)
    assert wrong is not None and repr(DEFAULT_LOCAL_MODEL) in wrong.reason
    in_process = ModelSettings(model=f"local/{DEFAULT_LOCAL_MODEL}", **sampling, provider_options=no_penalty)
    over_http = _complete(served)
    local = _complete(in_process)
    assert over_http[0].strip() and "Lisbon" in over_http[0], over_http
    assert over_http == local  # same text, same prompt and completion token counts


SERVED = f"openai/{DEFAULT_LOCAL_MODEL}"
ROLES = ("observer", "reflector", "actor", "judge")
#: What the served model costs (dollars per million input and output tokens), given to every role; in-process calls
#: cost nothing. (Roles can be priced apart: tests/llm/test_prompt_cache_usage.py.)
PRICE = (0.2, 0.6)
#: One question of the mini set: the quickstart's own settings otherwise (2 Observer calls, the actor, the judge).
ONE_QUESTION = "dataset.subset.first=1"


#: The memory is built and the answer judged by the scripted model in both runs: the Observer's long prompts on the
#: 1.5B model took most of this lane's minutes, and neither the memory nor the verdict is what is compared (the same
#: memory reaches both actors; the judge is the actor's model reached the same way, shown by the actor).
SCRIPTED_MEMORY = ("model@models.observer=scripted", "model@models.reflector=scripted",
                   "model@models.judge=scripted")


def _served_roles(api_base: str, results: Path) -> list[str]:
    """The actor on the server, with the settings the quickstart gives the in-process model (output cap, repetition
    penalty), so where the model runs is the only difference."""
    local = compose_run(results, experiment="quickstart").models.actor
    overrides = list(SCRIPTED_MEMORY)
    for role in ("actor",):
        overrides += [f"model@models.{role}=openai_compatible", f"models.{role}.model={SERVED}",
                      f"models.{role}.provider_options.api_base={api_base}",
                      f"models.{role}.max_output_tokens={local.max_output_tokens}",
                      f"+models.{role}.provider_options.litellm.repeat_penalty="
                      f"{local.provider_options.litellm.repeat_penalty}",
                      f"+models.{role}.provider_options.price.input_per_million={PRICE[0]}",
                      f"+models.{role}.provider_options.price.output_per_million={PRICE[1]}"]
    return overrides


def _stored(results: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with Catalog(results) as catalog:
        items = catalog.items()
        calls = catalog.query("SELECT stage, model, prompt_tokens, completion_tokens, cached, retries, cost_usd, "
                              "error, cached_prompt_tokens FROM llm_calls ORDER BY question_id, seq")
    return items, calls


def test_a_small_experiment_over_http_is_recorded_and_priced_as_served(server_base: str, tmp_path: Path) -> None:
    # That the served model answers as the in-process one, token for token, is the first test's; an experiment run
    # in-process as well doubled this lane's longest test.
    quiet = Console(file=io.StringIO())
    run_from_config(compose_run(tmp_path / "http", ONE_QUESTION, *_served_roles(server_base, tmp_path),
                                experiment="quickstart"), console=quiet)
    (served_item,), served_calls = _stored(tmp_path / "http")

    assert served_item["status"] == "done" and served_item["hypothesis"].strip()
    assert served_item["actor_prompt_tokens"] and served_item["actor_completion_tokens"]
    assert {"observer", "actor", "judge"} <= {c["stage"] for c in served_calls}
    actor_calls = [c for c in served_calls if c["stage"] == "actor"]
    assert actor_calls and {c["model"] for c in actor_calls} == {SERVED}
    for call in actor_calls:
        assert call["prompt_tokens"] and call["completion_tokens"] is not None, call
        assert not call["cached"] and call["retries"] == 0 and call["error"] is None, call
        # llama-cpp-python's server reports prompt and completion tokens only: no prompt-cache count to record.
        assert call["cached_prompt_tokens"] is None, call
        priced = (call["prompt_tokens"] * PRICE[0] + call["completion_tokens"] * PRICE[1]) / 1e6
        assert call["cost_usd"] == pytest.approx(priced, rel=1e-9), call
    assert (served_item["actor_prompt_tokens"], served_item["actor_completion_tokens"]) == (
        actor_calls[-1]["prompt_tokens"], actor_calls[-1]["completion_tokens"])


class FaultProxy(ThreadingHTTPServer):
    """Forwards to the server; chat requests meet ``faults`` first, one each: ``"503"`` answers 503, ``"drop"``
    closes the connection without a response."""

    upstream: str
    faults: list[str]
    chats: int = 0


class _ProxyHandler(BaseHTTPRequestHandler):
    server: FaultProxy

    def do_GET(self) -> None:  # the name http.server calls
        self._relay(httpx.get(self.server.upstream + self.path, timeout=30))

    def do_POST(self) -> None:  # the name http.server calls
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.chats += 1
        fault = self.server.faults.pop(0) if self.server.faults else None
        if fault == "503":
            self.send_error(503, "loading model")
            return
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._relay(httpx.post(self.server.upstream + self.path, content=body, timeout=600,
                               headers={"Content-Type": self.headers.get("Content-Type", "application/json")}))

    def _relay(self, response: httpx.Response) -> None:
        self.send_response(response.status_code)
        self.send_header("Content-Type", response.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_503_and_a_dropped_connection_before_the_server_are_retried_and_counted(server_base: str,
                                                                                   tmp_path: Path) -> None:
    proxy = FaultProxy(("127.0.0.1", 0), _ProxyHandler)
    proxy.upstream, proxy.faults = server_base.removesuffix("/v1"), ["503", "drop"]
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        # The smoke run with only its actor on the server: a run's own client (its default backoff, under 3 s
        # here), ledger and store, without the minutes of a local Observer.
        run_from_config(compose_run(tmp_path, ONE_QUESTION, "model@models.actor=openai_compatible",
                                    f"models.actor.model={SERVED}", "models.actor.max_output_tokens=64",
                                    f"models.actor.provider_options.api_base=http://127.0.0.1:"
                                    f"{proxy.server_address[1]}/v1"),
                        console=Console(file=io.StringIO()))
    finally:
        proxy.shutdown()
        proxy.server_close()
    (item,), calls = _stored(tmp_path)
    (actor,) = [c for c in calls if c["stage"] == "actor"]
    assert proxy.chats == 3 and item["status"] == "done" and item["hypothesis"].strip()
    assert actor["retries"] == 2 and actor["error"] is None and actor["prompt_tokens"] and actor["completion_tokens"]


def test_a_server_that_is_down_stops_om_eval_run_before_any_question(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = f"http://127.0.0.1:{port}/v1"
    roles = [override for role in ROLES for override in (
        f"model@models.{role}=openai_compatible", f"models.{role}.model={SERVED}",
        f"models.{role}.provider_options.api_base={down}")]
    done = subprocess.run([sys.executable, "-m", "om_eval.cli", "run", "experiment=quickstart", *roles,
                           f"run.results_dir={tmp_path}", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"],
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    assert f"models.actor={SERVED} at {down}: cannot be reached" in said and "nothing was run" in said, said[-3000:]
    assert not list(tmp_path.glob("store/*.duckdb"))
