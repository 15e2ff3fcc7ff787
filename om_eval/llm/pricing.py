"""Dollar cost of a call: a price the run gives the model, else litellm's local price list; unknown is ``None``,
never 0.

Prompt-cache reads and writes are priced as the provider bills them: litellm's ``cost_per_token`` reads them from
a ``Usage`` object (OpenAI's and Gemini's ``prompt_tokens_details.cached_tokens``, Anthropic's
``cache_read_input_tokens`` and ``cache_creation_input_tokens``), where they are part of ``prompt_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Providers that run on this machine and cost nothing.
FREE_PROVIDERS = ("scripted", "local")


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens, given in a model's ``provider_options.price`` (a self-hosted endpoint's, or a
    hosted model's when litellm's list is wrong). It belongs to the role's settings, not to the model id: two
    roles calling one served model can be priced apart. Cache reads and writes cost the input rate unless given.
    """

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    cache_write_per_million: float | None = None

    @classmethod
    def from_option(cls, option: Any) -> Price:
        """The price ``provider_options.price`` states (already validated): a mapping, or ``"free"``."""
        from om_eval.om.provider_options import FREE

        if option == FREE:
            return cls(0.0, 0.0)
        assert isinstance(option, Mapping)
        return cls(**{key: float(value) for key, value in option.items()})

    def cost(self, prompt_tokens: int, completion_tokens: int, cached: int, written: int) -> float:
        fresh = prompt_tokens - cached - written
        read_rate = self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million
        write_rate = self.input_per_million if self.cache_write_per_million is None else self.cache_write_per_million
        return (fresh * self.input_per_million + cached * read_rate + written * write_rate
                + completion_tokens * self.output_per_million) / 1e6


def price_of(options: Mapping[str, Any]) -> Price | None:
    """The price a model's ``provider_options`` give it, or ``None`` (litellm's list prices it)."""
    return Price.from_option(options["price"]) if "price" in options else None


def call_cost(model: str, prompt_tokens: int | None, completion_tokens: int | None, *,
              cached_prompt_tokens: int | None = None, cache_write_tokens: int | None = None,
              price: Price | None = None) -> float | None:
    """Dollars for one call, or ``None`` when the model's price (or the token usage) is unknown.

    ``cached_prompt_tokens`` and ``cache_write_tokens`` are the parts of ``prompt_tokens`` the provider read from
    and wrote to its prompt cache; ``None`` counts as none (a provider that does not say bills them all fresh).
    """
    if model.split("/", 1)[0] in FREE_PROVIDERS or price == Price(0.0, 0.0):
        return 0.0  # free whatever it used: even a reply that reported no usage
    if prompt_tokens is None or completion_tokens is None:
        return None
    cached, written = cached_prompt_tokens or 0, cache_write_tokens or 0
    if price is not None:
        return price.cost(prompt_tokens, completion_tokens, cached, written)
    from om_eval.llm._litellm import litellm_module

    litellm = litellm_module()
    from litellm.types.utils import PromptTokensDetailsWrapper, Usage

    usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  total_tokens=prompt_tokens + completion_tokens,
                  prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=cached or None,
                                                                   cache_creation_tokens=written or None),
                  cache_creation_input_tokens=written or None)
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, usage_object=usage)
    except Exception:  # litellm raises a plain Exception for models missing from its price map
        return None
    cost = float(prompt_cost) + float(completion_cost)
    if cost == 0 and prompt_tokens + completion_tokens > 0:
        # Some entries of the price map are placeholders with zero prices (gemini-3-pro-preview in litellm
        # 1.106), and litellm prices some unknown ids at 0: a hosted model is not free because its price is
        # missing. A model that is free says so with ``price: free``.
        return None
    return cost
