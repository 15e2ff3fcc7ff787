"""The built-in memory systems answered through the seam (:mod:`om_eval.memory`): the simple observational-memory
layer (:mod:`~om_eval.systems.simple`), Mastra's semantic recall (:mod:`~om_eval.systems.rag_mastra`) and the
LongMemEval paper's flat retrieval (:mod:`~om_eval.systems.rag_lme`). Each is found by name through
:mod:`om_eval.memory.registry`, as a plugin is."""
