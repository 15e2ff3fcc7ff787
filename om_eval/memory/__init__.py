"""The memory seam: how every memory system under test reaches the harness, and nothing more.

:class:`MemorySystem` is what every system implements (ingest a history, give the actor its context), and
:class:`MemorySystemBase` declares its optional hooks; :class:`MemoryServices` is what the harness lends it (the
run's models, with every call costed, and its tokenizer). A system is shown :class:`HistoryView` and
:class:`QuestionView`, never the gold: the harness answers, grades and scores retrieval itself.

Systems are found by name (:mod:`~om_eval.memory.registry`): the built-in ones live in :mod:`om_eval.systems`,
plugins register through the ``om_eval.memory_systems`` entry points. This package imports nothing above the data
and model layers.
"""

from om_eval.memory.parts import PromptPart
from om_eval.memory.system import (
    ANSWER_STAGES,
    INGEST_STAGES,
    QUERY_STAGE,
    TURN_SPACING,
    ActorTools,
    Forecast,
    MemoryBuildError,
    MemoryContext,
    MemoryServices,
    MemorySystem,
    MemorySystemBase,
    PinnedIdentity,
    Stage,
    TurnTrace,
)
from om_eval.memory.view import HistoryView, QuestionView, SessionView, TurnView

__all__ = [
    "ANSWER_STAGES",
    "INGEST_STAGES",
    "QUERY_STAGE",
    "TURN_SPACING",
    "ActorTools",
    "Forecast",
    "HistoryView",
    "MemoryBuildError",
    "MemoryContext",
    "MemoryServices",
    "MemorySystem",
    "MemorySystemBase",
    "PinnedIdentity",
    "PromptPart",
    "QuestionView",
    "SessionView",
    "Stage",
    "TurnTrace",
    "TurnView",
]
