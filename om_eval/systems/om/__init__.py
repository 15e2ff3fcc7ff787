"""``memory=om``: Observational Memory as a system under test (:mod:`~om_eval.systems.om.system`), with what only
OM needs around it: the replay of a history into the engine (:mod:`~om_eval.systems.om.replay`, its pending-token
accounting :mod:`~om_eval.systems.om.accounting`), the actor's view of the memory (:mod:`~om_eval.systems.om.answer`),
the ``recall`` tool of retrieval mode (:mod:`~om_eval.systems.om.recall`), where each evidence turn went
(:mod:`~om_eval.systems.om.trace`) and the memory hash (:mod:`~om_eval.systems.om.identity`)."""

from om_eval.systems.om.system import ObservationalMemorySystem, OMBuild

__all__ = ["OMBuild", "ObservationalMemorySystem"]
