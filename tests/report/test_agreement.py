"""Cohen's kappa: worked values and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.report.agreement import cohen_kappa

pairs = st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(st.lists(st.booleans(), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n,
                                                                                   max_size=n)))


def test_a_worked_example() -> None:
    # 10 answers: both say correct on 4, both wrong on 3, they differ on 3 -> p_o = 0.7;
    # judge A says correct 6 times, B 5 times -> p_e = 0.6*0.5 + 0.4*0.5 = 0.5 -> kappa = 0.4.
    a = [True] * 4 + [False] * 3 + [True, True, False]
    b = [True] * 4 + [False] * 3 + [False, False, True]
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_perfect_disagreement_on_a_balanced_set_is_minus_one() -> None:
    assert cohen_kappa([True, False, True, False], [False, True, False, True]) == pytest.approx(-1.0)


def test_undefined_when_both_judges_give_one_grade_to_everything() -> None:
    assert cohen_kappa([True] * 5, [True] * 5) is None
    assert cohen_kappa([], []) is None


def test_unpaired_labels_are_an_error() -> None:
    with pytest.raises(ValueError, match="paired"):
        cohen_kappa([True], [True, False])


@given(pairs)
def test_kappa_is_symmetric_and_bounded(pair: tuple[list[bool], list[bool]]) -> None:
    a, b = pair
    kappa = cohen_kappa(a, b)
    assert kappa == cohen_kappa(b, a)
    if kappa is not None:
        assert -1.0 - 1e-12 <= kappa <= 1.0 + 1e-12


@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_a_judge_agrees_perfectly_with_itself(labels: list[bool]) -> None:
    kappa = cohen_kappa(labels, labels)
    assert kappa is None if len(set(labels)) == 1 else kappa == pytest.approx(1.0)
