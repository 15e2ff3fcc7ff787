"""The one place that imports litellm.

litellm is slow to import (3-6 s) and, without ``LITELLM_LOCAL_MODEL_COST_MAP``, tries to download its price
list at import time; so nothing in om-eval imports it at module level. Everything that needs it calls
:func:`litellm_module`, which sets the offline price list and silences litellm's feedback banner once. It imports
nothing of om-eval: a call goes through :func:`om_eval.llm.providers.litellm_with_providers`, which also registers
the offline providers (whose local one is built on this module).
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
    return litellm
