"""The one door to models: a litellm client with a persistent cache, a call ledger and offline providers.

Importing this package does not import litellm; the first call does.
"""

from om_eval.common.secrets import redact_secrets
from om_eval.llm.client import ClientSettings, LLMCallError, LLMClient, build_request
from om_eval.llm.ledger import CallRecord, Ledger, LedgerTotals
from om_eval.llm.request import LLMRequest, cache_key

__all__ = [
    "CallRecord",
    "ClientSettings",
    "LLMCallError",
    "LLMClient",
    "LLMRequest",
    "Ledger",
    "LedgerTotals",
    "build_request",
    "cache_key",
    "redact_secrets",
]
