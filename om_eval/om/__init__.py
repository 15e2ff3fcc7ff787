"""Observational Memory: an Observer and a Reflector that keep a dated, prioritised memory of conversations.

A library in its own right; it knows nothing about benchmarks.
"""

from om_eval.om.actor_view import ActorContext
from om_eval.om.config import ConfigError, ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel, CheckedChatModel, ModelReply, ReplyCheck, complete_checked
from om_eval.om.outcomes import ObservationOutcome, OMEvent, ReflectionOutcome
from om_eval.om.records import Message, OMRecord, ThreadState

__all__ = [
    "ActorContext",
    "ChatModel",
    "CheckedChatModel",
    "ConfigError",
    "Message",
    "ModelReply",
    "ModelSettings",
    "OMConfig",
    "OMEvent",
    "OMRecord",
    "ObservationConfig",
    "ObservationOutcome",
    "ObservationalMemory",
    "ReflectionConfig",
    "ReflectionOutcome",
    "ReplyCheck",
    "ThreadState",
    "complete_checked",
]
