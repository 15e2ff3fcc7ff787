"""Time spent inside the scripted model, so benchmarks can subtract it and report the harness's own overhead."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class ModelTime:
    seconds = 0.0


@contextmanager
def scripted_model_time() -> Iterator[ModelTime]:
    """Within the block, every ``ScriptedModel.reply`` adds its wall time to the yielded ``seconds``."""
    from om_eval.testing.scripted.model import ScriptedModel

    spent = ModelTime()
    original = ScriptedModel.reply

    def timed(self, *a, **kw):
        start = time.perf_counter()
        try:
            return original(self, *a, **kw)
        finally:
            spent.seconds += time.perf_counter() - start

    ScriptedModel.reply = timed  # type: ignore[method-assign]  # timed for the block's duration
    try:
        yield spent
    finally:
        ScriptedModel.reply = original  # type: ignore[method-assign]  # restored on exit
