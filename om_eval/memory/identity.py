"""How a memory build is named: a seam system's memory key, and the hash of the history it is built from.

The key and the history's hash name one memory together (``<key>-<history>``): every answering variant of the same
memory (another actor, another judge) finds it again. OM's key is its own memory hash
(:func:`~om_eval.systems.om.identity.memory_hash`, through the system's ``pinned_identity``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from om_eval.common.files import short_hash
from om_eval.common.recent import by_identity
from om_eval.common.run_identity import LATER_MEMORY_OPTIONS
from om_eval.common.secrets import redact_secrets
from om_eval.data.records import HaystackSession, Question
from om_eval.llm.request import canonical_json


def seam_memory_key(spec: Any, system: Any, counter_name: str) -> str:
    """Identity of a seam system's memory build: its name, options and own identity, the models it calls, the
    token counter. Credentials never enter."""
    roles = spec.role_models()
    models = {role: redact_secrets(asdict(settings)) for role, settings in roles.items()
              if role in ("models.observer", "models.embedding")}
    for settings in models.values():
        for unsent in ("price", "request"):  # what a call costs and how long it is waited for: not what it answers
            settings.get("provider_options", {}).pop(unsent, None)
    later = LATER_MEMORY_OPTIONS.get(system.name, {})
    options = {k: v for k, v in spec.memory_options.items() if k not in later or later[k] != v}
    payload = {"system": system.name, "options": options, "identity": dict(system.identity()),
               "models": models, "tokens": counter_name}
    return short_hash(canonical_json(payload))


def haystack_hash(question: Question) -> str:
    """Identity of a question's haystack: the same question id in another file (oracle vs S) differs here. The
    hash of the canonical JSON list of its sessions, each ``[id, date, [[role, content], ...]]``; a list's JSON is
    its items' joined, so each session's is made once however many questions share it."""
    if question.haystack_id is None:  # the question's own history: made once
        return short_hash(canonical_json([_session_entry(s) for s in question.sessions]), 12)
    return short_hash("[" + ",".join(_session_json(s) for s in question.sessions) + "]", 12)


def _session_entry(session: HaystackSession) -> list[Any]:
    return [session.session_id, session.date_text, [[t.role, t.content] for t in session.turns]]


@by_identity(maxsize=256)
def _session_json(session: HaystackSession) -> str:
    return canonical_json(_session_entry(session))
