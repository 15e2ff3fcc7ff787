"""Credentials checked before a run starts, with litellm's own per-provider rules.

Why before: without a key every question fails one by one as "HTTP 500 ... Missing credentials", the run is
left behind empty, and the user learns it only at the end. litellm knows which environment variables each
provider reads (``validate_environment``); asking it up front costs nothing and sends no request. It is asked about
the id the call will really use (``google/...`` is called as ``gemini/...``), with the endpoint the request will
carry (:func:`~om_eval.om.provider_options.endpoint_options`).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

from om_eval.llm._litellm import litellm_module
from om_eval.om.provider_options import IN_PROCESS_PREFIXES, endpoint_options

#: Variables litellm lists together where any one of them will do (the first is the one to suggest).
ALTERNATIVES = (("GEMINI_API_KEY", "GOOGLE_API_KEY"),)


def missing_credentials(model: str, provider_options: Mapping[str, Any] | None = None) -> list[str]:
    """The environment variables ``model`` needs and lacks (empty when it can be called).

    A model given its own ``api_key`` (``"none"`` for a server that takes none) needs no variable; an ``api_base``
    alone does not say the server takes no key, so the provider's variable is still asked for.
    """
    from om_eval.llm.request import litellm_model_id

    options = provider_options or {}
    try:
        endpoint = endpoint_options(options)
    except ValueError:
        endpoint = {}  # refused with its own message when the settings are validated
    if model.startswith(IN_PROCESS_PREFIXES) or endpoint.get("api_key"):  # in-process models need no credential
        return []
    litellm = litellm_module()
    with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list for unknown providers
        try:
            found = litellm.validate_environment(model=litellm_model_id(model))
        except Exception:  # an id litellm cannot place: the call itself will say what is wrong
            return []
    if found.get("keys_in_environment"):
        return []
    return list(found.get("missing_keys") or [])


def describe_missing(names: Sequence[str]) -> str:
    """``GEMINI_API_KEY (or GOOGLE_API_KEY)``, ``VERTEXAI_PROJECT and VERTEXAI_LOCATION``: what to set."""
    rest = list(names)
    parts = []
    for group in ALTERNATIVES:
        if set(group) <= set(rest):
            parts.append(f"{group[0]} (or {', '.join(group[1:])})")
            rest = [name for name in rest if name not in group]
    return " and ".join([*parts, *rest])


def credentials_message(missing: Mapping[str, tuple[str, Sequence[str]]]) -> str:
    """One message for every role that lacks credentials: ``missing`` is role -> (model, variables)."""
    by_need: dict[str, list[str]] = {}
    for role, (model, names) in sorted(missing.items()):
        by_need.setdefault(describe_missing(names), []).append(f"{role}={model}")
    lines = [f"set {need} for {', '.join(roles)}" for need, roles in by_need.items()]
    return ("missing credentials: " + "; ".join(lines)
            + ". A self-hosted server is named with +<role>.provider_options.api_base=URL and "
            "+<role>.provider_options.api_key=KEY (none for a server that takes no key); nothing was run")
