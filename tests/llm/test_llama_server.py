"""The self-hosted path end to end: llama.cpp's own OpenAI-compatible server, reached over HTTP through litellm's
OpenAI provider, answers as the in-process local model does on the same prompt.

Needs the ``local`` extra's weights and ``llama-cpp-python[server]``; skipped with the reason otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from om_eval.llm.client import LLMClient
from om_eval.llm.endpoints import check_endpoint
from om_eval.llm.local_models import DEFAULT_LOCAL_MODEL
from om_eval.llm.weights import LocalModelNotInstalledError, ensure_weights
from om_eval.om.config import ModelSettings

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
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", DEFAULT_LOCAL_MODEL,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--chat_format", "chatml",
         "--n_threads", "2"],
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
    served = ModelSettings(model=f"openai/{DEFAULT_LOCAL_MODEL}", **sampling,
                           provider_options={"api_base": server_base, "api_key": "none"})
    served.validate("models.actor")
    assert check_endpoint("models.actor", served.model, served.provider_options) is None
    wrong = check_endpoint("models.actor", "openai/qwen2.5-7b", served.provider_options)
    assert wrong is not None and repr(DEFAULT_LOCAL_MODEL) in wrong.reason
    # The local config's repetition penalty is llama.cpp's default off here, on both sides, so sampling matches.
    in_process = ModelSettings(model=f"local/{DEFAULT_LOCAL_MODEL}", **sampling,
                               provider_options={"litellm": {"repeat_penalty": 1.0}})
    over_http = _complete(served)
    local = _complete(in_process)
    assert over_http[0].strip() and "Lisbon" in over_http[0], over_http
    assert over_http == local  # same text, same prompt and completion token counts
