"""What an endpoint says a call used, checked before it is counted.

Token counts come from the provider's ``usage`` block and become the run's tokens and dollars, so a server that
reports ``prompt_tokens=-1000000`` would otherwise make spend negative (and offset every later budget check). A
count that is not a whole number, is negative, or is larger than any model's window (:data:`MAX_TOKENS_PER_CALL`)
makes the call an error: its reply is neither used nor cached.

A reply with no usage at all is different: it is not wrong, only silent. litellm then fills in zeros, and a
priced call counted at zero tokens would be counted as free. A paid model that reports no prompt tokens for a
prompt it answered has not reported its usage, so both counts become unknown (``None``) and the call's cost is
unknown, never zero. Free models (scripted, in-process) are counted by om-eval itself and are left as they are.
"""

from __future__ import annotations

from om_eval.llm.pricing import FREE_PROVIDERS

#: More tokens than any model's window holds in one call (the largest windows are a few million): a count above it
#: is a broken or hostile endpoint, not a big prompt.
MAX_TOKENS_PER_CALL = 10_000_000


class UsageError(ValueError):
    """An endpoint reported token counts that cannot be true; the message names the field and the value."""


def checked_count(name: str, value: object) -> int | None:
    """``value`` as a token count reported under ``name`` (``None`` stays unknown).

    Raises:
        UsageError: not a whole number, negative, or above :data:`MAX_TOKENS_PER_CALL`.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"the endpoint reported {name}={value!r}, which is not a whole number of tokens")
    if value < 0:
        raise UsageError(f"the endpoint reported {name}={value}, a negative token count")
    if value > MAX_TOKENS_PER_CALL:
        raise UsageError(f"the endpoint reported {name}={value:,}, more than any model reads or writes in one call "
                         f"({MAX_TOKENS_PER_CALL:,})")
    return value


def reported_usage(model: str, prompt_tokens: object, completion_tokens: object) -> tuple[int | None, int | None]:
    """The prompt and completion tokens of one reply of ``model`` (a litellm id), as they may be counted.

    Returns ``(None, None)`` when a paid model reported no usage (see the module docstring).

    Raises:
        UsageError: a count that is not a whole number, is negative or is absurdly large.
    """
    prompt = checked_count("prompt_tokens", prompt_tokens)
    completion = checked_count("completion_tokens", completion_tokens)
    if model.split("/", 1)[0] not in FREE_PROVIDERS and not prompt:
        return None, None
    return prompt, completion


def usage_problem(model: str, prompt_tokens: object, completion_tokens: object) -> str | None:
    """What is wrong with a stored reply's counts (``None``: nothing), for entries cached before they were checked."""
    try:
        reported_usage(model, prompt_tokens, completion_tokens)
    except UsageError as error:
        return str(error)
    return None
