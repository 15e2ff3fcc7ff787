"""The scripted model: a deterministic, offline stand-in for every model role, for tests and offline runs.

It speaks OM's prompt formats (:mod:`~om_eval.llm.scripted.model`) and plans recall tool calls
(:mod:`~om_eval.llm.scripted.recall`); litellm reaches it as the ``scripted/`` provider
(:mod:`om_eval.llm.providers`).
"""

from om_eval.llm.scripted.model import ScriptedModel, ScriptedModelError

__all__ = ["ScriptedModel", "ScriptedModelError"]
