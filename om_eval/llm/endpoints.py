"""Self-hosted endpoints reached once before a run: is the server up, and does it serve the model named?

Why: a server that is down, or that serves another model than the one named, otherwise fails every question one by
one after its retries. An OpenAI-compatible server lists what it serves at ``GET {api_base}/models``; asking costs
one request. A server without that route (404 or 405) is taken at its word: the first call will say what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from om_eval.om.provider_options import NO_KEY, endpoint_options

#: How long the check waits for a server (a server that takes longer to list its models is not ready for a run).
CHECK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class EndpointProblem:
    """What is wrong with one role's endpoint."""

    role: str
    model: str
    api_base: str
    reason: str

    def describe(self) -> str:
        return f"{self.role}={self.model} at {self.api_base}: {self.reason}"


def served_name(model: str) -> str:
    """The name a server knows a model by: the litellm id without its provider (``openai/qwen2.5`` -> ``qwen2.5``)."""
    return model.partition("/")[2] or model


def check_endpoint(role: str, model: str, options: Mapping[str, Any],
                   timeout_s: float = CHECK_TIMEOUT_S) -> EndpointProblem | None:
    """Ask ``model``'s endpoint (if ``options`` name one) which models it serves; ``None`` when all is well."""
    import httpx

    endpoint = endpoint_options(options)
    base = endpoint.get("api_base")
    if not base:
        return None
    headers = {str(k): str(v) for k, v in (endpoint.get("extra_headers") or {}).items()}
    key = endpoint.get("api_key")
    if key and key != NO_KEY:
        headers.setdefault("Authorization", f"Bearer {key}")
    url = str(base).rstrip("/") + "/models"
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as error:
        return EndpointProblem(role, model, str(base), f"cannot be reached ({type(error).__name__}: {error}); start "
                               "the server, or fix provider_options.api_base")
    if response.status_code in (404, 405):
        return None  # no model list here: the first call will tell
    if response.status_code in (401, 403):
        return EndpointProblem(role, model, str(base), f"refuses the key (HTTP {response.status_code}); check "
                               "provider_options.api_key (none for a server that takes no key)")
    if response.status_code >= 400:
        return EndpointProblem(role, model, str(base), f"answered HTTP {response.status_code} to GET {url}")
    try:
        served = [str(entry.get("id")) for entry in response.json().get("data") or [] if isinstance(entry, dict)]
    except ValueError:
        return None  # not a model list: the first call will tell
    wanted = served_name(model)
    if served and wanted not in served:
        listed = ", ".join(repr(name) for name in served[:10])
        return EndpointProblem(role, model, str(base), f"serves no model named {wanted!r}; it serves {listed}: name "
                               f"one as {role}.model=openai/<name>")
    return None
