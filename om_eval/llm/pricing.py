"""Dollar cost of a call from litellm's local price list; unknown prices are ``None``, never 0."""

from __future__ import annotations

from typing import Any

#: Providers that run on this machine and cost nothing.
FREE_PROVIDERS = ("scripted", "local")


#: The prices registered with litellm in this process, by litellm model id.
_REGISTERED: dict[str, tuple[float, float]] = {}


def register_price(model: str, price: Any) -> None:
    """Tell litellm's price list what ``model`` costs (a ``provider_options.price``: per million tokens, or
    ``"free"``), so the ledger, the forecast and budgets price its calls instead of calling them unknown."""
    from om_eval.llm._litellm import litellm_module
    from om_eval.llm.request import litellm_model_id
    from om_eval.om.provider_options import FREE

    rates = {"input_per_million": 0.0, "output_per_million": 0.0} if price == FREE else price
    model_id = litellm_model_id(model)
    known = (float(rates["input_per_million"]), float(rates["output_per_million"]))
    if _REGISTERED.get(model_id) == known:
        return  # litellm keeps every registration to replay it: once per price, not once per call
    _REGISTERED[model_id] = known
    provider = model_id.partition("/")[0] if "/" in model_id else "openai"
    litellm_module().register_model({model_id: {
        "input_cost_per_token": float(rates["input_per_million"]) / 1e6,
        "output_cost_per_token": float(rates["output_per_million"]) / 1e6,
        "litellm_provider": provider, "mode": "chat",
    }})


def call_cost(model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """Dollars for one call, or ``None`` when the model's price (or the token usage) is unknown."""
    if model.split("/", 1)[0] in FREE_PROVIDERS:
        return 0.0
    if prompt_tokens is None or completion_tokens is None:
        return None
    from om_eval.llm._litellm import litellm_module

    litellm = litellm_module()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises a plain Exception for models missing from its price map
        return None
    cost = float(prompt_cost) + float(completion_cost)
    if cost == 0 and prompt_tokens + completion_tokens > 0 and model not in _REGISTERED:
        # Some entries of the price map are placeholders with zero prices (gemini-3-pro-preview in litellm
        # 1.106): a hosted model is not free because its price is missing. A price set as "free" is registered.
        return None
    return cost
