"""Memory systems under test, behind one seam.

:class:`MemorySystem` is what every system implements (ingest a history, give the actor its context);
:class:`MemoryServices` is what the harness lends it (the run's models, with every call costed, and its
tokenizer). The built-in systems are the simple observational-memory layer (:mod:`~om_eval.memory.simple`),
Mastra's semantic recall (:mod:`~om_eval.memory.rag_mastra`) and the LongMemEval paper's flat retrieval
(:mod:`~om_eval.memory.rag_lme`); plugins register through the ``om_eval.memory_systems`` entry points
(:mod:`~om_eval.memory.registry`). :mod:`~om_eval.memory.answering` answers and grades a question through a system.
"""

from om_eval.bench.turn_costs import PromptPart
from om_eval.memory.system import INGEST_STAGES, MemoryContext, MemoryServices, MemorySystem

__all__ = ["INGEST_STAGES", "MemoryContext", "MemoryServices", "MemorySystem", "PromptPart"]
