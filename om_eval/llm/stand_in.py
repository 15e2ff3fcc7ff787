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


Responder = Callable[[Sequence[Mapping[str, Any]], Mapping[str, Any]], "str | None"]
"""A system's own offline replies: given the plain messages and the request's structured parameters
(``response_format``, ``tools``), the reply text, or ``None`` to leave the call to the stand-in's own script."""
_RESPONDERS: dict[str, Responder] = {}


def register_responder(name: str, responder: Responder) -> None:
    """Consult ``responder`` before the stand-in's own script on every offline call (again under ``name``: replaced).

    A memory system whose library speaks a prompt format the scripted model does not (mem0's extraction) ships one,
    so it runs end to end offline through the library's real code
    (:attr:`~om_eval.memory.system.MemorySystemBase.offline_responder`)."""
    _RESPONDERS[name] = responder


def unregister_responder(name: str) -> None:
    """Stop consulting the responder registered under ``name`` (nothing happens when there is none)."""
    _RESPONDERS.pop(name, None)


def clear_responders() -> None:
    """Consult no system's responder (a run of another system starts)."""
    _RESPONDERS.clear()


def registered_responders() -> tuple[Responder, ...]:
    """The responders a stand-in consults, in the order they were registered."""
    return tuple(_RESPONDERS.values())


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
