"""What a model's ``provider_options`` may hold, and where a model's endpoint is named.

``provider_options`` is free-form only below its top-level keys:

- ``google`` and ``openai``: Mastra's provider options (a Gemini thinking budget, an OpenAI reasoning effort),
  translated for litellm and dropped for other providers;
- ``litellm``: parameters passed to litellm unchanged (``num_ctx``, ``repeat_penalty``...);
- ``api_base``, ``api_key`` and ``extra_headers``: the **endpoint** the model is called at, for a self-hosted
  server (vLLM, Ollama, llama.cpp's server, a LiteLLM proxy) or a hosted API behind another address. ``api_key``
  ``"none"`` says the server takes no key;
- ``price``: what the model's calls cost, for a model litellm's price list does not know (a self-hosted one):
  ``{"input_per_million": 0.2, "output_per_million": 0.6}`` in dollars per million tokens (prompt-cache reads and
  writes may be priced apart: ``cached_input_per_million``, ``cache_write_per_million``), or ``"free"``. It is
  never sent, and it changes no identity (a price does not change an answer). It belongs to the role that gives
  it: two roles calling one served model can be priced apart.
- ``request``: how long om-eval waits for one call of this model and how often it retries it:
  ``{"timeout_s": 120, "max_retries": 2}`` (either may be left out; the defaults are 600 s and 5 retries). Like the
  price, it is never sent and changes no identity.

The endpoint is read in one place (:func:`endpoint_options`), by the credential check before a run and by the
request itself, so the two cannot disagree. The same keys under ``litellm`` (the form that was documented first) are
read as the endpoint too; given in both places with different values, they are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from om_eval.common.secrets import REDACTED

ENDPOINT_KEYS = ("api_base", "api_key", "extra_headers")
"""The top-level keys that name a model's endpoint."""
PROVIDER_OPTION_KEYS = ("google", "openai", "litellm", *ENDPOINT_KEYS, "price", "request")
"""Every top-level key ``provider_options`` may hold."""
IN_PROCESS_PREFIXES = ("scripted/", "local/")
"""Models served inside this process: they have no endpoint."""
NO_KEY = "none"
"""``api_key`` of a server that takes no key."""


def endpoint_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The endpoint named in ``options`` (only the keys given), from the top level or, as before, from ``litellm``.

    Raises:
        ValueError: a key given in both places with different values (the message names both paths).
    """
    litellm = options.get("litellm")
    nested: Mapping[str, Any] = litellm if isinstance(litellm, Mapping) else {}
    found: dict[str, Any] = {}
    for key in ENDPOINT_KEYS:
        top, old = options.get(key), nested.get(key)
        if top is not None and old is not None and top != old:
            raise ValueError(f"provider_options.{key} and provider_options.litellm.{key} differ: give it once, as "
                             f"provider_options.{key}")
        value = top if top is not None else old
        if value is not None:
            found[key] = value
    return found


def provider_option_errors(model: str, options: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """What is wrong with ``options`` for ``model``: (path below ``provider_options``, value, why) per problem."""
    problems: list[tuple[str, Any, str]] = []
    for key, value in options.items():
        if key not in PROVIDER_OPTION_KEYS:
            problems.append((str(key), value, f"unknown option; allowed: {', '.join(PROVIDER_OPTION_KEYS)}"))
        elif key in ("google", "openai", "litellm", "extra_headers") and not isinstance(value, Mapping):
            problems.append((key, value, "must be a mapping"))
        elif key in ("api_base", "api_key") and not (isinstance(value, str) and value.strip()):
            shown = value if key == "api_base" else REDACTED
            problems.append((key, shown, "must be non-empty text" + (" ('none' for a server that takes no key)"
                                                                     if key == "api_key" else "")))
    if "price" in options and (why := price_error(options["price"])):
        problems.append(("price", options["price"], why))
    if "request" in options and (why := request_error(options["request"])):
        problems.append(("request", options["request"], why))
    try:
        endpoint = endpoint_options(options)
    except ValueError as error:
        return [*problems, ("litellm", REDACTED, str(error))]
    if endpoint and model.startswith(IN_PROCESS_PREFIXES):
        for key, value in endpoint.items():
            shown = value if key == "api_base" else REDACTED
            problems.append((key, shown, f"unused: {model} runs in this process, at no endpoint; remove it, or "
                                         "name a served model such as openai/<name>"))
    return problems


FREE = "free"
"""``price`` of a model whose calls cost nothing."""


REQUIRED_PRICE_KEYS = frozenset({"input_per_million", "output_per_million"})
OPTIONAL_PRICE_KEYS = frozenset({"cached_input_per_million", "cache_write_per_million"})


def price_error(price: Any) -> str | None:
    """Why ``price`` is not a price (None when it is one)."""
    if price == FREE:
        return None
    if (not isinstance(price, Mapping) or not set(price) >= REQUIRED_PRICE_KEYS
            or not set(price) <= REQUIRED_PRICE_KEYS | OPTIONAL_PRICE_KEYS):
        return ("must be 'free' or {input_per_million: <dollars>, output_per_million: <dollars>}, optionally with "
                "cached_input_per_million and cache_write_per_million (prompt-cache reads and writes; the input "
                "price when left out)")
    for key, value in price.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            return f"{key} must be a number of dollars >= 0"
    return None


REQUEST_KEYS = ("timeout_s", "max_retries")


def request_error(request: Any) -> str | None:
    """Why ``request`` is not a call's limits (None when it is)."""
    if not isinstance(request, Mapping) or not set(request) <= set(REQUEST_KEYS):
        return "must be a mapping of timeout_s (seconds > 0) and/or max_retries (a whole number >= 0)"
    timeout = request.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        return "timeout_s must be a number of seconds > 0"
    retries = request.get("max_retries")
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        return "max_retries must be a whole number >= 0"
    return None
