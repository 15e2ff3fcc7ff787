"""A second, much smaller observational memory: the layer of ``@noetic-tools/core`` (docs/memory-systems.md).

Text accumulates in a token-counted buffer; at a threshold an observer turns it into short observations, kept in
a capped list and shown to the model as an ``<observations>`` block. :mod:`~om_eval.simple_om.layer` holds the
memory, :mod:`~om_eval.simple_om.items` what text an item buffers, :mod:`~om_eval.simple_om.block` the recalled
block and its budget, :mod:`~om_eval.simple_om.config` the validated settings,
:mod:`~om_eval.simple_om.llm_observer` an observer backed by a chat model.
"""

from om_eval.simple_om.block import fit_block, render_block
from om_eval.simple_om.config import SimpleOMConfig
from om_eval.simple_om.items import PART_JOINER
from om_eval.simple_om.layer import (
    Observer,
    SimpleObservationalMemory,
    SimpleOMState,
    SimpleOMTimeout,
    count_o200k,
    fallback_observer,
)

__all__ = ["PART_JOINER", "Observer", "SimpleOMConfig", "SimpleOMState", "SimpleOMTimeout",
           "SimpleObservationalMemory", "count_o200k", "fallback_observer", "fit_block", "render_block"]
