"""Tests for om_eval.om.truncation (reference §1.14 previousObserverTokens truncation)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.truncation import (
    _first_fit,
    _group_candidates,
    _LineCosts,
    is_important_line,
    prepare_previous_observations,
    truncate_to_token_budget,
    truncated_marker,
)

MARKER = re.compile(r"^\[(\d+) observations truncated here\]$")


def chars(text: str) -> int:
    return len(text) // 4


def words(text: str) -> int:
    return len(text.split())


def reconstructs(result: str, original: str) -> bool:
    """True when ``result`` is ``original`` with some stretches of >= 2 lines replaced by exact-count markers
    (kept lines are therefore an in-order subsequence of the input, and every hidden line is accounted for)."""
    source = original.split("\n")
    position = 0
    for line in result.split("\n"):
        marker = MARKER.match(line)
        if marker and int(marker.group(1)) >= 2 and (position >= len(source) or source[position] != line):
            position += int(marker.group(1))
            continue
        if position >= len(source) or source[position] != line:
            return False
        position += 1
    return position == len(source)


# --------------------------------------------------------------------------- examples


def test_important_lines() -> None:
    assert is_important_line("* 🔴 (10:00) User is vegan")
    assert is_important_line("* ✅ (10:05) Deployed")
    assert not is_important_line("* 🟡 (10:06) maybe")


def test_within_budget_is_unchanged() -> None:
    text = "* 🟡 a\n* 🔴 b"
    assert truncate_to_token_budget(text, 100, words) == text
    assert prepare_previous_observations(text, 100, words) == (text, False)


def test_budget_false_none_and_zero() -> None:
    text = "* a\n* b"
    assert prepare_previous_observations(text, False, words) == (text, False)
    assert prepare_previous_observations(text, None, words) == (text, False)
    assert prepare_previous_observations(text, 0, words) == ("", True)
    assert truncate_to_token_budget(text, 0, words) == ""


@pytest.mark.parametrize("budget", [0, 5])
def test_nothing_to_truncate_is_not_truncated(budget: int) -> None:
    # As in 1.10: without prior observations the Observer is not told they were truncated, even at budget 0.
    assert prepare_previous_observations("", budget, words) == ("", False)


@pytest.mark.parametrize("budget", [-1, True])
def test_invalid_budgets(budget: int) -> None:
    with pytest.raises(ValueError):
        truncate_to_token_budget("x", budget, words)
    with pytest.raises(ValueError):
        prepare_previous_observations("x", budget, words)


def test_keeps_tail_and_newest_important_lines() -> None:
    lines = [
        "* 🔴 oldest important fact",  # 0
        "* 🟡 filler one",  # 1
        "* 🟡 filler two",  # 2
        "* 🔴 newer important fact",  # 3
        "* 🟡 filler three",  # 4
        "* 🟡 filler four",  # 5
        "* 🟡 recent one",  # 6
        "* 🟡 recent two",  # 7
    ]
    text = "\n".join(lines)
    # Every line costs 4-5 words; a marker costs 4. Budget 26 fits two important lines + a 2-line tail + markers.
    result = truncate_to_token_budget(text, 26, words)
    assert words(result) <= 26
    assert result.split("\n") == [
        "* 🔴 oldest important fact",
        "[2 observations truncated here]",
        "* 🔴 newer important fact",
        "[2 observations truncated here]",
        "* 🟡 recent one",
        "* 🟡 recent two",
    ]
    assert prepare_previous_observations(text, 26, words) == (result, True)


def test_gap_of_one_line_keeps_the_line() -> None:
    lines = ["f f f f f f", "g g g g g g", "🔴 A", "h", "🔴 B", "t1", "t2"]
    result = truncate_to_token_budget("\n".join(lines), 12, words)
    # The hidden "h" between the two kept important lines is shown itself, not as "[1 observations ...]".
    assert result.split("\n") == ["[2 observations truncated here]", "🔴 A", "h", "🔴 B", "t1", "t2"]


def test_lower_bound_fit_that_fails_the_real_count_falls_to_the_next_candidate() -> None:
    lines = [f"* 🔴 fact{i}" for i in range(10)] + ["* 🟡 last"]
    # Split 9 (tail: fact9, last + newest important fact8) passes the lower bound (11 <= 12) but its marker makes
    # it 15 words; split 10 keeps one important line too and fits. The tail never holds fewer lines than the
    # kept important head lines, so fact8 and fact9 cannot both be kept next to a one-line tail.
    result = truncate_to_token_budget("\n".join(lines), 12, words)
    assert result.split("\n") == ["[9 observations truncated here]", "* 🔴 fact9", "* 🟡 last"]


def test_prefers_more_important_lines_over_a_longer_tail() -> None:
    lines = ["* 🔴 keep me please", *[f"* 🟡 filler {i}" for i in range(6)], "* 🟡 end a", "* 🟡 end b"]
    # "[7 observations truncated here]\nend a\nend b" would also fit, but it keeps no important line.
    result = truncate_to_token_budget("\n".join(lines), 14, words)
    assert result.split("\n") == ["* 🔴 keep me please", "[7 observations truncated here]", "* 🟡 end b"]


def test_nothing_fits_gives_the_fallback_marker() -> None:
    text = "\n".join(["one two three four five six"] * 3)
    assert truncate_to_token_budget(text, 3, words) == truncated_marker(3)
    assert truncate_to_token_budget("a b c d e", 2, words) == "[1 observations truncated here]"


def test_large_input_is_fast_and_calls_the_counter_sparingly() -> None:
    lines = []
    for i in range(1500):
        emoji = "🔴" if i % 7 == 0 else ("✅" if i % 11 == 0 else "🟡")
        lines.append(f"* {emoji} ({i % 24:02d}:{i % 60:02d}) observation {i} " + "detail " * (20 + i % 13))
    text = "\n".join(lines)
    calls: list[int] = []

    def counting(value: str) -> int:
        calls.append(value.count("\n"))
        return chars(value)

    assert chars(text) > 40_000
    started = time.perf_counter()
    result, truncated = prepare_previous_observations(text, 2000, counting)
    elapsed = time.perf_counter() - started
    assert truncated and chars(result) <= 2000
    assert reconstructs(result, text)
    multi_line_calls = [count for count in calls if count > 0]
    assert len(multi_line_calls) <= 1 + 2 * 12  # the full text once, then O(log n) candidates
    assert elapsed < 2.0


# --------------------------------------------------------------------------- properties

_word = st.sampled_from(["a", "bb", "ccc", "dddd", "🔴", "✅", "🟡", "*", "-", "(10:00)", "user", "fact"])
_line = st.lists(_word, max_size=8).map(" ".join)
_observations = st.lists(_line, min_size=1, max_size=40).map("\n".join)
_counter = st.sampled_from([chars, words])


@settings(max_examples=300, deadline=None)
@given(_observations, st.integers(min_value=0, max_value=120), _counter)
def test_result_fits_unless_it_is_the_fallback(text: str, budget: int, count: Callable[[str], int]) -> None:
    result = truncate_to_token_budget(text, budget, count)
    fallback = truncated_marker(len(text.split("\n")))
    assert count(result) <= budget or result == fallback
    if count(fallback) <= budget:
        assert count(result) <= budget


@settings(max_examples=300, deadline=None)
@given(_observations, st.integers(min_value=1, max_value=120), _counter)
def test_kept_lines_are_a_subsequence_with_exact_markers(text: str, budget: int, count: Callable[[str], int]) -> None:
    result = truncate_to_token_budget(text, budget, count)
    if result == truncated_marker(len(text.split("\n"))):
        return
    assert reconstructs(result, text)
    if result != text:
        assert result.split("\n")[-1] == text.split("\n")[-1]  # the raw tail always survives


@given(_observations, _counter)
def test_within_budget_is_returned_unchanged(text: str, count: Callable[[str], int]) -> None:
    budget = count(text) + 1
    assert truncate_to_token_budget(text, budget, count) == text
    assert prepare_previous_observations(text, budget, count) == (text, False)
    if count(text) > 0:
        assert prepare_previous_observations(text, count(text), count) == (text, False)


@given(_observations, st.integers(min_value=1, max_value=60), _counter)
def test_prepare_flags_truncation_exactly_when_over_budget(text: str, budget: int, count: Callable[[str], int]) -> None:
    result, truncated = prepare_previous_observations(text, budget, count)
    assert truncated == (count(text) > budget)
    assert result == (truncate_to_token_budget(text, budget, count) if truncated else text)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=300), st.data())
def test_first_fit_finds_the_boundary_from_any_guess(count: int, data: st.DataObject) -> None:
    boundary = data.draw(st.integers(min_value=0, max_value=count), label="first fitting index (count: none)")
    start = data.draw(st.integers(min_value=-5, max_value=count + 5), label="guess")
    tried: list[int] = []

    def try_at(index: int) -> str | None:
        assert 0 <= index < count
        tried.append(index)
        return f"candidate {index}" if index >= boundary else None

    assert _first_fit(count, try_at, start) == (f"candidate {boundary}" if boundary < count else None)
    distance = abs(min(max(start, 0), max(count - 1, 0)) - boundary) + 1
    assert len(tried) <= 2 * distance.bit_length() + 2  # gallop out, then halve back


@settings(max_examples=400, deadline=None)
@given(_observations, st.integers(min_value=0, max_value=120), _counter)
def test_counting_only_the_lines_a_candidate_can_hold_changes_no_search_answer(
    text: str, budget: int, count: Callable[[str], int]
) -> None:
    lines = text.split("\n")
    costs = [count(line) for line in lines]
    important = [index for index, line in enumerate(lines) if is_important_line(line)]
    full = _LineCosts(lines, [sum(costs[start:]) for start in range(len(lines) + 1)], important,
                      [sum(costs[index] for index in important[:j]) for j in range(len(important) + 1)], 0)
    lazy = _LineCosts.measure(lines, count, budget)
    for start in range(len(lines) + 1):
        assert lazy.feasible_keep(start, budget) == full.feasible_keep(start, budget)
    assert _group_candidates(lazy, budget) == _group_candidates(full, budget)


def test_a_long_memory_has_only_its_newest_lines_counted() -> None:
    lines = [f"* {'🔴' if i % 3 == 0 else '🟡'} line {i} " + "word " * 10 for i in range(1000)]
    counted: list[str] = []

    def counting(line: str) -> int:
        counted.append(line)
        return words(line)

    _LineCosts.measure(lines, counting, 200)
    # 14 words a line: 15 tail lines pass 200, then 15 important lines before them pass it again.
    assert len(counted) == 30
    assert counted[:15] == lines[:-16:-1]


# --------------------------------------------------------------------------- fidelity to Mastra's linear scan


def _mastra_linear_scan(observations: str, budget: int, count: Callable[[str], int]) -> str:
    """A direct, quadratic port of ``truncateObservationsToTokenBudget`` (reference for the fast search)."""
    lines = observations.split("\n")
    n = len(lines)
    costs = [count(line) for line in lines]
    head_important: list[int] = []
    best, best_keep, best_tail = None, -1, -1
    for tail_start in range(1, n):
        if is_important_line(lines[tail_start - 1]):
            head_important.append(tail_start - 1)
        tail = n - tail_start

        def selected(keep: int) -> list[int]:
            return head_important[len(head_important) - keep :] if keep else []

        def estimate(keep: int, tail_start: int = tail_start) -> int:
            return sum(costs[tail_start:]) + sum(costs[i] for i in selected(keep))

        keep = min(len(head_important), tail)
        while keep > 0 and estimate(keep) > budget:
            keep -= 1
        if estimate(keep) > budget or not (keep > best_keep or (keep == best_keep and tail > best_tail)):
            continue
        output: list[str] = []
        previous = -1
        for index in [*selected(keep), *range(tail_start, n)]:
            hidden = index - previous - 1
            output.extend([lines[previous + 1]] if hidden == 1 else [truncated_marker(hidden)] if hidden > 1 else [])
            output.append(lines[index])
            previous = index
        candidate = "\n".join(output)
        if count(candidate) <= budget:
            best, best_keep, best_tail = candidate, keep, tail
    return best if best is not None else truncated_marker(n)


def test_matches_mastra_linear_scan_on_a_seeded_sample() -> None:
    import random

    rng = random.Random(20260214)
    vocab = ["a", "bb", "ccc", "dddd", "🔴", "✅", "🟡", "*", "-", "(10:00)", "user", "fact"]
    agree = total = 0
    for _ in range(1500):
        lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(2, 40))]
        text = "\n".join(lines)
        for count in (chars, words):
            budget = rng.randint(1, max(1, count(text) - 1))
            if count(text) <= budget:
                continue
            ours, theirs = truncate_to_token_budget(text, budget, count), _mastra_linear_scan(text, budget, count)
            total += 1
            agree += ours == theirs
            assert count(ours) <= budget or ours == theirs == truncated_marker(len(lines))
    # Identical unless the real count is not monotone in the tail length (then both results still fit).
    assert agree >= 0.995 * total
