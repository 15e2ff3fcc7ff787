"""Fitting prior observations into the Observer's ``previousObserverTokens`` budget (om-reference §1.14).

Why: from Mastra 1.8.2 on, the Observer no longer sees all prior observations, only a truncated view that
keeps the most recent lines verbatim plus the older *important* lines (🔴 or ✅), with the hidden stretches
replaced by ``[N observations truncated here]``. The benchmark-era runs passed everything (budget ``false``),
so this only matters for the newer-version variants, but then it decides what the Observer can avoid repeating.

The algorithm follows ``truncateObservationsToTokenBudget``: every split point ``t`` gives a candidate made of
the raw tail ``lines[t:]`` plus up to ``len(tail)`` of the newest important lines before ``t``; important
lines are dropped, oldest first, until a lower bound of the kept text fits; the candidate with the most
important lines wins, ties going to the longest tail, provided its real token count fits.

How the work is bounded (observations can be ~1500 lines / 40k tokens):

* ``count_tokens`` runs at most once per line, and only on the lines a candidate can hold (the newest ones
  within the budget, then the newest important ones before them within it again); prefix sums give any tail's or
  any set of newest-important-lines' cost in O(1), so each split point's lower-bound-feasible important count is
  found by binary search: O(n log n) arithmetic in total.
* The real ``count_tokens`` runs only on rendered candidates (each at most about ``budget`` tokens plus
  markers). Candidates are visited best first, grouped by their number of important lines; within a group
  (longest tail first) the first fitting one is found by galloping from an estimate (the lines' own counts
  plus one per line break) then binary search, i.e. O(log distance) real counts per group, and the search
  stops at the first group with a fit. For a fixed number of important lines the lower bound shrinks
  monotonically as the tail shrinks, so this finds the same candidate as
  Mastra's linear scan whenever the real count is monotone too; otherwise it returns another candidate that
  was verified to fit.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Final, Literal

__all__ = [
    "IMPORTANT_MARKERS",
    "TokenCountFn",
    "is_important_line",
    "prepare_previous_observations",
    "truncate_to_token_budget",
    "truncated_marker",
]

TokenCountFn = Callable[[str], int]

#: A line is important when it contains one of these (1.9+; 1.8.2 had only 🔴).
IMPORTANT_MARKERS: Final = ("🔴", "✅")


def truncated_marker(hidden_lines: int) -> str:
    """The placeholder for a stretch of hidden lines.

    Args:
        hidden_lines: How many lines the placeholder stands for.

    Returns:
        ``[<hidden_lines> observations truncated here]``.
    """
    return f"[{hidden_lines} observations truncated here]"


def is_important_line(line: str) -> bool:
    """Tell whether a line survives truncation preferentially (it contains 🔴 or ✅).

    Args:
        line: One observation line.

    Returns:
        True for an important line.
    """
    return _IMPORTANT.search(line) is not None


# One search per line: the truncation marks every line of the observations at each Observer call.
_IMPORTANT = re.compile("|".join(map(re.escape, IMPORTANT_MARKERS)))


@dataclass(frozen=True, slots=True)
class _LineCosts:
    """Per-line token counts, computed once, with the prefix sums the search needs."""

    lines: list[str]
    #: ``tail_cost[t]`` = tokens of ``lines[t:]`` (length n + 1).
    tail_cost: list[int]
    #: Indexes of the important lines, ascending (from :meth:`measure`: those a candidate can keep).
    important: list[int]
    #: ``important_cost[j]`` = tokens of the first j important lines (length len(important) + 1).
    important_cost: list[int]

    #: Split points before this one leave a tail over the budget (every earlier one is infeasible).
    first_fitting_tail: int

    @classmethod
    def measure(cls, lines: list[str], count_tokens: TokenCountFn, budget: int) -> _LineCosts:
        """Count only the lines a candidate can hold: the newest lines until the tail passes ``budget``, then the
        newest important lines before them until those alone pass it. Any candidate reaching further costs more
        than the budget whatever the lines beyond cost (counts are never negative), so they get ``budget + 1``
        each and every search answer is the one full counts would give, while a 40k-token memory has its 2k-token
        budget measured in a tenth of the lines."""
        search = _IMPORTANT.search
        costs = [budget + 1] * len(lines)
        start, tail = len(lines), 0
        while start > 0 and tail <= budget:
            start -= 1
            costs[start] = count_tokens(lines[start])
            tail += costs[start]
        important = [index for index in range(start, len(lines)) if search(lines[index]) is not None]
        # Older important lines, newest first; those older still are left out of ``important`` altogether (any
        # candidate keeping one keeps all of these too, already over the budget), so they are not even searched.
        older: list[int] = []
        index, held = start, 0
        while index > 0 and held <= budget:
            index -= 1
            if search(lines[index]) is not None:
                older.append(index)
                costs[index] = count_tokens(lines[index])
                held += costs[index]
        important[:0] = reversed(older)
        tail_cost = list(accumulate(reversed(costs), initial=0))[::-1]
        important_cost = list(accumulate((costs[index] for index in important), initial=0))
        return cls(lines, tail_cost, important, important_cost, start + 1 if tail > budget else 0)

    def feasible_keep(self, tail_start: int, budget: int) -> int | None:
        """Most newest-important head lines (at most the tail length) whose lower bound fits, or None when
        not even the bare tail fits."""
        tail = self.tail_cost[tail_start]
        if tail > budget:
            return None
        head_important = bisect_left(self.important, tail_start)
        low, high = 0, min(head_important, len(self.lines) - tail_start)
        while low < high:
            mid = (low + high + 1) // 2
            kept_cost = self.important_cost[head_important] - self.important_cost[head_important - mid]
            if tail + kept_cost <= budget:
                low = mid
            else:
                high = mid - 1
        return low

    def render(self, tail_start: int, keep: int) -> str:
        """The candidate text: the ``keep`` newest important lines before ``tail_start``, then the tail, with
        each hidden stretch replaced by a marker (a stretch of one line keeps the line itself)."""
        head_important = bisect_left(self.important, tail_start)
        kept = self.important[head_important - keep : head_important] if keep else []
        output: list[str] = []
        previous = -1
        for index in [*kept, *range(tail_start, len(self.lines))]:
            hidden = index - previous - 1
            if hidden == 1:
                output.append(self.lines[previous + 1])
            elif hidden > 1:
                output.append(truncated_marker(hidden))
            output.append(self.lines[index])
            previous = index
        return "\n".join(output)


def _group_candidates(costs: _LineCosts, budget: int) -> dict[int, list[int]]:
    """Split points whose lower bound fits, grouped by the number of important lines kept (tails ascending)."""
    groups: dict[int, list[int]] = {}
    for tail_start in range(max(1, costs.first_fitting_tail), len(costs.lines)):
        keep = costs.feasible_keep(tail_start, budget)
        if keep is not None:
            groups.setdefault(keep, []).append(tail_start)
    return groups


def _first_fit(count: int, try_at: Callable[[int], str | None], start: int = 0) -> str | None:
    """Earliest index in ``range(count)`` whose candidate fits (assuming fits form a suffix). From ``start`` (a
    guess), gallop towards the boundary (steps 1, 2, 4, …) until a miss and a fit bracket it, then binary-search
    the gap: O(log distance) calls, a handful when the guess is close."""
    if count == 0:
        return None
    probe = min(max(start, 0), count - 1)
    found = try_at(probe)
    step = 1
    if found is None:  # the boundary is after the guess
        last_miss = probe
        while found is None:
            if probe == count - 1:
                return None
            last_miss, probe, step = probe, min(count - 1, probe + step), step * 2
            found = try_at(probe)
    else:  # the guess fits: look back for a miss
        last_miss = -1
        while probe > 0:
            back = max(0, probe - step)
            candidate = try_at(back)
            if candidate is None:
                last_miss = back
                break
            found, probe, step = candidate, back, step * 2
    low, high = last_miss + 1, probe - 1
    while low <= high:
        mid = (low + high) // 2
        candidate = try_at(mid)
        if candidate is None:
            low = mid + 1
        else:
            found, high = candidate, mid - 1
    return found


def _likely_first_fit(costs: _LineCosts, tail_starts: Sequence[int], keep: int, budget: int) -> int:
    """Where the first fit probably is: the first candidate whose lines' own counts plus a token per line break
    fit. Real counts differ by a few tokens (markers, whitespace merged across breaks), so this only saves the
    search most of its real counts; the search itself decides."""
    for position, tail_start in enumerate(tail_starts):
        head_important = bisect_left(costs.important, tail_start)
        kept = costs.important_cost[head_important] - costs.important_cost[head_important - keep]
        if costs.tail_cost[tail_start] + kept + len(costs.lines) - tail_start + keep <= budget:
            return position
    return len(tail_starts) - 1


def _truncate(observations: str, budget: int, count_tokens: TokenCountFn) -> str:
    """The search itself, for text known to exceed a positive budget."""
    lines = observations.split("\n")
    costs = _LineCosts.measure(lines, count_tokens, budget)
    groups = _group_candidates(costs, budget)
    for keep in sorted(groups, reverse=True):
        tail_starts = groups[keep]

        def try_at(position: int, keep: int = keep, tail_starts: Sequence[int] = tail_starts) -> str | None:
            candidate = costs.render(tail_starts[position], keep)
            return candidate if count_tokens(candidate) <= budget else None

        best = _first_fit(len(tail_starts), try_at, _likely_first_fit(costs, tail_starts, keep, budget))
        if best is not None:
            return best
    return truncated_marker(len(lines))


def _check_budget(budget: int) -> None:
    if isinstance(budget, bool) or budget < 0:
        raise ValueError(f"token budget must be a non-negative int, got {budget!r}")


def truncate_to_token_budget(observations: str, budget: int, count_tokens: TokenCountFn) -> str:
    """Shrink observations to ``budget`` tokens, keeping the recent tail and the older important lines.

    Args:
        observations: The observation text (lines separated by ``\\n``).
        budget: Token budget, >= 0. 0 gives "".
        count_tokens: The token counter (the same one that measures the budget).

    Returns:
        The text unchanged when it fits; otherwise the best candidate that fits (see the module docstring),
        or ``[<n> observations truncated here]`` when none does (that marker itself may exceed a tiny budget).

    Raises:
        ValueError: If the budget is negative or a bool.
    """
    _check_budget(budget)
    if budget == 0:
        return ""
    if count_tokens(observations) <= budget:
        return observations
    return _truncate(observations, budget, count_tokens)


def prepare_previous_observations(
    observations: str,
    budget: int | Literal[False] | None,
    count_tokens: TokenCountFn,
    *,
    exceeds: Callable[[str, int], bool] | None = None,
) -> tuple[str, bool]:
    """Apply ``previousObserverTokens`` to the prior observations shown to the Observer (§1.14 steps 1, 3, 4).

    Step 2 (splicing a buffered reflection over the reflected prefix) is the caller's job and happens before.

    Args:
        observations: The prior observations.
        budget: ``False``/None: no limit (benchmark era); 0: omit them; otherwise the token budget. With no
            prior observations nothing is truncated, whatever the budget.
        count_tokens: The token counter.
        exceeds: The same counter's "more than this many tokens" test, when it can answer without counting the
            whole text (:func:`om_eval.om.tokens.over_limit`); by default a whole count.

    Returns:
        ``(text, was_truncated)``; ``was_truncated`` adds the truncation notice to the Observer prompt.

    Raises:
        ValueError: If the budget is negative or ``True``.
    """
    if budget is None or budget is False:
        return observations, False
    _check_budget(budget)
    if not observations:
        return observations, False
    if budget == 0:
        return "", True
    if not (exceeds(observations, budget) if exceeds is not None else count_tokens(observations) > budget):
        return observations, False
    return _truncate(observations, budget, count_tokens), True
