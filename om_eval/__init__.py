"""om-eval: reproduce, sweep and explain Observational Memory scores on LongMemEval, LoCoMo and beyond.

The public API, in one place (each package lists its own in ``__all__``):

* :func:`evaluate` and :class:`Evaluation`: ``om-eval run`` as a function (``om_eval.experiment.api``).
* ``om_eval.om``: the Observational Memory engine, usable on its own.
* ``om_eval.memory``: the memory-system seam (``MemorySystem``, the gold-free views, ``make_system``).
* ``om_eval.simple_om``: the simple observational-memory layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from om_eval.common.version import __version__

__all__ = ["Evaluation", "__version__", "evaluate"]

if TYPE_CHECKING:
    from om_eval.experiment.api import Evaluation, evaluate


def __getattr__(name: str) -> Any:
    # Loaded on first use: ``import om_eval`` (and ``om-eval --help``) stays instant.
    if name in ("evaluate", "Evaluation"):
        from om_eval.experiment import api

        return getattr(api, name)
    raise AttributeError(f"module 'om_eval' has no attribute {name!r}")
