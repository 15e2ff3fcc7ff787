"""An OpenAI-compatible server on loopback that answers as a broken or hostile endpoint would.

``server.mode`` picks the misbehaviour for every later request; ``server.seen`` keeps what was asked. Chat modes:
``ok`` (a real-looking reply with usage), ``negative_usage``, ``huge_usage``, ``no_usage``, ``other_model`` (the
reply names another model), ``echo_key`` (a 401 whose body repeats the bearer token, as some gateways do),
``slow`` (waits ``server.delay`` seconds first). Embedding modes: ``ok`` (a vector per input from a hash of the
text), ``nan``, ``zero``, ``mixed`` (two lengths), ``few`` (one vector short), ``wide`` (more dimensions).

Everything is bounded: the server binds 127.0.0.1 on a free port, ``slow`` never waits past ``delay``, and the
fixture shuts it down after the test.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

#: The model the server says it serves (GET /v1/models), so a run's endpoint check passes.
SERVED = "hostile-model"
ANSWER = "You moved to Lisbon."
DIMENSION = 8


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True
    mode: str = "ok"
    delay: float = 0.0
    seen: list[dict[str, Any]]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _vector(text: str, width: int = DIMENSION) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(byte - 127.5) / 128 for byte in digest[:width]]


class _Handler(BaseHTTPRequestHandler):
    server: HostileServer

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body, allow_nan=True).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the name http.server calls
        self._send(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]})

    def do_POST(self) -> None:  # the name http.server calls
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append({"path": self.path, "headers": headers, "body": body})
        if self.path.endswith("/embeddings"):
            self._embed(body)
        else:
            self._chat(body, headers)

    def _chat(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        mode = self.server.mode
        if mode == "echo_key":
            key = headers.get("authorization", "").removeprefix("Bearer ")
            self._send(401, {"error": {"message": f"Incorrect key {key} refused by the gateway",
                                       "type": "invalid_request_error", "code": "invalid_api_key"}})
            return
        if mode == "slow":
            time.sleep(self.server.delay)
        usage: dict[str, Any] | None = {"prompt_tokens": 120, "completion_tokens": 6, "total_tokens": 126}
        if mode == "negative_usage":
            usage = {"prompt_tokens": -1_000_000, "completion_tokens": 6, "total_tokens": -999_994}
        elif mode == "huge_usage":
            usage = {"prompt_tokens": 50_000_000_000, "completion_tokens": 6, "total_tokens": 50_000_000_006}
        elif mode == "no_usage":
            usage = None
        reply: dict[str, Any] = {
            "id": "hostile-1", "object": "chat.completion", "created": 0,
            "model": "cheaper-fallback-model" if mode == "other_model" else body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}],
        }
        if usage is not None:
            reply["usage"] = usage
        self._send(200, reply)

    def _embed(self, body: dict[str, Any]) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        mode = self.server.mode
        vectors = [_vector(str(text)) for text in texts]
        if mode == "nan":
            vectors = [[math.nan] * DIMENSION for _ in texts]
        elif mode == "zero":
            vectors = [[0.0] * DIMENSION for _ in texts]
        elif mode == "mixed":
            vectors = [vector[: DIMENSION // 2] if i % 2 else vector for i, vector in enumerate(vectors)]
        elif mode == "few":
            vectors = vectors[:-1]
        elif mode == "wide":
            vectors = [_vector(str(text), DIMENSION * 2) for text in texts]
        self._send(200, {"object": "list", "model": body["model"],
                         "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                         "usage": {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)}})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer(("127.0.0.1", 0), _Handler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
