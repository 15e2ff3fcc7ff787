"""Credentials checked before a run starts, with litellm's own per-provider rules.

Why before: without a key every question fails one by one as "HTTP 500 ... Missing credentials", the run is
left behind empty, and the user learns it only at the end. litellm knows which environment variables each
provider reads (``validate_environment``); asking it up front costs nothing and sends no request.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import Any

from om_eval.llm._litellm import litellm_module

OFFLINE_PREFIXES = ("scripted/", "local/")
"""Models served in this process: they need no credential."""


def missing_credentials(model: str, provider_options: Mapping[str, Any] | None = None) -> list[str]:
    """The environment variables ``model`` needs and lacks (empty when it can be called).

    A model given its own ``api_key`` or ``api_base`` in ``provider_options`` is taken as configured: a custom
    endpoint may need no key, and litellm cannot tell.
    """
    options = provider_options or {}
    if model.startswith(OFFLINE_PREFIXES) or options.get("api_key") or options.get("api_base"):
        return []
    litellm = litellm_module()
    with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list for unknown providers
        try:
            found = litellm.validate_environment(model=model)
        except Exception:  # an id litellm cannot place: the call itself will say what is wrong
            return []
    if found.get("keys_in_environment"):
        return []
    return list(found.get("missing_keys") or [])
