"""The recalled block (rule 5) and the budget cut, with a property for any observations and budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.simple_om import fit_block, render_block
from om_eval.simple_om.layer import count_o200k
from tests.simple_om.helpers import words


def test_block_format_is_exact() -> None:
    assert render_block(["a", "b"]) == "<observations>\n- a\n- b\n</observations>"
    assert render_block([]) is None


def test_the_oldest_observations_that_do_not_fit_are_left_out() -> None:
    # 2 words for the tags, 2 per line: three lines need 8, two need 6.
    assert fit_block(["o1", "o2", "o3"], 8, words) == "<observations>\n- o1\n- o2\n- o3\n</observations>"
    assert fit_block(["o1", "o2", "o3"], 7, words) == "<observations>\n- o2\n- o3\n</observations>"
    assert fit_block(["o1", "o2", "o3"], 4, words) == "<observations>\n- o3\n</observations>"


def test_nothing_is_injected_when_not_even_the_newest_fits() -> None:
    assert fit_block(["o1", "a long newest observation"], 5, words) is None
    assert fit_block([], 2500, words) is None


observation = st.text(alphabet="abc \n", max_size=12)


@given(st.lists(observation, max_size=12), st.integers(min_value=0, max_value=120))
def test_the_block_is_the_longest_newest_run_within_the_budget(observations: list[str], max_tokens: int) -> None:
    block = fit_block(observations, max_tokens, len)
    kept = 0 if block is None else next(k for k in range(1, len(observations) + 1)
                                        if render_block(observations[-k:]) == block)
    if block is not None:
        assert len(block) <= max_tokens
    if kept < len(observations):
        longer = render_block(observations[-(kept + 1):])
        assert longer is not None and len(longer) > max_tokens


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab cé.\n🍞", max_size=30), max_size=15), st.integers(min_value=0, max_value=80))
def test_with_the_default_tokenizer_the_block_is_the_one_a_linear_scan_finds(observations: list[str],
                                                                             max_tokens: int) -> None:
    # What halving relies on: o200k never counts fewer tokens when an older observation's line is added.
    scanned = None
    for kept in range(1, len(observations) + 1):
        block = render_block(observations[-kept:])
        if count_o200k(block or "") > max_tokens:
            break
        scanned = block
    assert fit_block(observations, max_tokens, count_o200k) == scanned
