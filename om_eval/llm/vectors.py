"""An embedding reply, checked before it is ranked with or cached.

A broken embedder fails quietly: NaN or all-zero vectors make every similarity equal, so a ranking comes back in
document order, which on a benchmark whose evidence comes early can score *better* than a working model. Mixed
dimensions or a missing vector end in a numpy error far from the cause. So every reply must hold one vector per
input, all of the same length (the length its model gave before, when it gave one), with finite values and a
norm above zero. A reply that fails is an error naming the model; it is never cached, and a stored one that fails
is dropped and asked for again.
"""

from __future__ import annotations

from collections.abc import Sequence


class EmbeddingReplyError(ValueError):
    """An embedding reply that cannot be used; the message names the model and what is wrong."""


def embedding_problem(vectors: Sequence[Sequence[float]], inputs: int, dimension: int | None = None, *,
                      zero_allowed: bool = False) -> str | None:
    """What is wrong with ``vectors`` as the embeddings of ``inputs`` texts (``None``: nothing).

    ``dimension``: the length this model's vectors had before (``None``: not known yet). ``zero_allowed``: an
    all-zero vector is a real answer of this model (the scripted stand-in's, for a text with no words).
    """
    if len(vectors) != inputs:
        return f"{len(vectors)} vectors for {inputs} inputs"
    if not inputs:
        return None
    lengths = {len(vector) for vector in vectors}
    if len(lengths) > 1:
        return f"vectors of {len(lengths)} different lengths ({', '.join(map(str, sorted(lengths)))})"
    (length,) = lengths
    if length == 0:
        return "empty vectors"
    if dimension is not None and length != dimension:
        return f"vectors of {length} dimensions where this model gave {dimension} before"
    import numpy as np  # here: importing the model layer must stay cheap (numpy only where vectors arrive)

    try:
        matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        return "values that are not numbers"
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        return f"non-finite values (NaN or infinity) in {int((~finite).sum())} of {inputs} vectors"
    zero = ~np.any(matrix, axis=1)
    if zero.any() and not zero_allowed:
        return f"all-zero vectors for {int(zero.sum())} of {inputs} inputs"
    return None
