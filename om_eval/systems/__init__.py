"""The built-in memory systems answered through the seam (:mod:`om_eval.memory`): Observational Memory
(:mod:`~om_eval.systems.om`, the default), LongMemEval's readers (:mod:`~om_eval.systems.readers`: full context and
oracle), the simple observational-memory layer (:mod:`~om_eval.systems.simple`), Mastra's semantic recall
(:mod:`~om_eval.systems.rag_mastra`), the LongMemEval paper's flat retrieval (:mod:`~om_eval.systems.rag_lme`), and
the libraries mem0 (:mod:`~om_eval.systems.mem0`) and Graphiti (:mod:`~om_eval.systems.graphiti`). Each is found by
name through :mod:`om_eval.memory.registry`, as a plugin is."""
