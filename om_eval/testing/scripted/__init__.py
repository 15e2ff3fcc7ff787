"""The scripted model: a deterministic, offline stand-in for every model role, for tests and offline runs.

It speaks OM's prompt formats (:mod:`~om_eval.testing.scripted.model`) and plans recall tool calls
(:mod:`~om_eval.testing.scripted.recall`); litellm reaches it as the ``scripted/`` provider
(:mod:`om_eval.llm.providers`), which finds it through the ``om_eval.stand_in_models`` entry point
(:mod:`om_eval.llm.stand_in`).
"""

from om_eval.testing.scripted.model import ScriptedModel, ScriptedModelError

__all__ = ["ScriptedModel", "ScriptedModelError"]
