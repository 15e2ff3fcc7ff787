"""What an offline stand-in model gives the ``scripted/`` provider, and where the provider finds one.

The provider (:mod:`om_eval.llm.providers`) knows only this shape: a model that replies to chat messages with a
:class:`~om_eval.om.model.ModelReply`, may wait a fixed latency, and raises :class:`StandInError` with an HTTP
status to act as a failing provider. The deterministic scripted model that speaks OM's and the simple layer's
prompt formats lives above the systems it imitates (:mod:`om_eval.testing.scripted`) and declares itself in the
``om_eval.stand_in_models`` entry-point group, so this layer imports none of their prompt parsers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from om_eval.om.model import ChatMessage, ModelReply

ENTRY_POINT_GROUP = "om_eval.stand_in_models"
#: The entry point that makes the default instance (``scripted/om-eval``).
DEFAULT_FAMILY = "scripted"


class StandInError(RuntimeError):
    """A stand-in's simulated provider failure, with the HTTP status a real provider would answer."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class StandInModel(Protocol):
    """A model the ``scripted/`` provider can answer with."""

    name: str
    latency: float
    """Seconds each call waits before answering (tests and demos that need a run to take time)."""

    def reply(self, messages: Sequence[ChatMessage], *, model: str | None = None,
              tools: Sequence[Mapping[str, Any]] | None = None) -> ModelReply:
        """The reply to ``messages`` (raises :class:`StandInError` to simulate a provider's failure)."""
        ...


def default_factory(family: str = DEFAULT_FAMILY) -> Callable[..., StandInModel]:
    """The factory installed under ``family`` in the entry-point group (``ScriptedModel`` for ``scripted``).

    Raises:
        LookupError: no installed package declares it (om-eval installed without its metadata).
    """
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == family:
            factory: Callable[..., StandInModel] = point.load()
            return factory
    raise LookupError(f"no offline model {family!r} is installed in the {ENTRY_POINT_GROUP!r} entry-point group: "
                      "install om-eval with pip (pip install -e . in a checkout) so its metadata declares it")


def content_text(content: Any) -> str:
    """A message's text: a string as it is, a list of parts as their texts, one per line (a Mastra history message,
    ``prompt=mastra_exact``, sends one part per message)."""
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or "") for part in content if isinstance(part, Mapping))
    return str(content or "")
