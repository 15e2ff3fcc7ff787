"""An embedding reply is usable only with one finite, non-zero vector per input, all of one length."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.llm.vectors import embedding_problem

finite = st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: abs(x) > 1e-9)


@given(st.integers(1, 6).flatmap(lambda width: st.lists(st.lists(finite, min_size=width, max_size=width),
                                                        min_size=1, max_size=5)))
def test_well_formed_vectors_pass(vectors: list[list[float]]) -> None:
    assert embedding_problem(vectors, len(vectors)) is None
    assert embedding_problem(vectors, len(vectors), len(vectors[0])) is None


@pytest.mark.parametrize(("vectors", "inputs", "dimension", "said"), [
    ([[1.0, 2.0]], 2, None, "1 vectors for 2 inputs"),
    ([[1.0, 2.0], [1.0]], 2, None, "2 different lengths (1, 2)"),
    ([[]], 1, None, "empty vectors"),
    ([[1.0, math.nan]], 1, None, "non-finite values"),
    ([[1.0, math.inf]], 1, None, "non-finite values"),
    ([[0.0, 0.0], [1.0, 0.0]], 2, None, "all-zero vectors for 1 of 2"),
    ([[1.0, 2.0]], 1, 3, "2 dimensions where this model gave 3"),
    ([["a", "b"]], 1, None, "not numbers"),
])
def test_each_fault_is_named(vectors: list, inputs: int, dimension: int | None, said: str) -> None:
    problem = embedding_problem(vectors, inputs, dimension)
    assert problem is not None and said in problem, problem


def test_no_inputs_no_vectors() -> None:
    assert embedding_problem([], 0) is None


def test_a_zero_vector_is_allowed_where_the_model_gives_one() -> None:
    assert embedding_problem([[0.0, 0.0]], 1, zero_allowed=True) is None


def test_the_scripted_embedder_embeds_a_text_without_words() -> None:
    import asyncio

    from om_eval.llm.client import LLMClient

    vectors = asyncio.run(LLMClient(cache=None).embed(["hello world", " "], model="scripted/embed"))
    assert len(vectors) == 2
