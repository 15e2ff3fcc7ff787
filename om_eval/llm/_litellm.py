"""The one place that imports litellm.

litellm is slow to import (3-6 s) and, without ``LITELLM_LOCAL_MODEL_COST_MAP``, tries to download its price
list at import time; so nothing in om-eval imports it at module level. Everything that needs it calls
:func:`litellm_module`, which sets the offline price list, silences litellm's feedback banner and registers our
offline providers once.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from types import ModuleType


@lru_cache(maxsize=1)
def litellm_module() -> ModuleType:
    """Import and configure litellm once per process."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # Hydra sets the root logger to INFO; litellm would then log every call.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from om_eval.llm.providers import register_providers

    register_providers(litellm)
    return litellm
