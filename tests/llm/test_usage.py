"""Token counts an endpoint reports: whole, non-negative, bounded; a paid reply without them is of unknown cost."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.llm.usage import MAX_TOKENS_PER_CALL, UsageError, reported_usage, usage_problem


@given(st.integers(1, MAX_TOKENS_PER_CALL), st.integers(0, MAX_TOKENS_PER_CALL))
def test_plausible_counts_are_kept(prompt: int, completion: int) -> None:
    assert reported_usage("openai/gpt-4o", prompt, completion) == (prompt, completion)


@pytest.mark.parametrize(("prompt", "completion", "said"), [
    (-1, 5, "negative"), (5, -1, "negative"), (MAX_TOKENS_PER_CALL + 1, 0, "more than any model"),
    (12.5, 3, "not a whole number"), ("12", 3, "not a whole number"), (True, 3, "not a whole number")])
def test_impossible_counts_are_refused_naming_the_field(prompt: object, completion: object, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        reported_usage("openai/gpt-4o", prompt, completion)
    assert usage_problem("openai/gpt-4o", prompt, completion) is not None


def test_a_paid_reply_without_prompt_tokens_is_unknown_and_a_free_one_is_as_counted() -> None:
    assert reported_usage("openai/gpt-4o", 0, 0) == (None, None)
    assert reported_usage("openai/gpt-4o", None, 7) == (None, None)
    assert reported_usage("scripted/om-eval", 0, 0) == (0, 0)
    assert usage_problem("openai/gpt-4o", 0, 0) is None


def test_a_free_price_is_free_even_without_usage() -> None:
    from om_eval.llm.pricing import Price, call_cost

    assert call_cost("openai/served", None, None, price=Price(0.0, 0.0)) == 0.0
    assert call_cost("openai/served", None, None, price=Price(0.2, 0.6)) is None
