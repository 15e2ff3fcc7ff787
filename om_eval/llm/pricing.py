"""Dollar cost of a call from litellm's local price list; unknown prices are ``None``, never 0."""

from __future__ import annotations

#: Providers that run on this machine and cost nothing.
FREE_PROVIDERS = ("scripted", "local")


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
    return float(prompt_cost) + float(completion_cost)
